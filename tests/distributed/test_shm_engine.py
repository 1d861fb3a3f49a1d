"""The shm engine (csrc/distributed/ShmEngine.h): chosen for ranks on one host unless
ACCL_ENGINE says "gloo"; collectives chunked through slots smaller than the tensors, on 2
and 3 ranks, bit-identical across ranks and equal to the CPU; several groups at once; a
peer that dies in the middle of a collective. The whole distributed suite runs on this
engine too (it is the default); test_collectives.py repeats the core collectives on Gloo."""

from __future__ import annotations

import functools
import time

import pytest
import torch
import torch.distributed as dist

from distributed import harness, inputs

SMALL_SLOTS = {"ACCL_SHM_SLOT_BYTES": "256"}  # a 1000-element tensor takes many chunks
OPS = {dist.ReduceOp.SUM: torch.add, dist.ReduceOp.PRODUCT: torch.mul,
       dist.ReduceOp.MIN: torch.minimum, dist.ReduceOp.MAX: torch.maximum}


def engine(group=None) -> str:
    group = group or dist.group.WORLD
    return group._get_backend(torch.device("accinte")).engine


def _engine_name(rank):
    harness.init("accl")
    return engine()


def test_the_engine_is_shm_on_one_host_and_gloo_when_asked():
    assert harness.run(_engine_name) == ["shm", "shm"]
    assert harness.run(_engine_name, env={"ACCL_ENGINE": "gloo"}) == ["gloo", "gloo"]


def _bad_engine(rank):
    try:
        harness.init("accl")
    except (ValueError, RuntimeError) as e:
        return str(e)
    return "accepted"


def test_an_unknown_engine_name_is_refused():
    for message in harness.run(_bad_engine, env={"ACCL_ENGINE": "nccl"}):
        assert "ACCL_ENGINE='nccl': expected 'shm', 'gloo' or unset" in message


def _as_if_on_two_hosts(rank):
    """Each rank reports a host identity of its own, as ranks on two machines would."""
    from unittest import mock

    import torch_accinte.distributed as accl

    with mock.patch.object(accl, "_host_identity", lambda: f"host-{rank}"):
        try:
            harness.init("accl")
        except RuntimeError as e:
            return str(e)
        return engine()


def test_ranks_on_different_hosts_use_gloo_and_refuse_shm():
    assert harness.run(_as_if_on_two_hosts) == ["gloo", "gloo"]
    for message in harness.run(_as_if_on_two_hosts, env={"ACCL_ENGINE": "shm"}):
        assert "ACCL_ENGINE=shm, but the ranks of this group do not all run on one host" in \
            message, message


def _bad_slot_bytes(rank):
    try:
        harness.init("accl")
    except ValueError as e:
        return str(e)
    return "accepted"


@pytest.mark.parametrize("text, message", [
    ("0", "ACCL_SHM_SLOT_BYTES=0: expected 64 to 1073741824 bytes"),
    (str(2 ** 63), f"ACCL_SHM_SLOT_BYTES={2 ** 63}: expected 64 to"),
    (str(2 ** 64 - 1), f"ACCL_SHM_SLOT_BYTES={2 ** 64 - 1}: expected 64 to"),
    ("1MiB", "ACCL_SHM_SLOT_BYTES='1MiB': expected an integer number of bytes"),
])
def test_a_bad_slot_size_is_refused_on_every_rank(text, message):
    # Before the fix: 2**63 mapped 4096 bytes and crashed, 2**64-1 looped forever, 0 failed
    # without naming the variable.
    for got in harness.run(_bad_slot_bytes, env={"ACCL_SHM_SLOT_BYTES": text}, timeout=60):
        assert message in got, got


def value(rank, dtype, n, salt):
    # Random floats of every dtype: the engine adds in rank order, as the CPU oracle does.
    return inputs.value(rank, dtype, n, salt, exact=False)


