"""Lightning on accinte: ``Trainer(accelerator="accinte")`` with nothing
imported from torch_accinte (the accelerator registers itself when Lightning
is imported): fit, validate, predict, and bf16-mixed autocasting accinte."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from .twins import run_both

L = pytest.importorskip("lightning")
LIB = "lightning"


class _Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        self.seen = set()

    def training_step(self, batch, _):
        x, y = batch
        out = self.net(x)
        # Where the step ran and which dtype autocast gave the Linear.
        self.seen.add((x.device.type, next(self.parameters()).device.type, out.dtype))
        return nn.functional.cross_entropy(out.float(), y)

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x).float(), y))

    def predict_step(self, batch, _):
        return self.net(batch[0]).float()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _loader():
    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8, generator=g),
                                          torch.randint(0, 2, (64,), generator=g))
    return torch.utils.data.DataLoader(data, batch_size=16)


def _fit(precision):
    def fn(device):
        accelerator = "cpu" if device == "cpu" else "accinte"
        model = _Classifier()
        trainer = L.Trainer(accelerator=accelerator, devices=1, precision=precision, max_epochs=2,
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False)
        trainer.fit(model, _loader(), _loader())
        expected = torch.bfloat16 if precision == "bf16-mixed" else torch.float32
        assert model.seen == {(device, device, expected)}, model.seen
        val = trainer.validate(model, _loader(), verbose=False)[0]["val_loss"]
        pred = torch.cat(trainer.predict(model, _loader()))
        return {"val_loss": torch.tensor(val), "pred": pred,
                "params": {n: p.detach() for n, p in model.named_parameters()}}
    return fn


def test_accelerator_is_registered_by_name():
    from lightning.pytorch.accelerators import AcceleratorRegistry

    assert "accinte" in AcceleratorRegistry
    trainer = L.Trainer(accelerator="accinte", devices=1, logger=False)
    assert trainer.accelerator.name() == "accinte"
    assert trainer.num_devices == 1


def test_fit_validate_predict_float32():
    run_both(LIB, "fit/validate/predict", _fit("32-true"))


def test_fit_bf16_mixed():
    # Autocast op lists differ between accinte (CUDA's) and the CPU.
    run_both(LIB, "bf16-mixed", _fit("bf16-mixed"), rtol=1e-2, atol=1e-2)


def test_unavailable_devices_are_refused():
    with pytest.raises(Exception, match="accinte devices"):
        L.Trainer(accelerator="accinte", devices=[0, 99], logger=False)


DDP_SCRIPT = '''
import sys, torch, lightning as L
from torch import nn

class M(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    def training_step(self, batch, _):
        x, y = batch
        assert x.device == torch.device("accinte", self.global_rank), x.device
        assert isinstance(self.net[1], nn.SyncBatchNorm), self.net[1]  # reverted after fit
        return nn.functional.cross_entropy(self.net(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)

g = torch.Generator().manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(64, 8, generator=g), torch.randint(0, 2, (64,), generator=g))
model = M()
trainer = L.Trainer(accelerator="accinte", devices=2, max_epochs=2, logger=False, sync_batchnorm=True,
                    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=8))
assert type(trainer.strategy).__name__ == "DDPStrategy", trainer.strategy
torch.save({n: p.detach().cpu() for n, p in model.state_dict().items()}, sys.argv[1] + f".rank{trainer.global_rank}")
print("backend", trainer.strategy._get_process_group_backend())
'''


@pytest.mark.skipif("accinte" not in torch.distributed.Backend.default_device_backend_map,
                    reason="needs a collective backend for accinte (issue #13: ProcessGroupACCL); "
                           "Lightning would choose gloo, which refuses accinte tensors")
def test_ddp_on_two_devices(tmp_path):
    """devices=2: Lightning's own DDP strategy, one process per accinte device
    (Lightning re-runs the script for rank 1), gradients all-reduced by the
    accinte collective backend, batch norm synchronised (sync_batchnorm=True:
    nn.SyncBatchNorm's CUDA-only operators, Note [accinte SyncBatchNorm]):
    both ranks end with the same weights and running statistics, those of the
    same training in one process on the CPU on the ranks' batches together."""
    import os
    import subprocess
    import sys

    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    # Loopback only (Gloo under accl would otherwise use the host name's address).
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "weights")],
                         capture_output=True, text=True, timeout=240, cwd=tmp_path,
                         env={**os.environ, "GLOO_SOCKET_IFNAME": "lo"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "backend accl" in out.stdout, out.stdout[-2000:]
    rank0 = torch.load(tmp_path / "weights.rank0")
    rank1 = torch.load(tmp_path / "weights.rank1")
    for name in rank0:
        torch.testing.assert_close(rank0[name], rank1[name], rtol=0, atol=0)
    # The same training in one process on the CPU. Lightning gives each rank a
    # DistributedSampler that shuffles training data (seed 0, set_epoch each
    # epoch): the ranks' k-th batches of 8 together are one batch of 16 here.
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8, generator=g),
                                          torch.randint(0, 2, (64,), generator=g))
    x, y = data.tensors
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    for epoch in range(2):
        shares = []
        for rank in range(2):
            sampler = torch.utils.data.DistributedSampler(data, num_replicas=2, rank=rank, seed=0)
            sampler.set_epoch(epoch)
            shares.append(list(sampler))
        for i in range(0, 32, 8):
            batch = shares[0][i:i + 8] + shares[1][i:i + 8]
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x[batch]), y[batch]).backward()
            optimizer.step()
    for name, p in net.state_dict().items():
        torch.testing.assert_close(rank0[f"net.{name}"], p.detach(), rtol=0, atol=1e-5)
