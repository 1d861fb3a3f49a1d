"""torch.compile for accinte: Dynamo's device interface and Inductor's backend.

Nothing here is imported by ``import torch``: Inductor looks for
``Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen`` and
``WrapperFxCodegen`` on the device module (``torch.accinte``) the first time it
lowers a graph for accinte, and ``torch.accinte.__getattr__`` imports this
package to answer, which registers everything once (``register``).
"""

from __future__ import annotations

import warnings

import torch
from torch._inductor import config as inductor_config
from torch._inductor import scheduler as inductor_scheduler
from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

from .codegen import (
    AccInteCppWrapperCodegen,
    AccInteDeviceOpOverrides,
    AccInteScheduling,
    AccInteWrapperCodegen,
)
from torch_accinte import _dynamo_interface
from torch_accinte._dynamo_interface import AccInteInterface

__all__ = [
    "AccInteCppWrapperCodegen", "AccInteInterface", "AccInteScheduling", "AccInteWrapperCodegen",
    "WrapperFxCodegen", "register",
]


# LITERALINCLUDE START: COMPILER GPU TRAPS
def _work_around_gpu_assumptions() -> None:
    """Note [Inductor 2.13 treats every non-CPU device as a GPU]

    ``get_current_backend()`` answers ``config.cuda_backend`` ("triton") for
    any device but cpu/mps/xpu/tpu, so C++ code generation for accinte takes
    Triton's paths (CSE dtype propagation then fails, ``KeyError: None``); and
    the scheduler's loop reindexing, which skips nodes whose device type is
    "cpu", rewrites C++ groups as if they were Triton's
    (``TypeError: can't multiply sequence by non-int``). 2.13 has no
    per-device setting, so two global ones change; neither is read for CPU
    code (CPU reads ``cpu_backend``; reindexing skips CPU nodes), which a test
    checks by comparing a CPU compile's code with and without torch_accinte.
    With CUDA (or MTIA) compiled in they would change that device's code, so
    they stay untouched there, and compiling for accinte in such a build fails.
    Remove when PyTorch's RFCs #189138/#189137 land.
    """
    if torch.cuda._is_compiled() or torch.mtia._is_compiled():
        warnings.warn(
            "torch_accinte: torch.compile for accinte needs torch._inductor.config.cuda_backend"
            " = 'cpp', which would change this build's CUDA/MTIA code; left unchanged",
            stacklevel=2,
        )
        return
    inductor_config.cuda_backend = "cpp"  # type: ignore[assignment]
    inductor_config.loop_reindexing_after_fusion = False


def _guard_accinte_devices() -> None:
    """Note [Inductor 2.13 guards only GPU devices]

    The scheduler enters a device guard (``with torch.accinte.device(i):``)
    only where ``device_need_guard`` says so, which is for GPU types; that
    guard is also where the wrapper defines ``default_stream`` and the user's
    streams, so a graph with ``torch.Stream`` regions fails with
    ``NameError: name 'default_stream' is not defined``. accinte has streams
    and devices: the scheduler's name is pointed at a function that answers
    True for accinte and asks Inductor's own for every other device.
    """
    inductor_need_guard = inductor_scheduler.device_need_guard

    def device_need_guard(device: str) -> bool:
        return device == "accinte" or inductor_need_guard(device)

    inductor_scheduler.device_need_guard = device_need_guard
# LITERALINCLUDE END: COMPILER GPU TRAPS


_registered = False


# LITERALINCLUDE START: COMPILER REGISTER
def register() -> None:
    """Registers accinte with Dynamo and Inductor, once per process."""
    global _registered
    if _registered:
        return
    _dynamo_interface.register()  # done already if Dynamo was imported first
    register_device_op_overrides("accinte", AccInteDeviceOpOverrides())
    register_backend_for_device(
        "accinte", AccInteScheduling, AccInteWrapperCodegen, AccInteCppWrapperCodegen,
        WrapperFxCodegen,
    )
    _work_around_gpu_assumptions()
    _guard_accinte_devices()
    _registered = True
# LITERALINCLUDE END: COMPILER REGISTER


register()