def _chunked(rank, n):
    """Every collective of the engine over `n` elements (many 256-byte chunks), by value."""
    harness.init("accl")
    size = dist.get_world_size()
    dev = harness.device()
    assert engine() == "shm"
    results = {}
    for salt, dtype in enumerate([torch.float32, torch.bfloat16, torch.float16, torch.int64,
                                  torch.bool]):
        values = [value(r, dtype, n, salt) for r in range(size)]
        for op, cpu_op in OPS.items():
            t = values[rank].to(dev)
            dist.all_reduce(t, op=op)
            results[f"all_reduce {op} {dtype}"] = (t.cpu(), functools.reduce(cpu_op, values))
        if dtype.is_floating_point:
            t = values[rank].to(dev)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            expected = functools.reduce(torch.add, values) / size
            results[f"all_reduce AVG {dtype}"] = (t.cpu(), expected)
        t = values[rank].to(dev)
        dist.broadcast(t, src=size - 1)
        results[f"broadcast {dtype}"] = (t.cpu(), values[-1])
        out = torch.empty(n * size, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(out, values[rank].to(dev))
        results[f"all_gather_into_tensor {dtype}"] = (out.cpu(), torch.cat(values))
        full = [value(r, dtype, n * size, salt + 100) for r in range(size)]
        out = torch.empty(n, dtype=dtype, device=dev)
        op = dist.ReduceOp.SUM if dtype != torch.bool else dist.ReduceOp.MAX
        dist.reduce_scatter_tensor(out, full[rank].to(dev), op=op)
        cpu_op = torch.add if dtype != torch.bool else torch.maximum
        results[f"reduce_scatter_tensor {dtype}"] = (
            out.cpu(), functools.reduce(cpu_op, full)[rank * n:(rank + 1) * n])
    return results


def check_chunked(every_rank):
    """Every rank's result equals the CPU's, bit for bit (so the ranks agree)."""
    for rank, results in enumerate(every_rank):
        for what, (got, expected) in results.items():
            assert got.dtype == expected.dtype, what
            assert torch.equal(got, expected), f"rank {rank}, {what}: {got} != {expected}"
            if got.is_floating_point():
                assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8)), what


def test_chunks_smaller_than_the_tensor_on_two_ranks():
    check_chunked(harness.run(_chunked, 1001, env=SMALL_SLOTS))


def test_three_ranks_reduce_in_rank_order():
    # Uneven shares of each chunk; float sums of three ranks equal the CPU's (a + b) + c.
    check_chunked(harness.run(_chunked, 77, env={**SMALL_SLOTS, "ACCINTE_DEVICE_COUNT": "3"},
                              world_size=3, fresh=True))


def _concurrent_groups(rank):
    harness.init("accl")
    other = dist.new_group([0, 1], backend="accl")
    dev = harness.device()
    assert engine(other) == "shm"
    mine = [value(rank, torch.float32, 5000 + 7 * k, salt=k) for k in range(20)]
    tensors, works = [t.to(dev) for t in mine], []
    for k, t in enumerate(tensors):  # both groups' kernels in flight at once
        works.append(dist.all_reduce(t, group=other if k % 2 else None, async_op=True))
    for w in works:
        w.wait()
    return [t.cpu() for t in tensors]


def test_several_groups_at_once():
    for got in harness.run(_concurrent_groups, env=SMALL_SLOTS):
        for k, t in enumerate(got):
            n = 5000 + 7 * k
            expected = value(0, torch.float32, n, salt=k) + value(1, torch.float32, n, salt=k)
            assert torch.equal(t, expected), k


TIMEOUT_S = 30


def _dies_mid_collective(rank):
    import datetime
    import threading

    harness.init("accl", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    # 128 MiB in 256-byte chunks: about 5 us a chunk on the 2-core machine, so seconds of
    # collective (16 MiB finished before a peer dying at 0.3 s did, on a quiet machine).
    x = torch.ones(1 << 25, device=harness.device())
    if rank == 1:
        threading.Timer(0.2, harness.exit_now).start()
    start = time.monotonic()
    try:
        dist.all_reduce(x)
        x.cpu()
        message = "no error"
    except RuntimeError as e:
        message = str(e)
    return time.monotonic() - start, message


def test_a_peer_dying_mid_collective_fails_it_at_once():
    (elapsed, message), exited = harness.run(_dies_mid_collective, env=SMALL_SLOTS,
                                              fresh=True, timeout=90)
    assert exited == ("exited", 0)
    assert "accl: accl::allreduce failed on rank 0 (shm)" in message, message
    assert "rank 1 died" in message, message
    assert elapsed < TIMEOUT_S / 2, elapsed

