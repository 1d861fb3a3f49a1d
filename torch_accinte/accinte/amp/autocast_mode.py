"""``torch.accinte.amp.autocast`` (cf. torch.cuda.amp.autocast_mode)."""

from __future__ import annotations

import torch

__all__ = ["autocast"]


class autocast(torch.amp.autocast):
    """``torch.autocast("accinte", ...)`` with the device bound.

    Inside the region, operators on accinte tensors follow the policy of
    csrc/amp/autocast_mode.cpp: matrix products and convolutions run in
    ``dtype``, numerically sensitive operators in float32, mixed-input
    operators in the widest input dtype. ``dtype=None`` takes
    ``torch.get_autocast_dtype("accinte")`` (float16 unless changed). Usable as a
    context manager and as a decorator.
    """

    def __init__(
        self,
        enabled: bool = True,
        dtype: torch.dtype | None = None,
        cache_enabled: bool = True,
    ):
        super().__init__("accinte", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
