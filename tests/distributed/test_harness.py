"""The two-rank harness itself (harness.py): results in rank order, a failing rank's
traceback, a hung rank bounded by the timeout, a rank that exits on purpose. On CPU tensors
with PyTorch's Gloo, so the harness is checked apart from the accl backend."""

import time

import pytest
import torch
import torch.distributed as dist

from distributed import harness


def _cpu_sum(rank):
    harness.init("gloo")
    t = torch.full((3,), rank + 1.0)
    dist.all_reduce(t)
    return rank, dist.get_world_size(), t


def test_results_come_back_in_rank_order():
    results = harness.run(_cpu_sum)
    assert [r[:2] for r in results] == [(0, 2), (1, 2)]
    assert all(r[2].tolist() == [3.0, 3.0, 3.0] for r in results)


def _fail_on_rank_1(rank):
    if rank == 1:
        raise ValueError("rank one refuses")
    return rank


def test_a_failing_rank_reports_its_traceback():
    with pytest.raises(harness.RankFailure) as info:
        harness.run(_fail_on_rank_1)
    text = str(info.value)
    assert "rank 1: failed" in text and "ValueError: rank one refuses" in text
    assert "_fail_on_rank_1" in text
    # The pool was replaced: the next task runs.
    assert harness.run(_identity) == [0, 1]


def _identity(rank):
    return rank


def _hang_on_rank_0(rank):
    if rank == 0:
        time.sleep(600)
    return rank


def test_a_hung_rank_fails_within_the_timeout():
    start = time.monotonic()
    with pytest.raises(harness.RankFailure, match="rank 0: no report within 4 s"):
        harness.run(_hang_on_rank_0, timeout=4, fresh=True)
    assert time.monotonic() - start < 15


def _exit_on_rank_1(rank):
    if rank == 1:
        harness.exit_now(3)
    return rank


def test_a_rank_that_exits_on_purpose():
    assert harness.run(_exit_on_rank_1, fresh=True) == [0, ("exited", 3)]
