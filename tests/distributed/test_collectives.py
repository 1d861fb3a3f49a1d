"""Every collective of the "accl" backend, by value, on 2 ranks (harness.py).

Each rank makes every rank's input the same way (`value`), so the CPU computes the expected
result itself: the oracle is a CPU reduction of the inputs, never a hard-coded number.
Inputs are small; floats other than float32 hold small integers, so the result is exact
whatever order the engine adds in. Several collectives share one task: a task costs a
process group's start-up."""

import functools

import pytest
import torch
import torch.distributed as dist

from distributed import harness

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool]
N = 6
# The engines that move accl's data: shm is the default for ranks on one host (these);
# the collectives it does not move itself go to Gloo either way.
ENGINES = {"shm": {}, "gloo": {"ACCL_ENGINE": "gloo"}}
# ReduceOp -> the CPU reduction of two ranks' values
CPU_REDUCE = {
    dist.ReduceOp.SUM: torch.add,
    dist.ReduceOp.PRODUCT: torch.mul,
    dist.ReduceOp.MAX: torch.maximum,
    dist.ReduceOp.MIN: torch.minimum,
}


def value(rank, dtype, n=N, salt=0):
    """Rank `rank`'s input, on the CPU (every rank can make every rank's)."""
    g = torch.Generator().manual_seed(977 * salt + rank)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) > 0.5
    if dtype == torch.float32:
        return torch.randn(n, generator=g)
    if dtype.is_floating_point:
        return torch.randint(-8, 9, (n,), generator=g).to(dtype)
    return torch.randint(-50, 50, (n,), generator=g).to(dtype)


def on_device(t):
    return t.to(harness.device())


def dtypes_and_ops(dtypes, ops):
    """Every (dtype, op) pair to check; AVG only on floating dtypes (accl refuses it on others,
    see the refusals below)."""
    return [(dtype, op) for dtype in dtypes for op in ops
            if op != dist.ReduceOp.AVG or dtype.is_floating_point]


def reduced(op, dtype, n=N, salt=0, ranks=range(2)):
    values = [value(r, dtype, n, salt) for r in ranks]
    if op == dist.ReduceOp.AVG:
        return (values[0] + values[1]) / 2
    return functools.reduce(CPU_REDUCE[op], values)


def assert_engine(engine):
    backend = dist.group.WORLD._get_backend(torch.device("accinte"))
    assert backend.engine == engine, f"{backend.engine} moves the data, expected {engine}"


def assert_equal(actual, expected, what):
    assert actual.device == harness.device(), f"{what}: on {actual.device}"
    got = actual.cpu()
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    assert torch.equal(got, expected), f"{what}: {got} != {expected}"


# ---- reductions ----------------------------------------------------------------------


def _all_reduce(rank, engine):
    harness.init("accl")
    assert_engine(engine)
    assert dist.get_backend() == "accl"
    for dtype, op in dtypes_and_ops(DTYPES, [*CPU_REDUCE, dist.ReduceOp.AVG]):
        t = on_device(value(rank, dtype, salt=1))
        assert dist.all_reduce(t, op=op) is None
        assert_equal(t, reduced(op, dtype, salt=1), f"all_reduce {op} {dtype}")


@pytest.mark.parametrize("engine", ENGINES)
def test_all_reduce_every_op_and_dtype(engine):
    harness.run(_all_reduce, engine, env=ENGINES[engine])


def _broadcast_and_reduce(rank, engine):
    harness.init("accl")
    assert_engine(engine)
    for dtype in DTYPES:
        t = on_device(value(rank, dtype, salt=2))
        dist.broadcast(t, src=1)
        assert_equal(t, value(1, dtype, salt=2), f"broadcast {dtype}")
    for dtype, op in dtypes_and_ops(DTYPES, (dist.ReduceOp.SUM, dist.ReduceOp.MAX)):
        t = on_device(value(rank, dtype, salt=3))
        dist.reduce(t, dst=0, op=op)
        if rank == 0:  # elsewhere the buffer's content is unspecified
            assert_equal(t, reduced(op, dtype, salt=3), f"reduce {op} {dtype}")


@pytest.mark.parametrize("engine", ENGINES)
def test_broadcast_and_reduce(engine):
    harness.run(_broadcast_and_reduce, engine, env=ENGINES[engine])


