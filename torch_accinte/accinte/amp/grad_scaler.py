"""``torch.accinte.amp.GradScaler`` (cf. torch.cuda.amp.grad_scaler)."""

from __future__ import annotations

import torch

__all__ = ["GradScaler"]


# LITERALINCLUDE START: AMP GRAD SCALER
class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("accinte", ...)`` with the device bound.

    ``torch.amp.GradScaler()`` without a device means CUDA, so accinte code
    must name the device; this class does. The scaler keeps its scale and
    growth tracker on the device and updates them with
    ``torch._amp_foreach_non_finite_check_and_unscale_`` and
    ``torch._amp_update_scale_``, which run on accinte tensors in place.
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ):
        super().__init__(
            "accinte",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
# LITERALINCLUDE END: AMP GRAD SCALER
