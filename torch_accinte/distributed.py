"""torch.distributed on accinte: the ``"accl"`` backend.

``register()`` (called when torch_accinte is imported, if ``dist.is_available()``) makes
``"accl"`` a torch.distributed backend and the default one for device ``accinte``, so any
of these gives accinte tensors a backend:

    dist.init_process_group("accl")
    dist.init_process_group(device_id=torch.device("accinte", local_rank))
    dist.init_process_group("cpu:gloo,accinte:accl")     # CPU and accinte tensors

The backend itself is ``torch_accinte._C.ProcessGroupACCL`` (C++, csrc/distributed/): each
collective is a kernel on a communication stream of the device; inside it, an engine moves the
data in place on the device memory: the shm engine (shared memory) when every rank of the group
runs on this host, unless ``ACCL_ENGINE=gloo``, else PyTorch's own Gloo. See
csrc/distributed/README.md.
"""

from __future__ import annotations

import datetime
import os
import secrets
import socket

import torch.distributed as dist

__all__ = ["register", "BACKEND"]

BACKEND = "accl"


# LITERALINCLUDE START: ACCL CREATOR
def _create(opts, backend_options) -> object:
    """The creator torch.distributed calls for each group using "accl" (extended API:
    ``opts`` is a ``_DistributedBackendOptions``: store, group_rank, group_size, timeout).

    The Gloo group rendezvouses on the group's own store, as ``backend="gloo"`` would, on
    the interface PyTorch's Gloo picks (GLOO_SOCKET_IFNAME, or the host name's address). If
    every rank runs on this host, the hot collectives move through shared memory instead
    (the "shm" engine, wrapping Gloo), unless ``ACCL_ENGINE=gloo``.
    """
    from torch_accinte import _C

    timeout = opts.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    rank, size = opts.group_rank, opts.group_size
    # A bad ACCL_ENGINE or ACCL_SHM_SLOT_BYTES fails every rank before any rendezvous.
    choice = _engine_choice()
    slot_bytes = _slot_bytes() if choice != "gloo" else DEFAULT_SLOT_BYTES
    # Under torchrun the store may hold the keys of the attempt before a restart.
    attempt_store = _store_of_this_attempt(opts.store)
    gloo = dist.ProcessGroupGloo(attempt_store, rank, size, timeout)
    # The group's store outlives a destroyed group when a new one reuses its name (as the
    # default group does): keys of this creation live under a count of creations, the same
    # on every rank since every rank makes the same groups in the same order.
    creation = attempt_store.add(f"accl_engine/creations/{rank}", 1)
    store = dist.PrefixStore(f"accl_engine/{creation}/", attempt_store)
    if _engine(choice, store, rank, size) == "gloo":
        return _C.ProcessGroupACCL(gloo, rank, size, timeout)
    return _with_shm(store, rank, size, slot_bytes, lambda **shm: _C.ProcessGroupACCL(
        gloo, rank, size, timeout, **shm))
# LITERALINCLUDE END: ACCL CREATOR


# LITERALINCLUDE START: ACCL STORE OF THIS ATTEMPT
def _store_of_this_attempt(store):
    """The part of a group's store that belongs to this attempt of a torchrun launch.

    torchrun's agent hosts the store its workers rendezvous on (the workers see
    TORCHELASTIC_USE_AGENT_STORE=True) and, in PyTorch 2.13, keeps that one server across
    ``--max-restarts`` (pytorch#135712): a restarted worker finds every key of the attempt
    before, so Gloo's full mesh would read a dead peer's address and fail to connect, or
    hang. Under a single agent (GROUP_WORLD_SIZE=1) every worker has the same
    TORCHELASTIC_RESTART_COUNT, so the group's keys live under it. With several agents each
    counts its own restarts (pytorch#108158) and the count cannot name the attempt: the
    store is returned as is, and the launch needs TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (a
    new store at each restart; docs/chapters/distributed.md, "Elastic restarts").
    """
    env = os.environ
    if env.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or env.get("GROUP_WORLD_SIZE") != "1":
        return store
    return dist.PrefixStore(f"accl_attempt/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}/", store)
# LITERALINCLUDE END: ACCL STORE OF THIS ATTEMPT


ENGINE_ENV = "ACCL_ENGINE"
SLOT_BYTES_ENV = "ACCL_SHM_SLOT_BYTES"
DEFAULT_SLOT_BYTES = 1 << 20
SLOT_BYTES_RANGE = (64, 1 << 30)  # a 1 GiB slot already maps 4 GiB on 2 ranks


