"""torch.accinte: the accinte counterpart of ``torch.cuda``.

Installed as ``torch.accinte`` by ``torch._register_device_module``. Device,
stream and memory functions are thin wrappers over PyTorch's generic
``torch.accelerator`` / ``torch.Stream`` machinery, which reaches the backend
through its C++ guard, hooks and allocator; the few runtime facts those do not
expose come from ``torch_accinte._C``. Each docstring names the runtime call
(``libaccinte``) underneath.
"""

from __future__ import annotations

import hashlib
import pathlib
from typing import Any

import torch
from torch_accinte import _C

# The lazy-init helpers live in _lazy.py, where the other modules of this
# package import them from; re-exported here because PyTorch and callers look
# them up on the device module (torch.accinte._lazy_init, _is_in_bad_fork, ...).
# The flag _initialized is served by __getattr__ below, at each lookup.
from . import _lazy
from ._lazy import (  # noqa: F401
    DeferredAccInteCallError,
    _is_in_bad_fork,
    _lazy_call,
    _lazy_init,
    is_initialized,
)
from ._utils import _device_t, _get_device_index
from .amp import get_amp_supported_dtype, is_bf16_supported
# PrivateUse1 extension points the tests and users reach as torch.accinte._*.
from .backend_meta import (  # noqa: F401
    _get_backend_format,
    _is_accinte_storage_impl,
    _set_backend_format,
    _storage_serial,
)
from .graphs import Graph, graph, graph_pool_handle, is_current_stream_capturing
from .memory import (
    empty_cache,
    get_per_process_memory_fraction,
    host_memory_stats,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_host_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .mempool import MemPool, use_mem_pool
from .random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .reductions import ipc_collect
from .storage import (
    BFloat16Storage,
    BoolStorage,
    ByteStorage,
    CharStorage,
    ComplexDoubleStorage,
    ComplexFloatStorage,
    DoubleStorage,
    FloatStorage,
    HalfStorage,
    IntStorage,
    LongStorage,
    ShortStorage,
)
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "ComplexDoubleStorage",
    "ComplexFloatStorage", "DoubleStorage", "FloatStorage", "HalfStorage", "IntStorage",
    "LongStorage", "ShortStorage",
    "Event", "Graph", "MemPool", "Stream", "StreamContext", "current_device", "current_stream",
    "default_stream",
    "device", "device_count", "device_of", "empty_cache", "get_amp_supported_dtype",
    "get_device_capability", "get_device_name", "get_device_properties",
    "get_per_process_memory_fraction", "get_rng_state", "get_rng_state_all", "graph",
    "graph_pool_handle", "is_current_stream_capturing",
    "host_memory_stats", "init", "initial_seed", "ipc_collect", "is_available", "is_bf16_supported",
    "is_initialized",
    "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved",
    "mem_get_info", "memory_allocated", "memory_reserved", "memory_stats", "memory_summary",
    "reset_accumulated_host_memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_host_memory_stats", "reset_peak_memory_stats", "seed", "seed_all",
    "set_device", "set_per_process_memory_fraction", "set_rng_state", "set_rng_state_all",
    "set_stream", "stream", "synchronize", "use_mem_pool",
]

# ---- initialisation (lazy, and refused in a bad fork: see _lazy.py) -----------


def init() -> None:
    """Initialises accinte explicitly; a no-op when already initialised."""
    _lazy_init()


# ---- devices -------------------------------------------------------------------


def is_available() -> bool:
    """True when at least one accinte device exists (acGetDeviceCount > 0)."""
    return device_count() > 0


def device_count() -> int:
    """Number of accinte devices (acGetDeviceCount, from ACCINTE_DEVICE_COUNT).

    Does not initialise the backend, and returns 0 rather than raising when the
    runtime is unusable. Cached on first call: a forked child reports its
    parent's count, and fails only when it uses a device (``_lazy_init``)."""
    return _C._get_device_count()


def current_device() -> int:
    """Index of the calling thread's current device (acGetDevice)."""
    _lazy_init()
    return torch._C._accelerator_getDeviceIndex()


def set_device(device: _device_t) -> None:
    """Makes ``device`` current for the calling thread (acSetDevice)."""
    if isinstance(device, int) and device == -1:
        return  # -1 selects nothing, as in torch.cuda.set_device; -2 and below raise
    _lazy_init()
    torch._C._accelerator_setDeviceIndex(_get_device_index(device))