# ---- gathers and scatters ------------------------------------------------------------


def _gathers(rank, engine):
    harness.init("accl")
    assert_engine(engine)
    for dtype in DTYPES:
        mine = on_device(value(rank, dtype, salt=4))
        expected = [value(r, dtype, salt=4) for r in range(2)]
        outs = [torch.empty_like(mine) for _ in range(2)]
        dist.all_gather(outs, mine)
        for r in range(2):
            assert_equal(outs[r], expected[r], f"all_gather {dtype} [{r}]")
        single = torch.empty(2 * N, dtype=dtype, device=harness.device())
        dist.all_gather_into_tensor(single, mine)
        assert_equal(single, torch.cat(expected), f"all_gather_into_tensor {dtype}")
        # NCCL's contract: any output shape with twice the elements
        # (nn.SyncBatchNorm gathers into a (1, 2 * n) tensor).
        row = torch.empty(1, 2 * N, dtype=dtype, device=harness.device())
        dist.all_gather_into_tensor(row, mine)
        assert_equal(row, torch.cat(expected)[None], f"all_gather_into_tensor (1, 2n) {dtype}")
        gathered = [torch.empty_like(mine) for _ in range(2)] if rank == 1 else None
        dist.gather(mine, gathered, dst=1)
        if rank == 1:
            for r in range(2):
                assert_equal(gathered[r], expected[r], f"gather {dtype} [{r}]")
        got = torch.empty_like(mine)
        sources = [on_device(value(r, dtype, salt=5)) for r in range(2)] if rank == 0 else None
        dist.scatter(got, sources, src=0)
        assert_equal(got, value(rank, dtype, salt=5), f"scatter {dtype}")


@pytest.mark.parametrize("engine", ENGINES)
def test_all_gather_gather_scatter(engine):
    harness.run(_gathers, engine, env=ENGINES[engine])


def _reduce_scatters(rank, engine):
    harness.init("accl")
    assert_engine(engine)
    for dtype, op in dtypes_and_ops((torch.float32, torch.bfloat16, torch.float16, torch.int64),
                                    (dist.ReduceOp.SUM, dist.ReduceOp.MAX)):
        # rank r's input: 2 chunks of N; chunk k goes (reduced) to rank k
        full = [value(r, dtype, 2 * N, salt=6) for r in range(2)]
        expected = functools.reduce(CPU_REDUCE[op], full)[rank * N:(rank + 1) * N]
        out = torch.empty(N, dtype=dtype, device=harness.device())
        dist.reduce_scatter(out, list(on_device(full[rank]).chunk(2)), op=op)
        assert_equal(out, expected, f"reduce_scatter {op} {dtype}")
        out = torch.empty(N, dtype=dtype, device=harness.device())
        dist.reduce_scatter_tensor(out, on_device(full[rank]), op=op)
        assert_equal(out, expected, f"reduce_scatter_tensor {op} {dtype}")
    full = [value(r, torch.float32, 2 * N, salt=7) for r in range(2)]
    out = torch.empty(N, device=harness.device())
    dist.reduce_scatter_tensor(out, on_device(full[rank]), op=dist.ReduceOp.AVG)
    assert_equal(out, ((full[0] + full[1]) / 2)[rank * N:(rank + 1) * N], "reduce_scatter AVG")
    # PREMUL_SUM (FSDP2's custom gradient divide factor): inputs scaled, then summed; the
    # input of a reduce_scatter is left as it was.
    for dtype in (torch.float32, torch.bfloat16):
        full = [value(r, dtype, 2 * N, salt=14) for r in range(2)]
        source = on_device(full[rank])
        out = torch.empty(N, dtype=dtype, device=harness.device())
        dist.reduce_scatter_tensor(out, source, op=dist._make_nccl_premul_sum(0.25))
        expected = (full[0] * 0.25 + full[1] * 0.25)[rank * N:(rank + 1) * N]
        assert_equal(out, expected, f"reduce_scatter_tensor PREMUL_SUM {dtype}")
        assert_equal(source, full[rank], "reduce_scatter_tensor PREMUL_SUM input")
        outs = [torch.empty(N, dtype=dtype, device=harness.device())]
        dist.reduce_scatter(outs[0], list(on_device(full[rank]).chunk(2)),
                            op=dist._make_nccl_premul_sum(0.25))
        assert_equal(outs[0], expected, f"reduce_scatter PREMUL_SUM {dtype}")
        t = on_device(full[rank])
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        assert_equal(t, full[0] * 0.5 + full[1] * 0.5, f"all_reduce PREMUL_SUM {dtype}")


