"""transformers' ``Trainer`` on accinte, with bfloat16 mixed precision.

transformers 5.x picks the Trainer's device in
``TrainingArguments._setup_devices`` (transformers/training_args.py) from a
list of device types; a device it does not know gets CUDA's or, failing that,
the ``ACCELERATE_TORCH_DEVICE`` environment variable, which accelerate's
``PartialState`` also reads (accelerate/state.py) and neither library
documents. ``bf16=True`` is refused in ``TrainingArguments.__post_init__``
because ``is_torch_bf16_gpu_available()`` knows no device outside its list.

``TrainingArguments`` below is transformers' own, with those two decisions
made for accinte: the device comes from ``torch.accinte`` (the current
device), and bfloat16 counts as supported when accinte supports it. Nothing
else changes, and no environment variable stays set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os

import torch
import transformers
from transformers import training_args as _training_args

__all__ = ["TrainingArguments"]


# LITERALINCLUDE START: ECOSYSTEM HF TRAINING ARGUMENTS
@contextlib.contextmanager
def _accelerate_device(device: torch.device):
    """accelerate's ``PartialState`` (created inside ``_setup_devices``) takes
    its device from this variable when it is set; it is set only meanwhile."""
    previous = os.environ.get("ACCELERATE_TORCH_DEVICE")
    os.environ["ACCELERATE_TORCH_DEVICE"] = str(device)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["ACCELERATE_TORCH_DEVICE"]
        else:
            os.environ["ACCELERATE_TORCH_DEVICE"] = previous


@contextlib.contextmanager
def _bf16_check_knows_accinte():
    """``__post_init__`` asks ``is_torch_bf16_gpu_available`` through its
    module's namespace; answer for accinte while it runs."""
    original = _training_args.is_torch_bf16_gpu_available
    _training_args.is_torch_bf16_gpu_available = torch.accinte.is_bf16_supported
    try:
        yield
    finally:
        _training_args.is_torch_bf16_gpu_available = original


@dataclasses.dataclass
class TrainingArguments(transformers.TrainingArguments):
    """``transformers.TrainingArguments`` that train on the current accinte
    device (``use_cpu=True`` still means the CPU)."""

    def __post_init__(self) -> None:
        with _bf16_check_knows_accinte():
            super().__post_init__()

    @functools.cached_property
    def _setup_devices(self) -> torch.device:
        if self.use_cpu:
            return transformers.TrainingArguments._setup_devices.func(self)
        device = torch.device("accinte", torch.accinte.current_device())
        with _accelerate_device(device):
            transformers.TrainingArguments._setup_devices.func(self)
        return device
# LITERALINCLUDE END: ECOSYSTEM HF TRAINING ARGUMENTS
