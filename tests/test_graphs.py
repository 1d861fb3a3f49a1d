"""Graphs: torch.accelerator.Graph and torch.accinte.graph capture work instead
of running it, and every replay runs it again on the same memory. The CPU is
the oracle."""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_accinte._C as _C

DEV = "accinte"


@pytest.fixture
def side_stream():
    s = torch.accinte.Stream()
    yield s
    torch.accinte.synchronize()


def capture(fn, pool=None, **kwargs):
    """(graph, fn's result) for `fn` captured by torch.accinte.graph."""
    g = torch.accinte.Graph(**kwargs)
    with torch.accinte.graph(g, pool=pool):
        out = fn()
    return g, out


def test_accelerator_graph_is_available_for_accinte():
    assert torch.accelerator.current_accelerator().type == DEV
    torch.accelerator.Graph()  # raises "Graph is not supported" without REGISTER_GRAPH_IMPL


def test_captured_work_runs_only_when_replayed(side_stream):
    x = torch.zeros(4, device=DEV)
    g = torch.accelerator.Graph()
    with torch.accinte.stream(side_stream), g:
        x.add_(1)
    assert torch.equal(x.cpu(), torch.zeros(4))  # recorded, not run
    for i in range(1, 4):
        g.replay()
        assert torch.equal(x.cpu(), torch.full((4,), float(i)))


def test_outputs_follow_inputs_changed_in_place():
    x = torch.randn(64, 32, device=DEV)
    w = torch.randn(32, 16, device=DEV)
    g, y = capture(lambda: torch.relu(x @ w) * 2 + 1)
    for _ in range(3):
        new = torch.randn(64, 32)
        x.copy_(new)
        g.replay()
        torch.testing.assert_close(y.cpu(), torch.relu(new @ w.cpu()) * 2 + 1)


def test_replay_on_another_stream():
    x = torch.arange(8.0, device=DEV)
    g, y = capture(lambda: x * 2 + 1)
    other = torch.accinte.Stream()
    with torch.accinte.stream(other):
        x.fill_(3.0)
        g.replay()
    other.synchronize()
    assert torch.equal(y.cpu(), torch.full((8,), 7.0))
    x.fill_(5.0)  # default stream
    g.replay()
    assert torch.equal(y.cpu(), torch.full((8,), 11.0))


def test_keep_graph_instantiates_on_demand():
    x = torch.ones(4, device=DEV)
    g, y = capture(lambda: x + 1, keep_graph=True)
    g.instantiate()
    g.instantiate()  # again: allowed with keep_graph
    g.replay()
    assert torch.equal(y.cpu(), torch.full((4,), 2.0))


def test_is_current_stream_capturing():
    seen = []
    assert not torch.accinte.is_current_stream_capturing()
    g, _ = capture(lambda: seen.append(torch.accinte.is_current_stream_capturing())
                   or torch.ones(1, device=DEV) + 1)
    assert seen == [True]
    assert not torch.accinte.is_current_stream_capturing()


# ---- a training step ---------------------------------------------------------------


