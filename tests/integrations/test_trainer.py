"""transformers' Trainer on accinte with transformers' own TrainingArguments.

accinte is this machine's accelerator (no CUDA), so a plain
``TrainingArguments()`` trains on it, ``bf16=True`` included, and
``use_cpu=True`` trains on the CPU, as on a CUDA machine
(torch_accinte/integrations/transformers.py). Train, evaluate and predict are
compared with the CPU's; what depends on the order of imports (the device
variable is set when accelerate is imported, and only if the user has not set
it) runs in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from .twins import run_both

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate", reason="transformers' Trainer requires accelerate")
LIB = "transformers Trainer"
VARIABLE = "ACCELERATE_TORCH_DEVICE"


class _Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.ids = torch.randint(2, 96, (32, 8), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _trainer_run(bf16: bool, tmp_path):
    def fn(device):
        torch.manual_seed(0)
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=96, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=1))
        # The same arguments on both devices: only use_cpu tells them apart.
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / device), use_cpu=device == "cpu", bf16=bf16,
            per_device_train_batch_size=8, num_train_epochs=1, report_to=[], save_strategy="no",
            logging_strategy="no", seed=0, disable_tqdm=True)
        assert args.device.type == device, f"{args.device} with {VARIABLE}={os.environ.get(VARIABLE)}"
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
    # accinte runs the CPU's kernels: losses, predictions and weights are the CPU's bits.
    run_both(LIB, "train/evaluate/predict", _trainer_run(False, tmp_path))


def test_trainer_bf16_mixed_precision(tmp_path):
    # accinte's autocast op lists are CUDA's, the CPU's are its own: bfloat16
    # runs agree to bfloat16's precision, not bit for bit.
    run_both(LIB, "bf16 mixed precision", _trainer_run(True, tmp_path), rtol=1e-2, atol=1e-2)


def _fresh_python(source: str, **variables: str) -> None:
    """Runs ``source`` in a new interpreter whose environment has ``variables``
    and, unless they name it, no ACCELERATE_TORCH_DEVICE (this process has one,
    set when accelerate was imported here)."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env.update(variables)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_the_device_is_set_when_accelerate_is_imported(tmp_path):
    _fresh_python(f"""
        import os
        import torch
        assert "{VARIABLE}" not in os.environ, "import torch sets nothing"
        from transformers import TrainingArguments  # imports accelerate.state
        assert os.environ["{VARIABLE}"] == "accinte:0"

        args = TrainingArguments(output_dir="{tmp_path}", report_to=[], bf16=True)
        assert args.device == torch.device("accinte", 0), args.device
        cpu = TrainingArguments(output_dir="{tmp_path}", report_to=[], use_cpu=True)
        assert cpu.device.type == cpu.distributed_state.device.type == "cpu"

        # accelerate on its own: the accelerator as on CUDA, cpu=True the CPU.
        from accelerate import Accelerator
        from accelerate.state import AcceleratorState
        AcceleratorState._reset_state(reset_partial_state=True)
        assert Accelerator().device == torch.device("accinte", 0)
        AcceleratorState._reset_state(reset_partial_state=True)
        assert Accelerator(cpu=True).device.type == "cpu"
        print("ok")
    """)


def test_a_library_imported_before_accinte_is_handled_at_once(tmp_path):
    # Without autoload, `import torch_accinte` comes after transformers.
    _fresh_python(f"""
        import os
        import torch
        from transformers import TrainingArguments
        assert "{VARIABLE}" not in os.environ
        import torch_accinte
        assert os.environ["{VARIABLE}"] == "accinte:0"
        args = TrainingArguments(output_dir="{tmp_path}", report_to=[], bf16=True)
        assert args.device == torch.device("accinte", 0), args.device
        cpu = TrainingArguments(output_dir="{tmp_path}", report_to=[], use_cpu=True)
        assert cpu.device.type == cpu.distributed_state.device.type == "cpu"
        print("ok")
    """, TORCH_DEVICE_BACKEND_AUTOLOAD="0")


def test_a_users_accinte_device_is_kept(tmp_path):
    # transformers first: its arguments module loads torch, and so accinte,
    # in the middle of its own import.
    _fresh_python(f"""
        import os
        from transformers import TrainingArguments
        import torch
        assert os.environ["{VARIABLE}"] == "accinte:1"
        args = TrainingArguments(output_dir="{tmp_path}", report_to=[], bf16=True)
        assert args.device == torch.device("accinte", 1), args.device
        # use_cpu=True is the CPU whatever the variable names (accelerate's cpu=True).
        cpu = TrainingArguments(output_dir="{tmp_path}", report_to=[], use_cpu=True)
        assert cpu.device.type == cpu.distributed_state.device.type == "cpu"
        print("ok")
    """, **{VARIABLE: "accinte:1"})


def test_a_users_cpu_is_kept_and_bf16_asked_of_it(tmp_path):
    # The variable names the CPU: transformers' own answers, as on a machine
    # without an accelerator (bf16 refused unless use_cpu=True).
    _fresh_python(f"""
        import os
        from transformers import TrainingArguments
        assert os.environ["{VARIABLE}"] == "cpu"
        assert TrainingArguments(output_dir="{tmp_path}", report_to=[]).device.type == "cpu"
        try:
            TrainingArguments(output_dir="{tmp_path}", report_to=[], bf16=True)
        except ValueError as error:
            assert "bf16" in str(error), error
        else:
            raise AssertionError("bf16=True allowed on the CPU without use_cpu=True")
        print("ok")
    """, **{VARIABLE: "cpu"})
