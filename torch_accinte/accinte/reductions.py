"""Sharing accinte tensors between processes (cf. torch.multiprocessing.reductions).

PyTorch 2.13's ``torch.multiprocessing`` shares CUDA tensors through IPC
handles and has no hook for a PrivateUse1 device: an accinte tensor put on a
``torch.multiprocessing.Queue`` would fail to pickle (``_share_fd_: only
available on CPU``). ``init_reductions``
(run when the backend registers) wraps PyTorch's reducers for ``Tensor``,
``Parameter`` and ``UntypedStorage`` so that accinte ones travel as IPC
handles instead, and leaves every other tensor to PyTorch.

The receiver maps the sender's device memory (acIpcOpenMemHandle): writes on
either side are visible to the other once the writer has synchronized. As
CUDA's reductions do, pickling records an interprocess event on the sender's
current stream (acIpcGetEventHandle) and unpickling makes the receiver's
current stream wait for it (acIpcOpenEventHandle, acStreamWaitEvent), so
work the receiver queues there sees everything the sender queued on its
current stream before the share; neither side waits on the host. Storages
are cached on both sides by handle, so a storage received twice is mapped
once, and one sent back to the process that exported it is that process's
own storage; a storage that a receiver sends on (or back) travels under the
receiver's own handle, so it arrives as a second mapping of the same memory.

Lifetime, as for CUDA: the memory lives until both sides release it. Each
share carries a reference count in memory both processes map (Note [IPC
reference counts] in csrc/runtime/AccInteIPCCounters.h): the sender keeps its
storage, and so its caching allocator's block, and the share's event until
every receiver of that share has dropped its storage; ``ipc_collect()`` (run at every share and by
``torch.accinte.empty_cache()``) lets go of the storages no receiver holds.
See Note [Sharing across processes] in csrc/runtime/AccInteIPC.h.

Processes must be started with ``spawn`` (or ``forkserver``): a forked child
of a process that used accinte cannot use the device.
"""

from __future__ import annotations

import multiprocessing.reduction
import threading
from typing import Any, Callable

import torch
import torch.multiprocessing.reductions as torch_reductions
from torch.multiprocessing.reductions import StorageWeakRef, shared_cache, storage_from_cache
from torch_accinte import _C

from ._lazy import _is_in_bad_fork, _lazy_init

__all__ = ["init_reductions", "ipc_collect", "rebuild_accinte_storage", "rebuild_accinte_tensor",
           "reduce_accinte_storage", "reduce_accinte_tensor"]

# Storages this process shared, each with the reference count and the event
# (an opaque owner) of one share: kept alive until the receiver of that share
# has let go (count 0).
_sent: list[tuple[torch.UntypedStorage, bytes, object]] = []
_sent_lock = threading.Lock()


# LITERALINCLUDE START: MULTIPROCESSING STORAGE
def ipc_collect() -> None:
    """Lets go of the shared storages that no receiver holds any more, so that
    the caching allocator can reuse their memory (``torch.cuda.ipc_collect``).
    Runs at every share and in ``torch.accinte.empty_cache()``; does nothing
    in a forked child, which shares nothing (and whose locks a parent thread
    may have held at fork)."""
    if _is_in_bad_fork():
        return
    with _sent_lock:
        held = []
        for share in _sent:
            if _C._ipc_counter_value(share[1]) > 0:
                held.append(share)
            else:
                _C._ipc_free_counter(share[1])  # the storage and event go with the entry
        _sent[:] = held


def _share(storage: torch.UntypedStorage) -> tuple[int, bytes, int, int, bytes, bytes]:
    """(device, handle, offset, nbytes, counter, event) of ``storage``, with
    the event recorded on the current stream; keeps the storage and the event
    until the receiver releases them, and remembers the storage, so that if it
    comes back to this process the same storage is used."""
    ipc_collect()
    shared, event_owner = _C._share_storage(storage)
    device, handle, offset, nbytes, counter, _event = shared
    with _sent_lock:
        _sent.append((storage, counter, event_owner))
    key = (handle, offset, nbytes)
    shared_cache[key] = StorageWeakRef(storage)
    return shared