@pytest.mark.parametrize("make_opt", [
    lambda p, on_device: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    # capturable keeps the step count on the device (the CPU does not support it).
    lambda p, on_device: torch.optim.Adam(p, lr=0.01, capturable=on_device),
], ids=["sgd_momentum", "adam_capturable"])
def test_captured_training_step_matches_eager_cpu(make_opt):
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    cpu_opt = make_opt(cpu_model.parameters(), False)
    dev_opt = make_opt(dev_model.parameters(), True)
    batches = [(torch.randn(32, 8), torch.randn(32, 1)) for _ in range(8)]

    def step(model, opt, x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # Warm up on a side stream (optimizer state is created here, not in the capture).
    static_x, static_y = batches[0][0].to(DEV), batches[0][1].to(DEV)
    s = torch.accinte.Stream()
    s.wait_stream(torch.accinte.current_stream())
    with torch.accinte.stream(s):
        for x, y in batches[:2]:
            static_x.copy_(x)
            static_y.copy_(y)
            dev_opt.zero_grad(set_to_none=True)
            step(dev_model, dev_opt, static_x, static_y)
    torch.accinte.current_stream().wait_stream(s)
    for x, y in batches[:2]:
        cpu_opt.zero_grad(set_to_none=True)
        step(cpu_model, cpu_opt, x, y)

    dev_opt.zero_grad(set_to_none=True)
    g = torch.accinte.Graph()
    with torch.accinte.graph(g):
        static_loss = step(dev_model, dev_opt, static_x, static_y)

    for x, y in batches[2:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        cpu_opt.zero_grad(set_to_none=True)
        cpu_loss = step(cpu_model, cpu_opt, x, y)
        torch.testing.assert_close(static_loss.cpu(), cpu_loss.detach(), rtol=1e-4, atol=1e-5)
    for p_dev, p_cpu in zip(dev_model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(), rtol=1e-4, atol=1e-5)


# ---- memory ------------------------------------------------------------------------


MB = 1 << 20
# The `noqa: F821` below: ruff reports a name that a lambda reads as undefined
# when the name is deleted later in the function, even though the lambda runs
# before the `del` (astral-sh/ruff#9858).


def test_graph_memory_stays_reserved_until_reset():
    torch.accinte.empty_cache()
    before = torch.accinte.memory_reserved()
    x = torch.ones(MB, device=DEV)  # 4 MiB
    g, y = capture(lambda: (x + 1) * 2)  # noqa: F821 (the intermediate is freed during capture)
    pool = g.pool()
    held = _C._graph_pool_reserved_bytes(0, pool)
    assert held >= 2 * 4 * MB
    del y  # the output's memory stays with the graph
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, pool) == held
    assert torch.accinte.memory_reserved() >= before + held
    g.reset()
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, pool) == 0
    del x
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved() == before


def test_deleting_the_graph_releases_its_pool():
    torch.accinte.empty_cache()
    before = torch.accinte.memory_reserved()
    x = torch.ones(MB, device=DEV)
    g, y = capture(lambda: x * 3)  # noqa: F821
    pool = g.pool()
    del g
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, pool) > 0  # y still holds its block
    del y, x
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, pool) == 0
    assert torch.accinte.memory_reserved() == before


def test_allocations_outside_capture_never_alias_graph_memory():
    x = torch.randn(1024, device=DEV)
    inner = []

    def body():
        tmp = x * 2  # freed when body returns, still used by every replay
        inner.append(tmp.data_ptr())
        return tmp + 1

    g, y = capture(body)
    capture_stream = torch.accinte.graph._default_capture_streams[0]
    outside = []
    for s in (capture_stream, torch.accinte.current_stream()):
        with torch.accinte.stream(s):
            outside += [torch.full((1024,), 7.0, device=DEV) for _ in range(4)]
    assert inner[0] not in {t.data_ptr() for t in outside}
    assert y.data_ptr() not in {t.data_ptr() for t in outside}
    g.replay()
    torch.testing.assert_close(y.cpu(), x.cpu() * 2 + 1)


def test_graphs_share_a_pool_and_replay_in_capture_order():
    x = torch.ones(256, device=DEV)
    handle = torch.accinte.graph_pool_handle()
    g1, y1 = capture(lambda: x * 2, pool=handle)
    g2, y2 = capture(lambda: y1 + 1, pool=handle)  # noqa: F821
    g3, y3 = capture(lambda: y2 * 10, pool=g2.pool())  # noqa: F821
    assert g1.pool() == g2.pool() == g3.pool() == handle
    for value in (1.0, 4.0):
        x.fill_(value)
        for g in (g1, g2, g3):
            g.replay()
        assert torch.equal(y3.cpu(), torch.full((256,), (value * 2 + 1) * 10))
    held = _C._graph_pool_reserved_bytes(0, handle)
    del y1, y2, y3
    g1.reset()
    g2.reset()
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, handle) == held  # g3 still uses it
    g3.reset()
    torch.accinte.empty_cache()
    assert _C._graph_pool_reserved_bytes(0, handle) == 0


