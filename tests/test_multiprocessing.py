"""Sharing accinte tensors between processes (torch_accinte/accinte/reductions.py
over the runtime's acIpc* calls): the receiver maps the same device memory.

Spawned children take a few seconds each (they import torch), so the
cross-process behaviours are grouped into few children."""

import contextlib
import gc
import multiprocessing.reduction
import os

import pytest
import torch
import torch.multiprocessing as mp

from held_stream import hold_stream

TIMEOUT = 60
pickler = multiprocessing.reduction.ForkingPickler


def round_trip(obj):
    return pickler.loads(pickler.dumps(obj))


def allocated_after_collect():
    """memory_allocated once dead storages are freed and shares no receiver
    holds are let go (torch.accinte.ipc_collect)."""
    gc.collect()
    torch.accinte.ipc_collect()
    return torch.accinte.memory_allocated()


@contextlib.contextmanager
def spawned(target):
    """A spawned child running target(inbox, outbox); yields (inbox, outbox)
    and, on leaving normally, checks the child exited cleanly. Killed if
    still alive when the block fails."""
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=target, args=(inbox, outbox))
    child.start()
    try:
        yield inbox, outbox
        child.join(TIMEOUT)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()


# ---- in one process: the reducers themselves --------------------------------------


def test_accinte_tensors_travel_as_handles_not_copies():
    t = torch.arange(6.0, device="accinte:1")
    data = pickler.dumps(torch.zeros(1 << 16, device="accinte"))
    assert len(data) < 2048  # no data inside
    pickler.loads(data)  # received, so the share's reference is released
    back = round_trip(t[2:5])
    assert back.device == torch.device("accinte:1") and back.storage_offset() == 2
    # In the exporting process itself the cached storage comes back.
    assert back.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    back.fill_(-1)
    assert t.cpu().tolist() == [0, 1, -1, -1, -1, 5]


def test_views_and_storages_keep_sharing():
    t = torch.zeros(4, device="accinte")
    a, view, storage = round_trip([t, t[1:], t.untyped_storage()])
    assert a.untyped_storage().data_ptr() == view.untyped_storage().data_ptr() \
        == storage.data_ptr()
    assert torch.accinte._is_accinte_storage_impl(storage)


def test_parameters_and_grad_flags_survive():
    p = torch.nn.Parameter(torch.ones(3, device="accinte"))
    back = round_trip(p)
    assert isinstance(back, torch.nn.Parameter) and back.requires_grad
    assert round_trip(torch.ones(2, device="accinte", requires_grad=True)).requires_grad


def test_empty_tensors_and_storages():
    assert round_trip(torch.empty(0, device="accinte:1")).device == torch.device("accinte:1")
    assert round_trip(torch.UntypedStorage(0, device="accinte")).nbytes() == 0


def test_non_leaf_tensors_are_refused():
    x = torch.ones(2, device="accinte", requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="detach"):
        pickler.dumps(x)


def test_a_shared_storage_is_kept_until_its_receiver_releases_it():
    # Note [IPC reference counts]: a handle in flight holds the sender's block.
    before = allocated_after_collect()
    t = torch.ones(1 << 16, device="accinte")
    block = t.untyped_storage().nbytes()
    data = pickler.dumps(t)
    del t
    assert allocated_after_collect() == before + block  # not received yet: kept
    back = pickler.loads(data)  # the receiver (this process: the cached storage)
    assert back.sum().item() == 1 << 16
    del back
    assert allocated_after_collect() == before  # released by both sides


def test_cpu_tensors_still_use_torch_reducers():
    t = torch.zeros(3)
    back = round_trip(t)
    assert back.device.type == "cpu" and t.is_shared()


# ---- ordering: the share's IPC event (Note [Sharing across processes]) --------------


def test_sharing_waits_for_no_stream():
    t = torch.arange(4.0, device="accinte")
    side = torch.accinte.Stream()
    with torch.accinte.stream(side), hold_stream(timeout=10) as other:
        with torch.accinte.stream(torch.accinte.default_stream()):
            data = pickler.dumps(t)  # another stream of the device is held
        assert other.held()
    assert pickler.loads(data).cpu().tolist() == [0, 1, 2, 3]  # received: released
    with hold_stream(timeout=10) as current:
        data = pickler.dumps(t.abs())  # queued behind the held kernel, and so is the event
        assert current.held()
    assert pickler.loads(data).cpu().tolist() == [0, 1, 2, 3]