def _slot_bytes() -> int:
    """ACCL_SHM_SLOT_BYTES (bytes per rank and buffer), checked: an integer in
    SLOT_BYTES_RANGE, else ValueError. Every rank reads it before any rendezvous, so a bad
    value fails every rank at once rather than leave some waiting for rank 0."""
    text = os.environ.get(SLOT_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_SLOT_BYTES
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{SLOT_BYTES_ENV}={text!r}: expected an integer number of bytes")
    low, high = SLOT_BYTES_RANGE
    if not low <= value <= high:
        raise ValueError(f"{SLOT_BYTES_ENV}={value}: expected {low} to {high} bytes")
    return value


def _host_identity() -> str:
    """What ranks that can share a memfd have in common: the host (name and boot), the
    pid namespace (rank 0's descriptor is opened through /proc/<pid>/fd) and the user."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        pid_ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return f"no-procfs:{os.getpid()}"  # never equal across processes: Gloo
    return f"{socket.gethostname()}|{boot}|{pid_ns}|{os.getuid()}"


# LITERALINCLUDE START: ACCL ENGINE CHOICE
def _engine_choice() -> str:
    """ACCL_ENGINE: "shm", "gloo", or "auto" when unset."""
    choice = os.environ.get(ENGINE_ENV, "").strip().lower() or "auto"
    if choice not in ("auto", "shm", "gloo"):
        raise ValueError(f"{ENGINE_ENV}={choice!r}: expected 'shm', 'gloo' or unset")
    return choice


def _engine(choice: str, store, rank: int, size: int) -> str:
    """ "shm" if every rank of the group shares this host (each publishes its host identity
    in the group's store) and `choice` (ACCL_ENGINE) is not "gloo"; else "gloo". Every rank
    reaches the same answer. ACCL_ENGINE=shm on ranks of several hosts is an error."""
    if choice == "gloo":
        return "gloo"
    mine = _host_identity()
    store.set(f"host/{rank}", mine)
    same = all(store.get(f"host/{r}").decode() == mine for r in range(size))
    if not same and choice == "shm":
        raise RuntimeError(f"accl: {ENGINE_ENV}=shm, but the ranks of this group do not all "
                           "run on one host (or in one pid namespace): unset it or use 'gloo'")
    return "shm" if same else "gloo"
# LITERALINCLUDE END: ACCL ENGINE CHOICE


def _with_shm(store, rank: int, size: int, slot_bytes: int, make):
    """Rank 0 makes the group's memfd (its C++ segment sizes it and writes the header) and
    publishes where it is; the others open it through /proc/<pid>/fd and map it. Returns
    ``make(shm_fd=..., shm_nonce=..., shm_slot_bytes=...)``. Every rank reports to the
    others whether it got there, so they fail together rather than wait for one another."""
    fd, pg, error = -1, None, ""
    try:
        if rank == 0:
            nonce = secrets.randbits(63)
            fd = os.memfd_create("accl-shm", os.MFD_CLOEXEC)
            pg = make(shm_fd=fd, shm_nonce=nonce, shm_slot_bytes=slot_bytes)
            store.set("segment", f"{os.getpid()} {fd} {nonce} {slot_bytes}")
        else:
            pid, number, nonce, slot_bytes = map(int, store.get("segment").decode().split())
            fd = os.open(f"/proc/{pid}/fd/{number}", os.O_RDWR | os.O_CLOEXEC)
            pg = make(shm_fd=fd, shm_nonce=nonce, shm_slot_bytes=slot_bytes)
    except Exception as e:  # reported to every rank below
        error = f"rank {rank}: {e}"
        if rank == 0:
            store.set("segment", "0 -1 0 0")  # the others fail to open it, and say so
    finally:
        # Rank 0's descriptor stays open (and openable) until every rank has mapped it;
        # each segment keeps a descriptor of its own.
        store.set(f"joined/{rank}", error or "ok")
        reports = [store.get(f"joined/{r}").decode() for r in range(size)]
        if fd >= 0:
            os.close(fd)
    failures = [r for r in reports if r != "ok"]
    if failures:
        raise RuntimeError("accl: the ranks could not share memory for the shm engine ("
                           + "; ".join(failures) + f"); set {ENGINE_ENV}=gloo to use Gloo")
    return pg


def register() -> None:
    """Registers "accl" with torch.distributed for device accinte; idempotent.

    Wraps ``dist.Backend.register_backend(name, creator, extended_api=True,
    devices=["accinte"])``.
    """
    if BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["accinte"])
