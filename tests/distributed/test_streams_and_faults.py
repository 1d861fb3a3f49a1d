"""How accl collectives meet streams, memory and failures (Note [accl collectives],
Note [accl work and streams], Note [accl errors] in csrc/distributed/): asynchrony, stream
order, the Work's Future, inputs freed early, graph capture, a peer that dies, abort, and
DDP's timer. Whether a call waited for the device is told by a stream the test holds
(held_stream.py), never by timing it."""

import datetime
import time
import re
import warnings

import pytest
import torch
import torch.distributed as dist

from distributed import harness
from held_stream import hold_stream

HOLD_S = 15  # a hold_stream() block lets a call that waited through after this long


# ---- asynchrony ----------------------------------------------------------------------


def _async_all_reduce(rank):
    harness.init("accl")
    dev = harness.device()
    x = torch.full((4,), rank + 1.0, device=dev)
    dist.all_reduce(x)  # warm-up: the communication stream and Gloo's pairs exist
    torch.accinte.synchronize()
    torch.accinte.set_device(dev)  # hold_stream() holds the current device's stream
    with hold_stream(timeout=HOLD_S) as hold:  # the current stream is busy
        x.add_(1)  # queued behind the held kernel: the collective must see it
        work = dist.all_reduce(x, async_op=True)
        returned = hold.held()  # the call queued its work instead of waiting
        completed_before = work.is_completed()
        work.wait()  # the stream waits, not the host
        future = work.get_future()
        fut_value = future.wait()
        waited = not hold.held()
    values = x.cpu()  # the host waits here
    completed_after = work.is_completed()
    return (returned, completed_before, waited, [t.device.type for t in fut_value],
            values.tolist(), completed_after, fut_value[0].cpu().tolist())


def test_async_all_reduce_returns_while_the_stream_is_busy():
    for returned, before, waited, fut_devices, values, after, fut_values in harness.run(
            _async_all_reduce):
        assert returned, "all_reduce(async_op=True) waited for the held stream"
        assert before is False
        assert not waited, "Work.wait() or its Future's wait() blocked the host"
        assert fut_devices == ["accinte"]
        assert values == [8.0] * 4 and fut_values == [8.0] * 4  # 2 * ((1 + 2) + 1)
        assert after is True


def _side_stream(rank):
    harness.init("accl")
    dev = harness.device()
    side = torch.accinte.Stream()
    x = torch.zeros(8, device=dev)
    torch.accinte.synchronize()
    with torch.accinte.stream(side):
        torch.accinte._sleep(300)
        x.fill_(rank + 1.0)  # on `side`, behind the sleep
        dist.all_reduce(x)   # ordered after `side`, not after the default stream
        y = x * 2            # on `side` again, after the collective
    side.synchronize()
    # Freed right after the call while the collective waits behind a held stream: the
    # allocator must not hand the input's memory to a new tensor before it ran.
    torch.accinte.set_device(dev)  # hold_stream() holds the current device's stream
    with hold_stream(timeout=HOLD_S) as hold:
        src = torch.full((1024,), rank + 1.0, device=dev)
        out = torch.empty(2048, device=dev)
        src_ptr = src.data_ptr()
        dist.all_gather_into_tensor(out, src, async_op=True)
        del src
        fresh = torch.full((1024,), -7.0, device=dev)  # same size, same stream
        reused = fresh.data_ptr() == src_ptr
        assert hold.held(), "a call waited for the held stream"
    torch.accinte.synchronize()
    return x.cpu().tolist(), y.cpu().tolist(), reused, out.cpu().tolist()


def test_collectives_follow_the_current_stream_and_keep_their_inputs():
    for x, y, reused, out in harness.run(_side_stream):
        assert x == [3.0] * 8 and y == [6.0] * 8
        assert not reused, "the input's block was reused before the collective ran"
        assert out == [1.0] * 1024 + [2.0] * 1024


# ---- graph capture -------------------------------------------------------------------


