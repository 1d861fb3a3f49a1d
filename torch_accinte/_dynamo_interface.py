"""The Dynamo/Inductor ``DeviceInterface`` of accinte.

Inductor reaches a device's runtime only through the class registered with
``torch._dynamo.device_interface.register_interface_for_device``: device
properties (``DeviceProperties.create``), the raw stream handle its wrapper
passes to kernels (``get_raw_stream``), synchronisation. Everything here
forwards to ``torch.accinte``.

Dynamo's registry knows CUDA, XPU, MTIA and the CPU by itself; accinte is
added the moment ``torch._dynamo.device_interface`` is imported (the package
asks for that with ``_after_import``), so ``get_interface_for_device("accinte")``
answers in a fresh interpreter, and ``import torch`` imports none of Dynamo.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device
from torch_accinte import _C, accinte


def _device_index(device: Any) -> int:
    """Index of ``device`` (None, int, str or torch.device); None is the current device."""
    if device is None:
        return accinte.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "accinte":
        raise ValueError(f"expected an accinte device, got {device}")
    return accinte.current_device() if device.index is None else device.index


# LITERALINCLUDE START: COMPILER DEVICE INTERFACE
class AccInteInterface(DeviceInterface):
    """accinte as Dynamo and Inductor see it."""

    device = accinte.device  # type: ignore[assignment]
    Event = accinte.Event  # type: ignore[assignment]  (a torch.Event subclass)
    Stream = accinte.Stream  # type: ignore[assignment]  (a torch.Stream subclass)

    class Worker:
        """What Inductor's compile workers may ask without a device context."""

        @staticmethod
        def set_device(device: int) -> None:
            accinte.set_device(device)

        @staticmethod
        def current_device() -> int:
            return accinte.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            return accinte.get_device_properties(_device_index(device))

    current_device = staticmethod(accinte.current_device)
    set_device = staticmethod(accinte.set_device)
    device_count = staticmethod(accinte.device_count)
    stream = staticmethod(accinte.stream)  # type: ignore[assignment]
    current_stream = staticmethod(accinte.current_stream)
    set_stream = staticmethod(accinte.set_stream)  # type: ignore[assignment]
    synchronize = staticmethod(accinte.synchronize)
    memory_allocated = staticmethod(accinte.memory_allocated)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        """The acStream_t of the current stream of device ``device_idx``."""
        return _C._get_current_raw_stream(device_idx)

    @staticmethod
    def exchange_device(device: int) -> int:
        return torch._C._accelerator_exchangeDevice(device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return torch._C._accelerator_maybeExchangeDevice(device)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        accinte.set_stream(
            torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)
        )

    @staticmethod
    def is_available() -> bool:
        return accinte.is_available()

    @classmethod
    def get_device_properties(cls, device: Any = None) -> Any:
        return accinte.get_device_properties(_device_index(device))

    @staticmethod
    def get_compute_capability(device: Any = None) -> int:
        major, minor = accinte.get_device_capability(_device_index(device))
        return major * 10 + minor

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return False  # kernels are C++ (Inductor's CPU code generator)
# LITERALINCLUDE END: COMPILER DEVICE INTERFACE


def register(_module: object = None) -> None:
    """Adds accinte to Dynamo's device registry: "accinte" and "accinte:N"
    (Dynamo looks a string device up as is). Idempotent."""
    register_interface_for_device("accinte", AccInteInterface)
    for index in range(accinte.device_count()):
        register_interface_for_device(f"accinte:{index}", AccInteInterface)