def rebuild_accinte_storage(device: int, handle: bytes, offset: int, nbytes: int,
                            counter: bytes, event: bytes) -> torch.UntypedStorage:
    """The receiving side of ``reduce_accinte_storage``: makes the current
    stream wait for the sender's event, then maps the memory
    (acIpcOpenMemHandle) or reuses the storage already mapped for it. The
    mapped storage releases the share's reference when it dies; a reused one
    already holds a reference of its own, so this share's is released now.
    (PyTorch's CUDA reductions skip the wait for a reused storage; the data
    may have changed since it was first received, so this one waits.)"""
    key = (handle, offset, nbytes)
    storage = storage_from_cache(torch.UntypedStorage, key)
    if storage is not None:
        try:
            _C._ipc_wait_event(device, event)
        finally:
            _C._ipc_release_reference(counter)
        return storage
    _lazy_init()
    storage = _C._open_shared_storage(device, handle, offset, nbytes, counter, event)
    shared_cache[key] = StorageWeakRef(storage)
    return storage


def reduce_accinte_storage(storage: torch.UntypedStorage):
    """Pickles an accinte UntypedStorage as an IPC handle (acIpcGetMemHandle)."""
    if storage.nbytes() == 0:
        return (_empty_storage, (storage.device,))  # no memory to share
    return (rebuild_accinte_storage, _share(storage))


def _empty_storage(device: torch.device) -> torch.UntypedStorage:
    return torch.UntypedStorage(0, device=device)
# LITERALINCLUDE END: MULTIPROCESSING STORAGE


# LITERALINCLUDE START: MULTIPROCESSING TENSOR
def rebuild_accinte_tensor(cls: type, shared: tuple | None, device: str, dtype: torch.dtype,
                           size: torch.Size, stride: tuple[int, ...], offset: int,
                           requires_grad: bool) -> torch.Tensor:
    """The receiving side of ``reduce_accinte_tensor``: a tensor over the shared storage."""
    storage = (rebuild_accinte_storage(*shared) if shared is not None
               else _empty_storage(torch.device(device)))
    tensor = torch.empty(0, dtype=dtype, device=storage.device)
    tensor.set_(storage, offset, size, stride)
    if cls is torch.nn.Parameter:
        # A Parameter rebuilt from data keeps requires_grad as sent.
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    tensor.requires_grad_(requires_grad)
    return tensor


def reduce_accinte_tensor(tensor: torch.Tensor):
    """Pickles a strided accinte tensor as its storage's IPC handle plus its view."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cannot share an accinte tensor that requires grad and is not a leaf: autograd "
            "does not cross process boundaries. Share tensor.detach() instead.")
    torch.utils.hooks.warn_if_has_hooks(tensor)
    storage = tensor.untyped_storage()
    shared = _share(storage) if storage.nbytes() > 0 else None
    return (rebuild_accinte_tensor,
            (type(tensor), shared, str(tensor.device), tensor.dtype, tensor.size(),
             tensor.stride(), tensor.storage_offset(), tensor.requires_grad))
# LITERALINCLUDE END: MULTIPROCESSING TENSOR


# LITERALINCLUDE START: MULTIPROCESSING REGISTER
def _is_shareable(obj: torch.Tensor | torch.UntypedStorage) -> bool:
    """An accinte storage, or a strided accinte tensor (sparse and nested
    tensors are left to PyTorch, which reduces them through their parts)."""
    if obj.device.type != "accinte":
        return False
    return not isinstance(obj, torch.Tensor) or (obj.layout == torch.strided and not obj.is_nested)


def _with_accinte(accinte_reducer: Callable, default_reducer: Callable) -> Callable:
    def reduce(obj: Any):
        return accinte_reducer(obj) if _is_shareable(obj) else default_reducer(obj)

    reduce.__name__ = f"{default_reducer.__name__}_or_accinte"
    return reduce


def init_reductions() -> None:
    """Registers accinte-aware reducers with multiprocessing's ForkingPickler
    for torch.Tensor, torch.nn.Parameter and torch.UntypedStorage.

    PyTorch registers its own reducers when torch.multiprocessing is first
    imported (by ``import torch``); these wrap them, so this must run after,
    which registering the backend guarantees. Idempotent."""
    register = multiprocessing.reduction.ForkingPickler.register
    tensor_reducer = _with_accinte(reduce_accinte_tensor, torch_reductions.reduce_tensor)
    for cls in (torch.Tensor, torch.nn.Parameter):
        register(cls, tensor_reducer)
    register(torch.UntypedStorage,
             _with_accinte(reduce_accinte_storage, torch_reductions.reduce_storage))
# LITERALINCLUDE END: MULTIPROCESSING REGISTER