def _capture(rank):
    harness.init("accl")
    dev = harness.device()
    x = torch.ones(4, device=dev)
    g = torch.accinte.Graph()
    with pytest.raises(RuntimeError) as info:
        with torch.accinte.graph(g):
            dist.all_reduce(x)
    message = str(info.value)
    # A PREMUL_SUM factor on accinte is read with a copy to the host: the collective
    # refuses the capture before that copy would (with a message about copies).
    factor = torch.tensor(0.5, device=dev)
    with pytest.raises(RuntimeError) as info:
        with torch.accinte.graph(torch.accinte.Graph()):
            dist.all_reduce(x, op=dist._make_nccl_premul_sum(factor))
    premul_message = str(info.value)
    x2 = torch.full((2,), rank + 1.0, device=dev)
    dist.all_reduce(x2)  # the group survives the refusal
    return message, premul_message, x2.cpu().tolist()


def test_a_collective_under_graph_capture_is_refused():
    for message, premul_message, after in harness.run(_capture):
        assert "accl::allreduce" in message and "captur" in message
        assert "accl::allreduce" in premul_message and "captur" in premul_message
        assert after == [3.0, 3.0]


# ---- a peer that dies ----------------------------------------------------------------

GROUP_TIMEOUT = 8  # seconds


def _peer_dies(rank):
    harness.init("accl", timeout=datetime.timedelta(seconds=GROUP_TIMEOUT))
    dev = harness.device()
    x = torch.ones(4, device=dev)
    dist.all_reduce(x)
    torch.accinte.synchronize()
    dist.barrier()
    if rank == 1:
        harness.exit_now(0)
    time.sleep(0.5)  # rank 1 is gone
    start = time.monotonic()
    errors = []
    called = None
    try:
        work = dist.all_reduce(x, async_op=True)
        called = time.monotonic() - start
        # The next synchronisations: wait() (if the failure is known by then) or
        # reading the result on the host.
        work.wait()
        x.cpu()
        errors.append("no error at the synchronisation")
    except RuntimeError as e:
        errors.append(str(e))
    failed_after = time.monotonic() - start
    try:
        dist.all_reduce(torch.ones(1, device=dev))
        errors.append("the broken group accepted another collective")
    except RuntimeError as e:
        errors.append(str(e))
    start = time.monotonic()
    dist.destroy_process_group()
    destroyed = time.monotonic() - start
    torch.ones(2, device=dev).add_(1).cpu()  # the device keeps working
    return called, failed_after, errors, destroyed


def _check_peer_death(result, blocking):
    called, failed_after, errors, destroyed = result
    if blocking:
        assert called is None, "ACCINTE_LAUNCH_BLOCKING=1: the error must come at the call"
    else:
        assert called is not None and called < 2.0, f"the call blocked {called} s"
    assert failed_after < GROUP_TIMEOUT + 5, f"failed after {failed_after:.1f} s"
    assert re.search(r"accl: accl::allreduce failed on rank 0 \((shm|gloo)\)", errors[0]), errors[0]
    assert "broke when an earlier collective failed" in errors[1], errors[1]
    assert destroyed < GROUP_TIMEOUT + 5


def _stall_then_die(rank):
    timed_out = _wait_times_out(rank)
    stalled = _peer_stalls(rank)
    dist.destroy_process_group()
    return timed_out, stalled, _peer_dies(rank)


def test_a_stalled_or_dead_peer_fails_the_collective():
    """One set of fresh ranks for all three: Work.wait(timeout) on a collective a peer never
    joins gives up after that timeout; a peer that stalls (alive, never joining) fails the
    collective after the group's timeout; then, in a new group, a peer that dies fails it at
    the next synchronisation."""
    (timed_out, stalled, died), exited = harness.run(_stall_then_die, fresh=True, timeout=90)
    assert exited == ("exited", 0)
    _check_wait_timeout(timed_out)
    elapsed, message = stalled
    assert re.search(r"accl: accl::allreduce failed on rank 0 \((shm|gloo)\)", message), message
    assert "imed out" in message or "timeout" in message.lower(), message
    assert 2.5 < elapsed < 3 + 5, elapsed
    _check_peer_death(died, blocking=False)


