"""Operators registered from Python with ``torch.library``.

Two registration forms that need no C++ at all:

* ``accinte::scaled_add``, a new operator defined with
  ``torch.library.custom_op``: its schema comes from the type hints, its
  kernel (for accinte only) is written with existing operators, and it gets a
  fake kernel (shapes for fake tensors and ``torch.compile``) and a backward;
* ``aten::frac`` on accinte, an existing operator given a Python kernel for
  the ``accinte`` device with ``torch.library.impl``: the way to cover an
  operator before its C++ kernel exists. Only the accinte key changes; other
  devices keep their kernels, and autograd keeps frac's derivative formula.

Both register when the backend does (``torch_accinte._register_backend``),
after ``rename_privateuse1_backend``: the device name ``"accinte"`` means
nothing to ``torch.library`` before that.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["scaled_add"]


def _check_same_layout(name: str, self: Tensor, other: Tensor) -> None:
    torch._check(self.shape == other.shape,
                 lambda: f"{name}: expected one shape, got {self.shape} and {other.shape}")
    torch._check(self.dtype == other.dtype,
                 lambda: f"{name}: expected one dtype, got {self.dtype} and {other.dtype}")


# LITERALINCLUDE START: PYTHON CUSTOM OP
@torch.library.custom_op("accinte::scaled_add", mutates_args=(), device_types="accinte")
def scaled_add(self: Tensor, other: Tensor, alpha: float) -> Tensor:
    """``self + alpha * other`` for two accinte tensors of one shape and dtype."""
    _check_same_layout("scaled_add", self, other)
    return torch.add(self, other, alpha=alpha)


@scaled_add.register_fake
def _(self: Tensor, other: Tensor, alpha: float) -> Tensor:
    _check_same_layout("scaled_add", self, other)
    return torch.empty_like(self)


def _scaled_add_setup_context(ctx, inputs, output) -> None:
    ctx.alpha = inputs[2]


def _scaled_add_backward(ctx, grad: Tensor):
    return grad, grad * ctx.alpha, None


scaled_add.register_autograd(_scaled_add_backward, setup_context=_scaled_add_setup_context)
# LITERALINCLUDE END: PYTHON CUSTOM OP


# LITERALINCLUDE START: PYTHON IMPL
# The dtypes of the CPU's frac kernel.
_FRAC_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@torch.library.impl("aten::frac", "accinte")
def _frac(self: Tensor) -> Tensor:
    """frac(x) = x - trunc(x), as the CPU kernel computes it, for its dtypes."""
    if self.dtype not in _FRAC_DTYPES:
        # The CPU's refusal, word for word: its kernel raises it for an empty
        # tensor of the dtype ('"frac_cpu" not implemented for 'Bool'').
        torch.frac(torch.empty(0, dtype=self.dtype))
    return self - self.trunc()
# LITERALINCLUDE END: PYTHON IMPL