def test_the_receivers_current_stream_waits_for_the_senders():
    x = torch.arange(-4.0, 4.0, device="accinte")
    t = torch.zeros(8, device="accinte")
    receiver = torch.accinte.Stream()
    with hold_stream(timeout=10) as hold:
        torch.abs(x, out=t)  # queued behind the held kernel
        data = pickler.dumps(t)
        with torch.accinte.stream(receiver):
            back = pickler.loads(data)  # this process's own storage, from the cache
            copy = back.clone()  # queued on the receiver's stream, after the event
            assert not receiver.query()  # it waits for the held stream
        assert hold.held()
    receiver.synchronize()  # the copy was written on the receiver's stream
    assert copy.cpu().tolist() == [4, 3, 2, 1, 0, 1, 2, 3]


def test_a_forked_child_of_the_sender_leaves_the_share_events_alone():
    # The child inherits the shares the sender keeps (storage and event) but
    # owns neither: dropping them there must not call the runtime, which
    # refuses every call in a forked child and would warn for each event.
    from torch_accinte.accinte import reductions

    t = torch.arange(4.0, device="accinte")
    data = pickler.dumps(t)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.dup2(write, 2)  # what the child warns (c10 warnings go to stderr here)
        reductions._sent.clear()
        gc.collect()
        os.write(2, b"done")
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as child_stderr:
        said = child_stderr.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert said == b"done"
    assert pickler.loads(data).cpu().tolist() == [0, 1, 2, 3]  # the event still opens here


def _child_reads_queued_work(inbox, outbox):
    torch.zeros(1, device="accinte")  # initialised before the sender holds its stream
    outbox.put("ready")
    t = inbox.get(timeout=TIMEOUT)
    outbox.put(("waiting", torch.accinte.current_stream().query()))
    outbox.put(t.cpu().tolist())


def test_another_process_sees_work_the_sender_queued():
    with spawned(_child_reads_queued_work) as (inbox, outbox):
        x = torch.arange(-4.0, 4.0, device="accinte")
        t = torch.zeros(8, device="accinte")
        assert outbox.get(timeout=TIMEOUT) == "ready"
        with hold_stream(timeout=TIMEOUT) as hold:
            torch.abs(x, out=t)  # queued behind the held kernel
            inbox.put(t)  # the queue's thread pickles it on its current (default) stream
            # The receiver's stream waits for the event recorded after the abs.
            assert outbox.get(timeout=TIMEOUT) == ("waiting", False)
            assert hold.held()
        assert outbox.get(timeout=TIMEOUT) == [4, 3, 2, 1, 0, 1, 2, 3]


# ---- across processes --------------------------------------------------------------


def _child_exchange(inbox, outbox):
    t, view = inbox.get(timeout=TIMEOUT)
    outbox.put(("received", t.cpu().tolist(), view.untyped_storage().data_ptr()
                == t.untyped_storage().data_ptr(), str(t.device)))
    view.add_(100)  # the child writes ...
    torch.accinte.synchronize(view.device)  # the tensor's device
    outbox.put("child wrote")
    assert inbox.get(timeout=TIMEOUT) == "parent wrote"
    outbox.put(("child sees", t.cpu().tolist()))
    outbox.put(("back", t))  # and sends the tensor home
    assert inbox.get(timeout=TIMEOUT) == "done"