WAIT_TIMEOUT_MS = 1000  # Work.wait(timeout=...), far shorter than the group's timeout


def _wait_with_timeout_in_time(rank):
    harness.init("accl")
    x = torch.full((3,), rank + 1.0, device=harness.device())
    work = dist.all_reduce(x, async_op=True)
    returned = work.wait(timeout=datetime.timedelta(seconds=30))
    completed = work.is_completed()  # the host waited for the collective
    barrier = dist.barrier(async_op=True).wait(timeout=datetime.timedelta(seconds=30))
    # A negative timeout is refused (it used to abort the group); a timeout past the clock's
    # range is none (the deadline used to overflow, and wait() gave up at once). 10**8 days is
    # about the largest pybind11 converts (timedelta.max wraps to a negative duration there).
    work = dist.all_reduce(x, async_op=True)
    try:
        work.wait(timeout=datetime.timedelta(seconds=-1))
        negative = "accepted"
    except RuntimeError as e:
        negative = str(e)
    huge = work.wait(timeout=datetime.timedelta(days=10 ** 8))
    return returned, completed, barrier, negative, huge, x.cpu().tolist()


def test_wait_with_a_timeout_returns_once_the_collective_ended():
    for returned, completed, barrier, negative, huge, values in \
            harness.run(_wait_with_timeout_in_time):
        assert returned is True and completed is True and barrier is True
        assert "Work.wait(timeout) takes a timeout of 0 or more" in negative, negative
        assert "got -1000 ms" in negative, negative
        assert huge is True
        assert values == [6.0, 6.0, 6.0]  # the second all_reduce ran: the group still works


def _wait_times_out(rank):
    harness.init("accl", timeout=datetime.timedelta(seconds=GROUP_TIMEOUT))
    x = torch.ones(4, device=harness.device())
    dist.all_reduce(x)
    x.cpu()
    if rank == 1:
        time.sleep(4)  # alive, but never joins the next collective
        dist.destroy_process_group()  # its connections close: the peer's kernel ends
        return None
    start = time.monotonic()
    work = dist.all_reduce(x, async_op=True)
    try:
        work.wait(timeout=datetime.timedelta(milliseconds=WAIT_TIMEOUT_MS))
        error = ("none", "wait() returned")
    except RuntimeError as e:
        error = (type(e).__name__, str(e))
    elapsed = time.monotonic() - start
    try:
        dist.all_reduce(torch.ones(1, device=harness.device()))
        refused = "the group accepted another collective"
    except RuntimeError as e:
        refused = str(e)
    # wait() gave up and aborted the group: the shm engine's stalled kernel fails within a
    # nap (Gloo's only once rank 1's connections close, or at the group's timeout), and so
    # does the check queued on the current stream behind wait().
    start = time.monotonic()
    try:
        torch.accinte.synchronize()
        drained = "no error"
    except RuntimeError as e:
        drained = str(e)
    drained_after = time.monotonic() - start
    dist.destroy_process_group()
    return elapsed, error, refused, (drained, drained_after)


def _check_wait_timeout(result):
    elapsed, (kind, message), refused, (drained, drained_after) = result
    assert kind == "DistBackendError", (kind, message)
    assert (f"accl: accl::allreduce on rank 0 timed out in Work.wait(timeout="
            f"{WAIT_TIMEOUT_MS} ms)") in message, message
    assert WAIT_TIMEOUT_MS / 1000 <= elapsed < WAIT_TIMEOUT_MS / 1000 + 3, elapsed
    assert "broke when an earlier collective failed" in refused, refused
    assert "timed out in Work.wait" in refused, refused
    assert "a kernel reported failure" in drained, drained
    # Rank 1 leaves 4 s after the start: without the abort reaching the shm wait, the
    # device drained ~3 s after wait() gave up.
    assert drained_after < 1.0, drained_after


