"""Automatic mixed precision on accinte (cf. torch.cuda.amp).

``torch.autocast("accinte")`` asks the device module which lower-precision
dtypes the device supports; the op policy lives in csrc/amp.
"""

from __future__ import annotations

import torch

__all__ = ["get_amp_supported_dtype"]


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Lower-precision dtypes ``torch.autocast("accinte", dtype=...)`` accepts."""
    return [torch.float16, torch.bfloat16]