@pytest.mark.parametrize("engine", ENGINES)
def test_reduce_scatter_list_and_tensor(engine):
    harness.run(_reduce_scatters, engine, env=ENGINES[engine])


def _all_to_all(rank):
    harness.init("accl")
    for dtype in DTYPES:
        # rank r sends chunk k of its input to rank k
        inputs = [value(r, dtype, 2 * N, salt=8) for r in range(2)]
        expected = torch.cat([inputs[r][rank * N:(rank + 1) * N] for r in range(2)])
        out = torch.empty(2 * N, dtype=dtype, device=harness.device())
        dist.all_to_all_single(out, on_device(inputs[rank]))
        assert_equal(out, expected, f"all_to_all_single even {dtype}")
        outs = [torch.empty(N, dtype=dtype, device=harness.device()) for _ in range(2)]
        dist.all_to_all(outs, list(on_device(inputs[rank]).chunk(2)))
        assert_equal(torch.cat(outs), expected, f"all_to_all {dtype}")
    # Uneven: rank r sends (r + 1) elements to rank 0 and (2 - r) to rank 1.
    send_splits = [[1, 2], [2, 1]]
    inputs = [value(r, torch.float32, 3, salt=9) for r in range(2)]
    pieces = [list(inputs[r].split(send_splits[r])) for r in range(2)]
    expected = torch.cat([pieces[r][rank] for r in range(2)])
    recv_splits = [send_splits[r][rank] for r in range(2)]
    out = torch.empty(sum(recv_splits), device=harness.device())
    dist.all_to_all_single(out, on_device(inputs[rank]), recv_splits, send_splits[rank])
    assert_equal(out, expected, "all_to_all_single uneven")


def test_all_to_all_even_and_uneven():
    harness.run(_all_to_all)


# ---- point to point ------------------------------------------------------------------