def test_a_dead_peer_fails_the_collective_at_the_call_with_launch_blocking():
    result, _ = harness.run(_peer_dies, fresh=True, timeout=90,
                            env={"ACCINTE_LAUNCH_BLOCKING": "1"})
    _check_peer_death(result, blocking=True)


def _peer_stalls(rank):
    harness.init("accl", timeout=datetime.timedelta(seconds=3))
    x = torch.ones(4, device=harness.device())
    dist.all_reduce(x)
    x.cpu()
    if rank == 1:
        time.sleep(5)  # alive, but never joins the next collective
        return None, None
    start = time.monotonic()
    work = dist.all_reduce(x, async_op=True)
    try:
        work.wait()  # the current stream waits for the collective: reading x waits for it
        x.cpu()
        message = "no error"
    except RuntimeError as e:
        message = str(e)
    return time.monotonic() - start, message


def _abort(rank):
    from torch.distributed.distributed_c10d import _abort_process_group

    harness.init("accl")
    x = torch.ones(2, device=harness.device())
    dist.all_reduce(x)
    torch.accinte.synchronize()
    _abort_process_group()
    assert not dist.is_initialized()
    harness.init("accl")  # a new group works
    dist.all_reduce(x)
    return x.cpu().tolist()


def test_abort_releases_the_group():
    assert harness.run(_abort) == [[4.0, 4.0]] * 2


# ---- DDP's timer -----------------------------------------------------------------------


def _ddp_timer(rank):
    from torch.nn.parallel import DistributedDataParallel as DDP

    harness.init("accl")
    dev = harness.device()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(dev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ddp = DDP(model)
        for _ in range(2):
            ddp(torch.randn(3, 4, device=dev)).sum().backward()
    data = ddp._get_ddp_logging_data()
    return [str(w.message) for w in caught], {k: v for k, v in data.items() if "time" in k}


def test_ddp_times_accinte_without_warning():
    for messages, timings in harness.run(_ddp_timer):
        assert not [m for m in messages if "Time stats" in m], messages
        assert timings.get("avg_backward_compute_time", 0) > 0, timings
        assert timings.get("avg_backward_comm_time", 0) > 0, timings


# ---- ranks that disagree ----------------------------------------------------------------


def _disagree(rank, case):
    harness.init("accl")
    dev = harness.device()
    calls = {
        "size": lambda: dist.all_reduce(torch.ones(1024 * (rank + 1), device=dev)),
        "dtype": lambda: dist.all_reduce(
            torch.ones(64, device=dev, dtype=torch.float32 if rank == 0 else torch.float64)),
        "collective": lambda: (dist.all_reduce(torch.ones(64, device=dev)) if rank == 0
                               else dist.broadcast(torch.ones(64, device=dev), src=0)),
    }
    try:
        # Raised at the next synchronisation, or at the call when the collective's
        # kernel has already failed by the time work.wait() asks (NCCL's too).
        calls[case]()
        torch.accinte.synchronize()
        return "accepted"
    except RuntimeError as error:
        message = str(error)
    try:
        dist.all_reduce(torch.ones(4, device=dev))
        after = "usable"
    except RuntimeError as error:
        after = str(error)
    return message, after


@pytest.mark.parametrize("engine", ["shm", "gloo"])
@pytest.mark.parametrize("case", ["size", "dtype", "collective"])
def test_ranks_that_disagree_fail_the_collective_on_every_rank(case, engine):
    # Note [accl ranks agree before they move data]: no rank accepts.
    results = harness.run(_disagree, case, env={"ACCL_ENGINE": engine}, fresh=True)
    for rank, result in enumerate(results):
        assert result != "accepted", f"rank {rank} accepted a collective the others refused"
        message, after = result
        assert "did not call the same collective" in message, message
        assert "rank 0: " in message and "rank 1: " in message, message
        assert "broke" in after, after
    if case == "size":
        assert "1024 elements" in results[0][0] and "2048 elements" in results[0][0]
    if case == "dtype":
        assert "Float" in results[0][0] and "Double" in results[0][0]
