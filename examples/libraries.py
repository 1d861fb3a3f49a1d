"""Libraries on accinte: Lightning's Trainer by accelerator name, and the
transformers Trainer with transformers' own TrainingArguments (accinte is the
machine's accelerator), each in bfloat16 mixed precision, each compared with
the same training on the CPU.

Run: python examples/libraries.py
"""

import tempfile

import lightning as L
import torch
import transformers
from torch import nn


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 2))
        self.devices_seen = set()

    def training_step(self, batch, _):
        x, y = batch
        self.devices_seen.add(next(self.parameters()).device.type)
        return nn.functional.cross_entropy(self.net(x).float(), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


def lightning_run(accelerator):
    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(256, 8, generator=g),
                                          torch.randint(0, 2, (256,), generator=g))
    model = Classifier()
    trainer = L.Trainer(accelerator=accelerator, devices=1, precision="bf16-mixed", max_epochs=3,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=32))
    return model, trainer.callback_metrics


class Tokens(torch.utils.data.Dataset):
    ids = torch.randint(0, 64, (64, 12), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def hf_run(device, out_dir):
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    # What a CUDA user writes: the accelerator by default, use_cpu=True for the CPU.
    args = transformers.TrainingArguments(
        output_dir=out_dir, use_cpu=device == "cpu", bf16=True, num_train_epochs=2,
        per_device_train_batch_size=16, report_to=[], save_strategy="no", logging_strategy="no",
        disable_tqdm=True, seed=0)
    result = transformers.Trainer(model=model, args=args, train_dataset=Tokens()).train()
    return next(model.parameters()).device, result.training_loss


def main():
    model, _ = lightning_run("accinte")
    cpu_model, _ = lightning_run("cpu")
    assert model.devices_seen == {"accinte"}, model.devices_seen
    for (name, p), q in zip(model.named_parameters(), cpu_model.parameters()):
        torch.testing.assert_close(p.float(), q.float(), rtol=2e-2, atol=2e-2, msg=name)
    print("Lightning: Trainer(accelerator='accinte', precision='bf16-mixed') trained on accinte")

    with tempfile.TemporaryDirectory() as tmp:
        device, loss = hf_run("accinte", tmp)
        cpu_device, cpu_loss = hf_run("cpu", tmp)
    assert device.type == "accinte" and cpu_device.type == "cpu"
    print(f"transformers Trainer (bf16): loss {loss:.4f} on accinte, {cpu_loss:.4f} on the CPU")
    assert abs(loss - cpu_loss) < 2e-2
    print("libraries train on accinte as on the CPU")


if __name__ == "__main__":
    main()
