"""Lightning on accinte: ``Trainer(accelerator="accinte")``.

Lightning chooses strategies and mixed precision from lists of device names
(lightning/pytorch/trainer/connectors/accelerator_connector.py in Lightning
2.6: ``_choose_strategy`` gives any accelerator it does not know a
``SingleDeviceStrategy`` on ``"cpu"``, and ``_check_and_init_precision`` builds
``MixedPrecision(..., device="cuda")`` for every device but cpu and mps). The
accelerator below keeps Lightning's choices and corrects those two in
``setup``, which Lightning calls before it moves the model and before the
first autocast.

With ``devices=2`` Lightning picks its ``DDPStrategy`` and the process group
backend registered for the device type (``accl``, see torch_accinte/distributed.py),
but ``DDPStrategy._setup_model`` builds ``DistributedDataParallel`` inside
``torch.cuda.stream(torch.cuda.Stream())`` whenever the device has an index
(lightning/pytorch/strategies/ddp.py:194 in 2.6), which fails on a torch built
without CUDA; ``setup`` gives such a strategy a ``_setup_model`` without it.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

__all__ = ["register", "accelerator_class"]

_classes: dict[str, type] = {}


# LITERALINCLUDE START: ECOSYSTEM LIGHTNING ACCELERATOR
def accelerator_class(package: str = "lightning.pytorch") -> type:
    """The accinte accelerator for ``package`` (``"lightning.pytorch"`` or the
    older ``"pytorch_lightning"``: each has its own ``Accelerator`` base)."""
    if package in _classes:
        return _classes[package]
    # Only the base class now: this runs while Lightning itself is being
    # imported (the import hook), before its strategies module exists.
    base = importlib.import_module(f"{package}.accelerators").Accelerator

    class AccinteAccelerator(base):
        """Accelerator for accinte devices (``torch.accinte``)."""

        def setup_device(self, device: torch.device) -> None:
            # Lightning passes the strategy's root device here before `setup`
            # has corrected it (see the module docstring): only accinte
            # devices are made current.
            if device.type == "accinte":
                torch.accinte.set_device(device)

        def setup(self, trainer: Any) -> None:
            strategies = importlib.import_module(f"{package}.strategies")
            precision = importlib.import_module(f"{package}.plugins.precision")
            strategy = trainer.strategy
            devices = trainer._accelerator_connector._parallel_devices
            if isinstance(strategy, strategies.SingleDeviceStrategy) and strategy.root_device.type != "accinte":
                strategy._root_device = devices[0]
            torch.accinte.set_device(strategy.root_device)
            plugin = strategy.precision_plugin
            if isinstance(plugin, precision.MixedPrecision) and plugin.device != "accinte":
                plugin.device = "accinte"
            if isinstance(strategy, strategies.DDPStrategy):
                _wrap_without_cuda_stream(strategy)

        def get_device_stats(self, device: Any) -> dict[str, Any]:
            return torch.accinte.memory_stats(device)

        def teardown(self) -> None:
            torch.accinte.empty_cache()

        @staticmethod
        def parse_devices(devices: Any) -> list[int]:
            if isinstance(devices, str):
                devices = -1 if devices.strip() in ("-1", "auto") else [int(d) for d in devices.split(",") if d.strip()]
            if devices == -1:
                return list(range(torch.accinte.device_count()))
            if isinstance(devices, int):
                ids = list(range(devices))
            else:
                ids = [int(d) for d in devices]
            bad = [i for i in ids if not 0 <= i < torch.accinte.device_count()]
            if not ids or bad:
                raise ValueError(
                    f"accinte devices {devices!r} are not available: this process has "
                    f"{torch.accinte.device_count()} accinte device(s) (ACCINTE_DEVICE_COUNT)")
            return ids

        @staticmethod
        def get_parallel_devices(devices: list[int]) -> list[torch.device]:
            return [torch.device("accinte", i) for i in devices]

        @staticmethod
        def auto_device_count() -> int:
            return torch.accinte.device_count()

        @staticmethod
        def is_available() -> bool:
            return torch.accinte.is_available()

        @staticmethod
        def name() -> str:
            return "accinte"

    _classes[package] = AccinteAccelerator
    return AccinteAccelerator


def _wrap_without_cuda_stream(strategy: Any) -> None:
    """Lightning's DDP wrapping minus its CUDA side stream (see the module
    docstring): DDP is built on the current accinte stream, behind the work
    that moved the model there."""
    from torch.nn.parallel import DistributedDataParallel

    def setup_model(model: torch.nn.Module) -> DistributedDataParallel:
        return DistributedDataParallel(module=model, device_ids=strategy.determine_ddp_device_ids(),
                                       **strategy._ddp_kwargs)

    strategy._setup_model = setup_model


def register(package: str = "lightning.pytorch") -> None:
    """Adds ``"accinte"`` to ``package``'s accelerator registry (idempotent)."""
    registry = importlib.import_module(f"{package}.accelerators").AcceleratorRegistry
    if "accinte" not in registry:
        cls = accelerator_class(package)
        registry.register("accinte", cls, description=cls.__name__)
# LITERALINCLUDE END: ECOSYSTEM LIGHTNING ACCELERATOR
