"""Automatic mixed precision on accinte (cf. torch.cuda.amp).

``torch.autocast("accinte")`` asks the device module which lower-precision
dtypes the device supports (``get_amp_supported_dtype``); the per-operator
policy (which operators run in lower precision, which in float32, which
promote) is C++, registered for the AutocastPrivateUse1 key in
csrc/amp/autocast_mode.cpp. ``autocast`` and ``GradScaler`` here are
conveniences that bind PyTorch's generic classes to accinte.
"""

from __future__ import annotations

import torch

from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_amp_supported_dtype", "is_bf16_supported"]


# LITERALINCLUDE START: AMP SUPPORTED DTYPE
def get_amp_supported_dtype() -> list[torch.dtype]:
    """Lower-precision dtypes ``torch.autocast("accinte", dtype=...)`` accepts.

    torch.amp.autocast calls this on the device module and refuses any other
    dtype with a warning, disabling autocast."""
    return [torch.float16, torch.bfloat16]
# LITERALINCLUDE END: AMP SUPPORTED DTYPE


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether accinte computes in bfloat16 (cf. torch.cuda.is_bf16_supported):
    always, since its kernels are the CPU's, which support it natively; the
    argument exists for torch.cuda's signature. Libraries ask this before they
    allow ``bf16=True`` training."""
    return torch.bfloat16 in get_amp_supported_dtype()