class device:
    """Context manager that makes ``device`` current, restoring the previous one."""

    def __init__(self, device: Any):
        # None or -1 selects nothing, as in torch.cuda.device; -2 and below raise.
        no_device = device is None or (isinstance(device, int) and device == -1)
        self.idx = -1 if no_device else _get_device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            _lazy_init()
            self.prev_idx = torch._C._accelerator_exchangeDevice(self.idx)

    def __exit__(self, *args: object) -> bool:
        if self.idx >= 0:
            torch._C._accelerator_maybeExchangeDevice(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (no-op for CPU)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.is_accinte else -1)


def synchronize(device: _device_t = None) -> None:
    """Waits for all work queued on every stream of ``device`` (acDeviceSynchronize)."""
    _lazy_init()
    torch._C._accelerator_synchronizeDevice(_get_device_index(device, optional=True))


def _sleep(ms: int) -> None:
    """Keeps the current stream busy for ``ms`` milliseconds (cf. torch.cuda._sleep).

    For tests and demos of asynchronous execution: returns at once."""
    _lazy_init()
    _C._sleep(int(ms))


class _AccInteDeviceProperties:
    """Properties of one device, as reported by acGetDeviceProperties."""

    def __init__(self, props: dict[str, Any]):
        self.name: str = props["name"]
        self.total_memory: int = props["total_memory"]
        self.major: int = props["major"]
        self.minor: int = props["minor"]
        self.multi_processor_count: int = props["multi_processor_count"]

    def __repr__(self) -> str:
        return (
            f"_AccInteDeviceProperties(name='{self.name}', major={self.major}, "
            f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device: _device_t = None) -> _AccInteDeviceProperties:
    """Name, memory and capability of ``device`` (acGetDeviceProperties)."""
    _lazy_init()
    return _AccInteDeviceProperties(
        _C._get_device_properties(_get_device_index(device, optional=True))
    )


def get_device_name(device: _device_t = None) -> str:
    """Name of ``device``."""
    return get_device_properties(device).name


def get_device_capability(device: _device_t = None) -> tuple[int, int]:
    """(major, minor) compute capability of ``device``."""
    props = get_device_properties(device)
    return props.major, props.minor


# ---- torch.compile ------------------------------------------------------------

# LITERALINCLUDE START: COMPILER DISCOVERY
# Inductor discovers a PrivateUse1 backend by reading these four names from
# the device module (torch._inductor.codegen.common.init_backend_registration)
# the first time it lowers a graph for accinte. Serving them lazily keeps
# Dynamo and Inductor out of `import torch`; the first lookup imports
# torch_accinte._inductor, which registers the device interface, the op
# overrides and the backend. None of them may be None: Inductor would skip
# the backend without a word.
_INDUCTOR_CLASSES = {
    "Scheduling": "AccInteScheduling",
    "PythonWrapperCodegen": "AccInteWrapperCodegen",
    "CppWrapperCodegen": "AccInteCppWrapperCodegen",
    "WrapperFxCodegen": "WrapperFxCodegen",
}


def __getattr__(name: str) -> Any:
    if name in _INDUCTOR_CLASSES:
        from torch_accinte import _inductor

        return getattr(_inductor, _INDUCTOR_CLASSES[name])
    if name == "_initialized":  # the flag of _lazy.py, read by torch.utils.checkpoint
        return _lazy._initialized
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
# LITERALINCLUDE END: COMPILER DISCOVERY


# LITERALINCLUDE START: COMPILER CACHE TAG
def _tag_compile_caches() -> None:
    """Note [accinte compile cache keys]

    A cached wrapper calls torch_accinte._inductor.launch and a cached kernel
    carries the entry point torch_accinte._inductor.codegen appended; Inductor's
    cache keys (torch's sources, the configs, the graph) see neither. So a
    hash of torch_accinte/_inductor/*.py joins torch.compiler.config.cache_key_tag
    (after a tag the user set with TORCH_COMPILE_CACHE_KEY_TAG) here, at import:
    Inductor reads the tag before it discovers the backend, so a tag set at
    registration would miss the first compile's AOTAutograd key. Reading a
    few small files costs microseconds; torch.compiler.config is part of
    `import torch`, Dynamo and Inductor are not imported.
    """
    digest = hashlib.sha256()
    for path in sorted((pathlib.Path(__file__).parent.parent / "_inductor").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    tag = "torch_accinte-" + digest.hexdigest()[:16]
    config = torch.compiler.config
    if tag not in config.cache_key_tag:
        config.cache_key_tag = f"{config.cache_key_tag}+{tag}" if config.cache_key_tag else tag


_tag_compile_caches()
# LITERALINCLUDE END: COMPILER CACHE TAG