def _point_to_point(rank):
    harness.init("accl")
    peer = 1 - rank
    for dtype in DTYPES:
        if rank == 0:
            dist.send(on_device(value(0, dtype, salt=10)), dst=1)
        else:
            got = torch.empty(N, dtype=dtype, device=harness.device())
            assert dist.recv(got, src=0) == 0
            assert_equal(got, value(0, dtype, salt=10), f"send/recv {dtype}")
    # Any source: recv() says who sent.
    if rank == 1:
        dist.send(on_device(value(1, torch.float32, salt=11)), dst=0)
    else:
        got = torch.empty(N, device=harness.device())
        assert dist.recv(got) == 1
        assert_equal(got, value(1, torch.float32, salt=11), "recv from any rank")
    # A ring in which every rank sends before it receives: batch_isend_irecv posts
    # both in one kernel; done one by one, each send would wait for a receive behind it.
    big = 1 << 16  # large enough that Gloo does not complete the send on its own
    mine = on_device(value(rank, torch.float32, big, salt=12))
    got = torch.empty(big, device=harness.device())
    ops = [dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, got, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert_equal(got, value(peer, torch.float32, big, salt=12), "batch_isend_irecv ring")
    # isend/irecv in the order that matches: rank 0 sends first, rank 1 receives first.
    got = torch.empty(N, dtype=torch.int64, device=harness.device())
    if rank == 0:
        works = [dist.isend(on_device(value(0, torch.int64, salt=13)), 1),
                 dist.irecv(got, 1)]
    else:
        works = [dist.irecv(got, 0), dist.isend(on_device(value(1, torch.int64, salt=13)), 0)]
    for w in works:
        w.wait()
    assert_equal(got, value(peer, torch.int64, salt=13), "isend/irecv")


def test_send_recv_and_a_batched_ring():
    harness.run(_point_to_point)


# ---- barrier, objects, coalesced forms ----------------------------------------------------


def _barrier_and_objects(rank):
    harness.init("accl")
    dist.barrier()
    objs = [None, None]
    dist.all_gather_object(objs, {"rank": rank, "list": list(range(rank + 2))})
    assert objs == [{"rank": 0, "list": [0, 1]}, {"rank": 1, "list": [0, 1, 2]}]
    sent = ["from zero", 42] if rank == 0 else [None, None]
    dist.broadcast_object_list(sent, src=0)
    assert sent == ["from zero", 42]
    gathered = [None, None] if rank == 1 else None
    dist.gather_object(("r", rank), gathered, dst=1)
    if rank == 1:
        assert gathered == [("r", 0), ("r", 1)]
    out = [None]
    dist.scatter_object_list(out, [{"to": 0}, {"to": 1}] if rank == 0 else None, src=0)
    assert out == [{"to": rank}]
    dist.barrier()


def test_barrier_and_object_collectives():
    harness.run(_barrier_and_objects)


def _coalesced(rank, engine):
    from torch.distributed.distributed_c10d import _coalescing_manager, _get_default_group

    harness.init("accl")
    assert_engine(engine)
    group = _get_default_group()
    dev = harness.device()
    backend = group._get_backend(dev)
    assert backend.supports_coalescing
    # FSDP2's forms, called directly on the group.
    ins = [on_device(value(rank, torch.float32, 4, salt=20)),
           on_device(value(rank, torch.bfloat16, 2, salt=21))]
    outs = [torch.empty(8, device=dev), torch.empty(4, dtype=torch.bfloat16, device=dev)]
    group.allgather_into_tensor_coalesced(outs, ins).wait()
    assert_equal(outs[0], torch.cat([value(r, torch.float32, 4, salt=20) for r in range(2)]),
                 "allgather_into_tensor_coalesced f32")
    assert_equal(outs[1], torch.cat([value(r, torch.bfloat16, 2, salt=21) for r in range(2)]),
                 "allgather_into_tensor_coalesced bf16")
    full = [[value(r, torch.float32, 8, salt=22) for r in range(2)],
            [value(r, torch.int64, 4, salt=23) for r in range(2)]]
    ins = [on_device(f[rank]) for f in full]
    outs = [torch.empty(4, device=dev), torch.empty(2, dtype=torch.int64, device=dev)]
    opts = dist.ReduceScatterOptions()
    opts.reduceOp = dist.ReduceOp.SUM
    group.reduce_scatter_tensor_coalesced(outs, ins, opts).wait()
    for k, f in enumerate(full):
        expected = (f[0] + f[1]).chunk(2)[rank]
        assert_equal(outs[k], expected, f"reduce_scatter_tensor_coalesced [{k}]")
    # The coalescing manager's fast paths (all_reduce, all_gather_into_tensor,
    # reduce_scatter_tensor) and its device path (startCoalescing/endCoalescing).
    ts = [on_device(value(rank, torch.float32, 3, salt=30 + k)) for k in range(3)]
    with _coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    for k, t in enumerate(ts):
        assert_equal(t, reduced(dist.ReduceOp.SUM, torch.float32, 3, salt=30 + k),
                     f"coalesced all_reduce [{k}]")
    mine = [on_device(value(rank, torch.float16, 2, salt=40 + k)) for k in range(2)]
    outs = [torch.empty(4, dtype=torch.float16, device=dev) for _ in range(2)]
    with _coalescing_manager():
        for o, m in zip(outs, mine):
            dist.all_gather_into_tensor(o, m)
    for k, o in enumerate(outs):
        assert_equal(o, torch.cat([value(r, torch.float16, 2, salt=40 + k) for r in range(2)]),
                     f"coalesced all_gather_into_tensor [{k}]")
    ts = [on_device(value(rank, torch.float32, 2, salt=50 + k)) for k in range(2)]
    with _coalescing_manager(device=dev):
        for t in ts:
            dist.broadcast(t, src=1)
    for k, t in enumerate(ts):
        assert_equal(t, value(1, torch.float32, 2, salt=50 + k), f"coalesced broadcast [{k}]")


@pytest.mark.parametrize("engine", ENGINES)
def test_coalesced_forms(engine):
    harness.run(_coalesced, engine, env=ENGINES[engine])


# ---- refusals ------------------------------------------------------------------------


def _gather_with_lists(count):
    # dist.gather passes one output list on the root and none elsewhere; the process group
    # object takes any number.
    dev = harness.device()
    options = dist.GatherOptions()
    options.rootRank = 0
    lists = [[torch.empty(2, device=dev) for _ in range(2)] for _ in range(count)]
    dist.distributed_c10d._get_default_group().gather(lists, [torch.ones(2, device=dev)],
                                                      options)


def _refusals(rank):
    harness.init("accl")
    dev = harness.device()
    t = torch.ones(4, 4, device=dev)
    messages = []
    for call in (
        lambda: dist.all_reduce(t.t()),                                  # non-contiguous
        lambda: dist.all_reduce(torch.ones(3)),                          # a CPU tensor
        lambda: dist.all_reduce(torch.ones(3, dtype=torch.int64, device=dev),
                                op=dist.ReduceOp.AVG),                   # AVG on integers
        lambda: dist.all_reduce(torch.ones(3, dtype=torch.float8_e4m3fn, device=dev)),
        lambda: dist.all_gather_into_tensor(torch.empty(5, device=dev),
                                            torch.ones(3, device=dev)),  # wrong size
        lambda: dist.reduce(torch.ones(2, device=dev), 0,
                            op=dist._make_nccl_premul_sum(2.0)),        # PREMUL_SUM: reduce
        lambda: dist.all_to_all_single(torch.empty(4, device=dev), torch.ones(4, device=dev),
                                       [2, 2], [3, 2]),                  # splits != size
        lambda: _gather_with_lists(2),                                   # 2 lists, every rank
    ):
        with pytest.raises((RuntimeError, ValueError)) as info:
            call()
        messages.append(str(info.value).splitlines()[0])
    # The group still works after every refusal.
    x = torch.full((2,), rank + 1.0, device=dev)
    dist.all_reduce(x)
    assert x.cpu().tolist() == [3.0, 3.0]
    return messages


def test_bad_calls_are_refused_at_the_call():
    every_rank = harness.run(_refusals)
    messages = every_rank[0]
    assert "tensors must be contiguous" in messages[0]
    assert "No backend type associated with device type cpu" in messages[1]  # PyTorch's
    assert "ReduceOp.AVG needs a floating-point tensor" in messages[2]
    assert "Float8_e4m3fn is not supported by the" in messages[3]  # gloo or shm engine
    assert "has 5 elements, expected 6" in messages[4]
    assert "reduce: this reduction is not supported" in messages[5]
    assert "input split sizes add up to 5, but the input tensor's first dimension is 4" in \
        messages[6]
    for messages in every_rank:  # the root and the other rank alike
        assert "gather takes at most one list of output tensors per process, got 2" in \
            messages[7]


def _roots_out_of_range(rank):
    harness.init("accl")
    dev = harness.device()
    t = torch.full((4,), rank + 1.0, device=dev)
    messages = []
    for call in (
        lambda: dist.broadcast(t, src=2),  # c10d passes a WORLD rank through unchecked
        lambda: dist.broadcast(t, src=-1),
        lambda: dist.reduce(t, dst=5),
        lambda: dist.gather(t, None, dst=3),
        lambda: dist.scatter(t, None, src=7),
    ):
        with pytest.raises(RuntimeError) as info:
            call()
        messages.append(str(info.value).splitlines()[0])
    # Refused at the call, on every rank alike: the group still works, `t` is untouched.
    assert t.cpu().tolist() == [rank + 1.0] * 4
    dist.all_reduce(t)
    assert t.cpu().tolist() == [3.0] * 4
    return messages


@pytest.mark.parametrize("engine", ENGINES)
def test_a_root_that_is_no_rank_of_the_group_is_refused(engine):
    # Before the check the shm engine read rank 2's slot past its segment (SIGSEGV).
    for messages in harness.run(_roots_out_of_range, env=ENGINES[engine]):
        for name, root in (("broadcast", 2), ("broadcast", -1), ("reduce", 5),
                           ("gather", 3), ("scatter", 7)):
            assert f"accl: {name}: root rank {root} is not a rank of this group of 2 (0 to 1)" \
                in messages.pop(0)
