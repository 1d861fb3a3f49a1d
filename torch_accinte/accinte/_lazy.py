"""Lazy initialisation and fork safety of accinte (cf. the top of torch/cuda/__init__.py).

The backend initialises at its first device use, not at ``import torch``:
``_lazy_init`` runs ``_C._init`` once per process, then the calls queued
before it by ``_lazy_call``. A child forked from a process that had
initialised accinte is in a "bad fork" and refuses to initialise.

The state lives here, in a module of its own, so that every module of
``torch.accinte`` imports these helpers at its top: the package's
``__init__.py`` imports those modules first, so none of them could import
from it at module level. The package re-exports the names PyTorch and
callers look up on the device module (``torch.accinte._lazy_init``,
``_lazy_call``, ``_is_in_bad_fork``, ``is_initialized``,
``DeferredAccInteCallError``) and reads ``_initialized`` from here at each
lookup (torch.utils.checkpoint reads that flag). This module needs only torch
and ``torch_accinte._C``, which the package has loaded before importing it.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable

from torch._utils import _LazySeedTracker
from torch_accinte import _C

# LITERALINCLUDE START: DEVICE LAZY INIT
_initialized = False
_init_lock = threading.Lock()
_tls = threading.local()
# Calls made before initialisation, run by _lazy_init in order, each with the
# stack it was made from (for the error if it fails then).
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []
# Seeding is memory-less: only the latest manual_seed / manual_seed_all count.
_lazy_seed_tracker = _LazySeedTracker()


class DeferredAccInteCallError(Exception):
    """A call queued before initialisation (see ``_lazy_call``) failed when it ran."""


def _is_in_bad_fork() -> bool:
    """True in a child forked from a process that had initialised accinte.

    PyTorch's bad-fork state of the device type, set by the fork handler that
    ``_C._init`` registers (torch::utils::register_fork_handler_for_device_init)."""
    return _C._is_in_bad_fork()


def is_initialized() -> bool:
    """Whether the backend has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _lazy_call(callable: Callable[[], None], **kwargs: bool) -> None:
    """Runs ``callable`` now if accinte is initialised, else at initialisation.

    Seeding and RNG-state calls go through here, as in torch.cuda, so that
    ``torch.manual_seed`` does not initialise the device: a process forked after
    it can still use accinte. ``seed=True`` / ``seed_all=True`` keep only the
    latest manual_seed / manual_seed_all.
    """
    with _init_lock:
        if is_initialized():
            callable()
        elif kwargs.get("seed_all", False):
            _lazy_seed_tracker.queue_seed_all(callable, traceback.format_stack())
        elif kwargs.get("seed", False):
            _lazy_seed_tracker.queue_seed(callable, traceback.format_stack())
        else:
            _queued_calls.append((callable, traceback.format_stack()))


def _lazy_init() -> None:
    """Initialises the backend on first use (PrivateUse1 hooks' ``init``), then
    runs the calls queued by ``_lazy_call``.

    Raises RuntimeError in a forked child of a process that had initialised
    accinte: the runtime's streams and memory do not survive ``fork``.
    """
    global _initialized
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _init_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize accinte in forked subprocess. To use accinte with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        _C._init()
        # Queued calls use the device and so call _lazy_init again: the flag
        # lets this thread through while the lock keeps other threads out.
        _tls.is_initializing = True
        _queued_calls.extend(call for call in _lazy_seed_tracker.get_calls() if call)
        try:
            for queued_call, origin in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    raise DeferredAccInteCallError(
                        f"accinte call failed lazily at initialization with error: {e}\n\n"
                        f"accinte call was originally invoked at:\n\n{''.join(origin)}"
                    ) from e
        finally:
            delattr(_tls, "is_initializing")
        _queued_calls.clear()
        _initialized = True
# LITERALINCLUDE END: DEVICE LAZY INIT
