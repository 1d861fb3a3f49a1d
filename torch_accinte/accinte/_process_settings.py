"""Note [accinte kernels and process-wide settings]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A change of a process-wide setting that kernels read waits for the kernels
queued before it.

A few settings that change what an operator computes are one value for the
whole process (``at::globalContext()``, ``c10::get_default_dtype()``), not a
thread's:

- the default dtype (``torch.set_default_dtype``, ``set_default_tensor_type``):
  integer true division, ``sin`` of an integer tensor and an integer tensor
  times a Python float compute in it;
- deterministic algorithms (``torch.use_deterministic_algorithms``, its
  ``warn_only``, ``torch.set_deterministic_debug_mode`` and
  ``torch.utils.deterministic.fill_uninitialized_memory``): the CPU kernels of
  ``index_copy``, ``index_put_`` and ``put_`` with accumulation run serially
  while it is on, and in parallel, with a race between repeated indices,
  while it is off; what a kernel raises or warns for a nondeterministic
  operation, and whether outputs it resizes are filled with NaN, depend on it
  too.

A device kernel reads them once, on the host, when it is launched: CUDA's
TensorIterator picks the compute dtype, and CUDA's ``index_copy`` its
algorithm, before anything is queued. accinte's kernels are CPU kernels run
again on the stream's worker (Note [accinte fallback]), and they read them
when they *run*. A worker cannot be given the launching thread's copy the way
it is given its autograd and autocast modes (Note [accinte kernels see their
caller's state]): there is one copy. A division queued inside ``with
set_default_dtype(torch.float64)`` and run after the block has ended computed
in float32; an ``index_copy`` queued inside ``DeterministicGuard(True)`` and
run after the guard had ended took the parallel path and kept another of the
repeated indices' values than the CPU.

So every Python setter of these settings first waits for every initialized
accinte device: a kernel always runs under the settings it was launched
under. Callers of the C++ setters (``c10::set_default_dtype``,
``at::globalContext().setDeterministicAlgorithms``) bypass this, and so does a
graph compiled by ``torch.compile`` that calls
``torch._C._set_deterministic_algorithms``; nothing else in PyTorch's Python
API does. A kernel another thread queues while the setting changes may run
under either value, as it may be launched under either. While a device's
current stream captures a graph nothing may wait for it, and that device is
not waited for.
"""

from __future__ import annotations

import functools
import importlib

import torch

from torch_accinte.accinte._lazy import is_initialized

__all__ = ["install"]

# Functions of module torch that change a setting kernels read when they run.
_TORCH_SETTERS = ("set_default_dtype", "set_default_tensor_type",
                  "use_deterministic_algorithms", "set_deterministic_debug_mode")


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
    """Makes torch's setters of these settings wait (once per process): the
    functions of module torch, and the property
    torch.utils.deterministic.fill_uninitialized_memory."""
    for name in _TORCH_SETTERS:
        setter = getattr(torch, name)
        if not getattr(setter, "_accinte_waits", False):
            setattr(torch, name, _waiting(setter))
    module_type = type(importlib.import_module("torch.utils.deterministic"))
    fill = module_type.fill_uninitialized_memory
    if not getattr(fill.fset, "_accinte_waits", False):
        module_type.fill_uninitialized_memory = fill.setter(_waiting(fill.fset))