def test_parent_and_child_see_each_others_writes():
    with spawned(_child_exchange) as (inbox, outbox):
        t = torch.arange(4.0, device="accinte:1")
        inbox.put((t, t[1:3]))
        assert outbox.get(timeout=TIMEOUT) == ("received", [0, 1, 2, 3], True, "accinte:1")
        assert outbox.get(timeout=TIMEOUT) == "child wrote"
        assert t.cpu().tolist() == [0, 101, 102, 3]
        t.mul_(2)  # the parent writes ...
        torch.accinte.synchronize(t.device)  # the tensor's device
        inbox.put("parent wrote")
        assert outbox.get(timeout=TIMEOUT) == ("child sees", [0, 202, 204, 6])
        tag, back = outbox.get(timeout=TIMEOUT)
        # Home again: the child's handle is its own, so this is a second
        # mapping of the same memory (see reductions.py), not a copy.
        back[0] = -5.0
        torch.accinte.synchronize(t.device)  # the tensor's device
        assert t.cpu().tolist() == [-5, 202, 204, 6]
        inbox.put("done")


def _child_outlives(inbox, outbox):
    t = inbox.get(timeout=TIMEOUT)
    outbox.put("received")
    assert inbox.get(timeout=TIMEOUT) == "parent freed"
    t.add_(1)
    torch.accinte.synchronize(t.device)  # the tensor's device
    outbox.put(t.cpu().tolist())


