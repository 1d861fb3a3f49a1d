"""Rank code for test_training.py: what a user's training script holds,
unchanged but for the device, and the single-process CPU references the test
compares with (the same ``model``, ``batch`` and ``train``).

Each ``case_*`` runs on every rank of harness.run: it joins the group as
``INIT`` says (``backend="accl"`` unless listed), runs, and returns CPU
tensors and plain data; rank r uses accinte:r.
"""

from __future__ import annotations

import os
import sys
import tempfile

import torch
import torch.distributed as dist
from torch import nn

from distributed import harness

STEPS = 3
LR = 0.1
BATCH = 16


def model() -> nn.Module:
    """The tiny model every case trains (same weights in every process)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """The full batch, on the CPU."""
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)


def half(t: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """This rank's share of the batch."""
    return t.chunk(world_size)[rank]


def train(net: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int = STEPS) -> None:
    """``steps`` SGD steps on a mean squared error, never waiting for the
    device (as a training loop that does not print its loss)."""
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(net(x), y).backward()
        opt.step()


def train_on_cpu() -> dict[str, torch.Tensor]:
    """The oracle: single-process CPU training on the full batch."""
    net = model()
    train(net, *batch())
    return {k: v.detach() for k, v in net.state_dict().items()}


def cpu_state(net: nn.Module) -> dict[str, torch.Tensor]:
    """A state dict on the CPU, DTensors gathered with ``full_tensor()``."""
    out = {}
    for k, v in net.state_dict().items():
        if hasattr(v, "full_tensor"):
            v = v.full_tensor()
        out[k] = v.detach().cpu()
    return out


# --- the cases -------------------------------------------------------------

def case_ddp(rank, world_size, device):
    """DDP on this rank's half of the batch; also what DDP wrote to stderr
    (its C++ warnings go there) and its logging data."""
    net = model().to(device)
    x, y = batch()
    with tempfile.TemporaryFile("w+") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            ddp = nn.parallel.DistributedDataParallel(net)
            train(ddp, half(x, rank, world_size).to(device), half(y, rank, world_size).to(device))
            sys.stderr.flush()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        stderr = err.read()
    logging = ddp._get_ddp_logging_data()
    timings = {k: v for k, v in logging.items() if k.startswith("avg_") and k.endswith("_time")}
    return {"state": cpu_state(net), "backend": logging.get("backend_name"), "timings": timings,
            "stderr": stderr}


def _fsdp2(rank, world_size, device, **options):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (world_size,))
    net = model().to(device)
    for layer in net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh, **options)
    fully_shard(net, mesh=mesh, **options)
    # Every parameter is now a DTensor sharded on dim 0 over the mesh.
    sharded = all(p.placements[0].is_shard(0) for p in net.parameters())
    x, y = batch()
    train(net, half(x, rank, world_size).to(device), half(y, rank, world_size).to(device))
    return {"state": cpu_state(net), "sharded": sharded}


def case_fsdp2(rank, world_size, device):
    return _fsdp2(rank, world_size, device)


def case_fsdp2_no_reshard(rank, world_size, device):
    return _fsdp2(rank, world_size, device, reshard_after_forward=False)


def case_fsdp2_bf16(rank, world_size, device):
    """bf16 parameters, fp32 gradient reduction; also the same on a CPU mesh
    with Gloo (the group serves both devices), the oracle for rounding."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    out = _fsdp2(rank, world_size, device, mp_policy=policy)
    out["cpu_gloo"] = _fsdp2(rank, world_size, torch.device("cpu"), mp_policy=policy)["state"]
    return out


def case_dtensor(rank, world_size, device):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    mesh = init_device_mesh(device.type, (world_size,))
    x = torch.arange(4 * 6, dtype=torch.float32).reshape(4, 6).to(device)
    s0 = distribute_tensor(x, mesh, [Shard(0)])
    s1 = distribute_tensor(x, mesh, [Shard(1)])
    rep = distribute_tensor(x, mesh, [Replicate()])
    partial = DTensor.from_local(torch.full((2, 3), rank + 1.0, device=device), mesh, [Partial()])
    results = {
        "shard0": s0.to_local(), "shard1": s1.to_local(), "replicate": rep.to_local(),
        "shard0_to_replicate": s0.redistribute(mesh, [Replicate()]).to_local(),
        "shard0_to_shard1": s0.redistribute(mesh, [Shard(1)]).to_local(),
        "partial_to_replicate": partial.redistribute(mesh, [Replicate()]).to_local(),
    }
    devices = {t.device for t in results.values()}
    return {"locals": {k: v.cpu() for k, v in results.items()}, "devices": sorted(map(str, devices))}


def case_tensor_parallel(rank, world_size, device):
    """Column-parallel first Linear, row-parallel second, full batch on every
    rank: forward output, then the weights after training."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh(device.type, (world_size,))
    net = parallelize_module(model().to(device), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    local_rows = net[0].weight.to_local().shape[0]
    x, y = batch()
    first = net(x.to(device)).detach().cpu()
    train(net, x.to(device), y.to(device))
    return {"output": first, "state": cpu_state(net), "local_rows": local_rows}


def bn_model() -> nn.Module:
    """A tiny convolutional model with batch norm (same weights everywhere)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 4))


def bn_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """The full batch of images for ``bn_model``, on the CPU."""
    g = torch.Generator().manual_seed(2)
    return torch.randn(BATCH, 2, 4, 4, generator=g), torch.randn(BATCH, 4, generator=g)


def train_bn_on_cpu() -> dict[str, torch.Tensor]:
    """The oracle of ``sync_batchnorm``: plain BatchNorm on the full batch."""
    net = bn_model()
    train(net, *bn_batch())
    return {k: v.detach() for k, v in net.state_dict().items()}


def case_sync_batchnorm(rank, world_size, device):
    """nn.SyncBatchNorm under DDP on this rank's half of the batch, as
    Lightning's ``sync_batchnorm=True`` sets it up: its statistics are the
    full batch's (Note [accinte SyncBatchNorm])."""
    net = nn.SyncBatchNorm.convert_sync_batchnorm(bn_model()).to(device)
    ddp = nn.parallel.DistributedDataParallel(net)
    x, y = bn_batch()
    train(ddp, half(x, rank, world_size).to(device), half(y, rank, world_size).to(device))
    return {"state": cpu_state(net), "sync": isinstance(net[1], nn.SyncBatchNorm)}


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}

# How each case joins the group: init_process_group's arguments beyond the
# rendezvous (``backend="accl"`` unless listed).
INIT = {
    "fsdp2_bf16": {"backend": "cpu:gloo,accinte:accl"},
}


def run(rank: int, case: str):
    """Joins the group as ``INIT[case]`` says and runs ``case`` on this rank."""
    device = harness.device()
    harness.init(**INIT.get(case, {"backend": "accl"}))
    return CASES[case](rank, dist.get_world_size(), device)