# ---- random numbers ----------------------------------------------------------------


def test_dropout_gives_fresh_masks_per_replay_reproducibly():
    x = torch.ones(4096, device=DEV)
    torch.accinte.manual_seed(123)
    state = torch.accinte.get_rng_state()
    g, y = capture(lambda: F.dropout(x, p=0.5, training=True) + torch.rand(4096, device=DEV))
    assert torch.equal(torch.accinte.get_rng_state(), state)  # capturing draws nothing

    def replays(n):
        out = []
        for _ in range(n):
            g.replay()
            out.append(y.cpu())
        return out

    torch.accinte.manual_seed(7)
    first = replays(3)
    assert not torch.equal(first[0], first[1]) and not torch.equal(first[1], first[2])
    torch.accinte.manual_seed(7)
    assert all(torch.equal(a, b) for a, b in zip(first, replays(3)))
    # Each replay draws what the same operators draw eagerly.
    torch.accinte.manual_seed(7)
    for expected in first:
        eager = F.dropout(x, p=0.5, training=True) + torch.rand(4096, device=DEV)
        assert torch.equal(eager.cpu(), expected)


# ---- errors ------------------------------------------------------------------------


def assert_device_works():
    a = torch.arange(6.0, device=DEV).reshape(2, 3)
    assert torch.equal((a * 2 + 1).sum(0).cpu(), (torch.arange(6.0).reshape(2, 3) * 2 + 1).sum(0))
    g, y = capture(lambda: a + 1)  # and capture again
    g.replay()
    assert torch.equal(y.cpu(), torch.arange(6.0).reshape(2, 3) + 1)


def test_replay_before_capture():
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        torch.accinte.Graph().replay()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        torch.accinte.Graph().pool()


def test_capture_end_without_begin():
    with pytest.raises(RuntimeError, match="without a matching capture_begin"):
        torch.accinte.Graph().capture_end()


def test_capture_on_the_default_stream_is_refused():
    with pytest.raises(RuntimeError, match="non-default stream"):
        with torch.accelerator.Graph():
            pass
    assert_device_works()


def test_capture_on_a_stream_already_capturing(side_stream):
    g1, g2 = torch.accinte.Graph(), torch.accinte.Graph()
    x = torch.ones(2, device=DEV)
    with torch.accinte.stream(side_stream):
        g1.capture_begin()
        y = x + 1
        with pytest.raises(RuntimeError, match="already capturing"):
            g2.capture_begin()
        g1.capture_end()
    g1.replay()
    assert torch.equal(y.cpu(), torch.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="already holds a capture"):
        with torch.accinte.graph(g1):
            pass
    assert_device_works()


def test_capture_end_on_another_stream(side_stream):
    g = torch.accinte.Graph()
    with torch.accinte.stream(side_stream):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="on the stream the capture began on"):
        g.capture_end()
    g.reset()  # abandons the capture
    assert side_stream.query()
    assert_device_works()


@pytest.mark.parametrize("what, call, named", [
    ("synchronize", lambda x: torch.accinte.synchronize(), "acDeviceSynchronize"),
    ("stream synchronize", lambda x: torch.accinte.current_stream().synchronize(),
     "acStreamSynchronize"),
    ("item", lambda x: x.sum().item(), r"Tensor\.item\(\)"),
    ("cpu", lambda x: x.cpu(), "pageable host memory"),
    ("nonzero", lambda x: torch.nonzero(x), "aten::nonzero"),
])
def test_synchronizing_during_capture_is_a_clear_error(what, call, named):
    x = torch.ones(8, device=DEV)
    with pytest.raises(RuntimeError, match="synchronization is not allowed while capturing") as e:
        with torch.accinte.graph(torch.accinte.Graph()):
            y = x * 2
            call(y)
    # capture_end's error names the call, and chains the call's own error.
    assert re.search(named, str(e.value)), str(e.value)
    assert re.search(named, str(e.value.__context__)), str(e.value.__context__)
    assert not torch.accinte.is_current_stream_capturing()
    assert_device_works()