def test_memory_lives_until_the_receiver_releases_it_in_strict_mode(run_python):
    # A fresh parent, so that both processes run strict mode: each one's
    # mapping faults on host access outside the runtime's access windows.
    result = run_python("""
        import gc
        import torch, torch.multiprocessing as mp
        from torch_accinte import _C
        from test_multiprocessing import _child_outlives
        if __name__ == "__main__":
            assert _C._is_strict()
            ctx = mp.get_context("spawn")
            inbox, outbox = ctx.Queue(), ctx.Queue()
            child = ctx.Process(target=_child_outlives, args=(inbox, outbox))
            child.start()
            t = torch.full((1000,), 7.0, device="accinte")
            inbox.put(t)
            assert outbox.get(timeout=60) == "received"
            del t  # the parent lets go of its tensor ...
            gc.collect()
            torch.accinte.empty_cache()
            reuse = [torch.zeros(1000, device="accinte") for _ in range(8)]  # and reuses memory
            inbox.put("parent freed")
            assert outbox.get(timeout=60) == [8.0] * 1000
            assert all(r.sum().item() == 0 for r in reuse)
            child.join(60)
            assert child.exitcode == 0
            print("ok")
    """, env={"ACCINTE_STRICT": "1", "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def _child_holds(inbox, outbox):
    t = inbox.get(timeout=TIMEOUT)
    outbox.put("received")
    assert inbox.get(timeout=TIMEOUT) == "write"
    t.fill_(5.0)
    torch.accinte.synchronize()
    outbox.put("wrote")
    assert inbox.get(timeout=TIMEOUT) == "release"
    del t
    gc.collect()
    outbox.put("released")


def test_the_sender_does_not_reuse_memory_a_receiver_holds():
    with spawned(_child_holds) as (inbox, outbox):
        before = allocated_after_collect()
        t = torch.zeros(1000, device="accinte")
        shared_ptr = t.data_ptr()
        inbox.put(t)
        assert outbox.get(timeout=TIMEOUT) == "received"
        del t  # the sender lets go; its caching allocator must not reuse the block
        gc.collect()
        torch.accinte.ipc_collect()
        reuse = [torch.zeros(1000, device="accinte") for _ in range(4)]
        assert shared_ptr not in [r.data_ptr() for r in reuse]
        inbox.put("write")
        assert outbox.get(timeout=TIMEOUT) == "wrote"
        assert all(r.sum().item() == 0 for r in reuse)  # the receiver's writes land elsewhere
        del reuse
        inbox.put("release")
        assert outbox.get(timeout=TIMEOUT) == "released"
    assert allocated_after_collect() == before  # both sides released it


def _child_forks_then_holds(inbox, outbox):
    t = inbox.get(timeout=TIMEOUT)
    pid = os.fork()
    if pid == 0:  # a forked child of the receiver drops the tensor it inherited
        del t
        gc.collect()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    outbox.put(("forked child dropped", os.waitstatus_to_exitcode(status)))
    assert inbox.get(timeout=TIMEOUT) == "release"
    del t
    gc.collect()
    outbox.put("released")


def test_a_forked_child_of_the_receiver_does_not_release_its_reference():
    # The child inherits the receiver's storage and the counter's shared
    # mapping, not the reference: only the receiver may give it back.
    with spawned(_child_forks_then_holds) as (inbox, outbox):
        before = allocated_after_collect()
        t = torch.ones(1 << 16, device="accinte")
        block = t.untyped_storage().nbytes()
        inbox.put(t)
        del t
        assert outbox.get(timeout=TIMEOUT) == ("forked child dropped", 0)
        assert allocated_after_collect() == before + block  # the receiver still holds it
        inbox.put("release")
        assert outbox.get(timeout=TIMEOUT) == "released"
    assert allocated_after_collect() == before


# ---- many shares, few descriptors (Note [IPC event pages]) --------------------------

SHARES = 500
CHILD_DESCRIPTOR_LIMIT = 128  # soft RLIMIT_NOFILE of the child: a budget of 64


def open_descriptors():
    return len(os.listdir("/proc/self/fd"))


def _child_with_few_descriptors(inbox, outbox):
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE,
                       (CHILD_DESCRIPTOR_LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    try:
        received = pickler.loads(inbox.get(timeout=TIMEOUT))
        outbox.put(("received", [t.item() for t in received]))
        sent = pickler.dumps([torch.full((), -float(i), device="accinte") for i in range(SHARES)])
    except RuntimeError as e:
        outbox.put(("failed", str(e)))
        return
    outbox.put(bytes(sent))
    assert inbox.get(timeout=TIMEOUT) == "done"
    outbox.put(open_descriptors())


def test_hundreds_of_shares_fit_in_a_few_descriptors():
    # Each share records an interprocess event, held until the receiver lets
    # go; both sides hold SHARES of them at once, far more than the child's
    # descriptor limit allows one descriptor each.
    with spawned(_child_with_few_descriptors) as (inbox, outbox):
        tensors = [torch.full((), float(i), device="accinte") for i in range(SHARES)]
        before = open_descriptors()
        inbox.put(bytes(pickler.dumps(tensors)))
        assert outbox.get(timeout=TIMEOUT) == ("received", [float(i) for i in range(SHARES)])
        assert open_descriptors() - before < 10  # not one per share
        back = pickler.loads(outbox.get(timeout=TIMEOUT))
        assert [t.item() for t in back] == [-float(i) for i in range(SHARES)]
        del back
        inbox.put("done")
        assert outbox.get(timeout=TIMEOUT) < CHILD_DESCRIPTOR_LIMIT // 2


def test_running_out_of_descriptors_is_a_clear_error(run_python):
    # A soft limit of 32 gives the runtime a budget of 16 descriptors for
    # shareable memory and pages of events: shares past it are refused with
    # an error naming what ran out, files still open, and shares work again
    # once earlier ones are released.
    result = run_python("""
        import multiprocessing.reduction, os, resource
        import torch, torch_accinte
        from torch_accinte import _C
        resource.setrlimit(resource.RLIMIT_NOFILE, (32, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        pickler = multiprocessing.reduction.ForkingPickler
        t = torch.ones(4, device="accinte")
        held = []
        try:
            while True:  # what pickling an accinte tensor does, without the pickling
                held.append(_C._share_storage(t.untyped_storage()))
        except RuntimeError as e:
            assert "acErrorIpcDescriptorsExhausted" in str(e), e
        try:
            pickler.dumps(t)
            raise AssertionError("shared past the descriptor budget")
        except RuntimeError as e:
            print(str(e).split(" (in ")[0])
        os.close(os.open(os.devnull, os.O_RDONLY))
        for shared, _event in held:  # as if received and dropped
            _C._ipc_release_reference(shared[4])
            _C._ipc_free_counter(shared[4])
        del held, _event
        assert pickler.loads(pickler.dumps(t * 2)).tolist() == [2.0] * 4
        print("shares again")
    """, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    message, again = result.stdout.strip().splitlines()
    assert message.startswith("accinte error acErrorIpcDescriptorsExhausted: out of file "
                              "descriptors for IPC"), message
    assert "RLIMIT_NOFILE" in message
    assert again == "shares again"
