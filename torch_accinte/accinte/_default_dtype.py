"""A change of the default dtype waits for the kernels queued before it.

Note [accinte kernels and the default dtype]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The default dtype (``torch.set_default_dtype``) decides what an operator
computes in where its inputs do not: integer true division, ``sin`` of an
integer tensor and an integer tensor times a Python float compute in it. A
device kernel reads it once, on the host, when it is launched; CUDA's
TensorIterator picks the compute dtype before the kernel is queued. accinte's
kernels are CPU kernels run again on the stream's worker (Note [accinte
fallback]), and they read it when they *run*. It is one process-wide value,
not a thread's, so a worker cannot be given the launching thread's copy the
way it is given its autograd and autocast modes (Note [accinte kernels see
their caller's state]). A division queued inside ``with
set_default_dtype(torch.float64)`` and run after the block has ended would
compute in float32 and write float64 results that are not the CPU's bits.

So ``torch.set_default_dtype`` and ``torch.set_default_tensor_type`` first wait
for every initialized accinte device: a kernel always runs under the default
dtype it was launched under. Callers of the C++ ``c10::set_default_dtype``
bypass this; nothing in PyTorch's Python API does. While a device's current
stream captures a graph nothing may wait for it, and that device is not
waited for.
"""

from __future__ import annotations

import functools

import torch

from torch_accinte.accinte._lazy import is_initialized

__all__ = ["install"]


def _wait_for_queued_kernels() -> None:
    if not is_initialized():
        return  # nothing was ever queued
    accinte = torch.accinte
    for index in range(accinte.device_count()):
        with accinte.device(index):
            if not accinte.is_current_stream_capturing():
                accinte.synchronize(index)


def _waiting(setter):
    @functools.wraps(setter)
    def wrapper(*args, **kwargs):
        _wait_for_queued_kernels()
        return setter(*args, **kwargs)

    wrapper._accinte_waits = True
    return wrapper


def install() -> None:
    """Wraps torch's two setters of the default dtype (once per process)."""
    for name in ("set_default_dtype", "set_default_tensor_type"):
        setter = getattr(torch, name)
        if not getattr(setter, "_accinte_waits", False):
            setattr(torch, name, _waiting(setter))
