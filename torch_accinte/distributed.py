"""torch.distributed on accinte: the ``"accl"`` backend.

``register()`` (called when torch_accinte is imported, if ``dist.is_available()``) makes
``"accl"`` a torch.distributed backend and the default one for device ``accinte``, so any
of these gives accinte tensors a backend:

    dist.init_process_group("accl")
    dist.init_process_group(device_id=torch.device("accinte", local_rank))
    dist.init_process_group("cpu:gloo,accinte:accl")     # CPU and accinte tensors

The backend itself is ``torch_accinte._C.ProcessGroupACCL`` (C++, csrc/distributed/): each
collective is a kernel on a communication stream of the device, and PyTorch's own Gloo moves
the data inside it, in place on the device memory. See csrc/distributed/README.md.
"""

from __future__ import annotations

import datetime

import torch.distributed as dist

__all__ = ["register", "BACKEND"]

BACKEND = "accl"


# LITERALINCLUDE START: ACCL CREATOR
def _create(opts, backend_options) -> object:
    """The creator torch.distributed calls for each group using "accl" (extended API:
    ``opts`` is a ``_DistributedBackendOptions``: store, group_rank, group_size, timeout).

    The Gloo group that moves the data rendezvouses on the group's own store, as
    ``backend="gloo"`` would, on the interface PyTorch's Gloo picks (GLOO_SOCKET_IFNAME,
    or the host name's address).
    """
    from torch_accinte import _C

    timeout = opts.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    gloo = dist.ProcessGroupGloo(opts.store, opts.group_rank, opts.group_size, timeout)
    return _C.ProcessGroupACCL(gloo, opts.group_rank, opts.group_size, timeout)
# LITERALINCLUDE END: ACCL CREATOR


def register() -> None:
    """Registers "accl" with torch.distributed for device accinte; idempotent.

    Wraps ``dist.Backend.register_backend(name, creator, extended_api=True,
    devices=["accinte"])``.
    """
    if BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["accinte"])
