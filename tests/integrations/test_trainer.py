"""transformers' Trainer on accinte: train, evaluate and predict, in float32
and in bfloat16 mixed precision, through the TrainingArguments of
torch_accinte.integrations.transformers."""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

transformers = pytest.importorskip("transformers")
LIB = "transformers Trainer"


class _Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.ids = torch.randint(2, 96, (32, 8), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _trainer_run(bf16: bool, tmp_path):
    from torch_accinte.integrations.transformers import TrainingArguments

    def fn(device):
        torch.manual_seed(0)
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=96, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0))
        cls = transformers.TrainingArguments if device == "cpu" else TrainingArguments
        args = cls(output_dir=str(tmp_path / device), use_cpu=device == "cpu", bf16=bf16,
                   per_device_train_batch_size=8, num_train_epochs=1, report_to=[],
                   save_strategy="no", logging_strategy="no", seed=0,
                   dataloader_pin_memory=False, disable_tqdm=True)
        assert args.device.type == device
        trainer = transformers.Trainer(model=model, args=args, train_dataset=_Tokens(),
                                       eval_dataset=_Tokens())
        train = trainer.train()
        # Where the parameters live proves where the training ran.
        assert next(model.parameters()).device.type == device
        evaluation = trainer.evaluate()
        prediction = trainer.predict(_Tokens())
        return {"train_loss": torch.tensor(train.training_loss),
                "eval_loss": torch.tensor(evaluation["eval_loss"]),
                "predictions": torch.from_numpy(prediction.predictions),
                "params": {n: p.detach().float() for n, p in model.named_parameters()}}
    return fn


def test_trainer_float32(tmp_path):
    run_both(LIB, "train/evaluate/predict", _trainer_run(False, tmp_path))


def test_trainer_bf16_mixed_precision(tmp_path):
    # accinte's autocast op lists are CUDA's, the CPU's are its own: bfloat16
    # runs agree to bfloat16's precision, not bit for bit.
    run_both(LIB, "bf16 mixed precision", _trainer_run(True, tmp_path), rtol=1e-2, atol=1e-2)


def test_training_arguments_refuse_nothing_else():
    """use_cpu still means the CPU with accinte's TrainingArguments."""
    from torch_accinte.integrations.transformers import TrainingArguments

    args = TrainingArguments(output_dir="unused", use_cpu=True, report_to=[])
    assert args.device.type == "cpu"