def test_debug_dump_lists_captured_kernels(tmp_path):
    x = torch.ones(4, device=DEV)
    g = torch.accinte.Graph()
    g.enable_debug_mode()
    with torch.accinte.graph(g):
        y = torch.relu(x * 2)
    path = tmp_path / "graph.dot"
    g.debug_dump(str(path))
    text = path.read_text()
    assert "digraph" in text and "aten::mul" in text and "aten::relu" in text
    g.replay()
    assert torch.equal(y.cpu(), torch.full((4,), 2.0))


def test_debug_dump_without_debug_mode_warns(tmp_path):
    g, _ = capture(lambda: torch.ones(1, device=DEV) + 1)
    with pytest.warns(UserWarning, match="debug mode is off"):
        g.debug_dump(str(tmp_path / "none.dot"))
    assert not (tmp_path / "none.dot").exists()


STRICT_SCRIPT = """
import torch, torch.nn.functional as F
x = torch.ones(1000, device="accinte")
g = torch.accinte.Graph()
with torch.accinte.graph(g):
    y = F.dropout(x * 3, p=0.5, training=True)
masks = []
for _ in range(2):
    g.replay()
    masks.append(y.cpu())
assert set(masks[0].unique().tolist()) == {0.0, 6.0}
assert not torch.equal(masks[0], masks[1])
print("ok", torch.accinte._C._is_strict() if hasattr(torch.accinte, "_C") else "")
"""


def test_graphs_in_strict_mode(run_python):
    out = run_python(STRICT_SCRIPT, env={"ACCINTE_STRICT": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


# ---- several streams in one capture --------------------------------------------------


def test_a_capture_forks_into_another_stream_and_joins_back():
    x = torch.arange(8.0, device=DEV)
    s2 = torch.accinte.Stream()
    g = torch.accinte.Graph()
    with torch.accinte.graph(g):
        s1 = torch.accinte.current_stream()
        a = x * 2
        s2.wait_stream(s1)  # s2 joins the capture
        with torch.accinte.stream(s2):
            assert torch.accinte.is_current_stream_capturing()
            b = a + 1  # recorded on s2, after a
            c = torch.zeros(8, device=DEV)  # allocated from the graph's pool
            c.add_(b)
        s1.wait_stream(s2)  # joined back
        d = a + c
    with torch.accinte.stream(s2):
        assert not torch.accinte.is_current_stream_capturing()
    for scale in (1.0, 3.0):
        x.copy_(torch.arange(8.0) * scale)
        g.replay()
        ref = torch.arange(8.0) * scale
        assert torch.equal(d.cpu(), ref * 2 + (ref * 2 + 1))
    assert_device_works()


def test_a_fork_not_joined_back_fails_capture_end():
    x = torch.ones(4, device=DEV)
    s2 = torch.accinte.Stream()
    with pytest.raises(RuntimeError, match="still had work"):
        with torch.accinte.graph(torch.accinte.Graph()):
            s2.wait_stream(torch.accinte.current_stream())
            with torch.accinte.stream(s2):
                x.add_(1)
    with torch.accinte.stream(s2):
        assert not torch.accinte.is_current_stream_capturing()
        x.add_(1)  # s2 runs work again
    s2.synchronize()
    assert torch.equal(x.cpu(), torch.full((4,), 2.0))
    assert_device_works()


def test_only_the_graph_code_includes_the_graph_class():
    # Kernels, allocators, error conversion, the generator and the engine ask
    # about captures through AccInteGraphsUtils.h (c10/cuda's
    # CUDAGraphsC10Utils.h), which depends on streams and the runtime only.
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    includers = sorted(
        str(path.relative_to(root))
        for folder in ("csrc", "torch_accinte/csrc")
        for path in (root / folder).rglob("*")
        if path.suffix in (".h", ".cpp", ".c")
        and "#include <csrc/runtime/AccInteGraph.h>" in path.read_text()
    )
    assert includers == ["csrc/runtime/AccInteGraph.cpp"]
