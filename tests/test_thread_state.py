"""Stream kernels see the thread-local state of the thread that launched them
(Note [accinte kernels see their caller's state]).

A CPU kernel registered from Python for the CPU key alone (`observe`) runs,
for an accinte call, through the fallback on the stream's worker thread, and
records there what it sees; each test sets one piece of state on the calling
thread and checks the kernel saw it, and where the state changes results,
that accinte still gives the CPU's answer.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
import torch
import torch.nn.functional as F

import forkserver
from held_stream import hold_stream

SEEN: dict = {}

# A launch latency longer than a loaded machine's stalls (0.2 s; the runtime
# takes up to 1 s): a host thread that synchronizes after a launch comes first
# and runs the work itself, and the worker stops waiting once it has. A wait
# that runs no queue (a collective's) pays it whole, hence not the maximum.
HOST_FIRST = {"ACCINTE_LAUNCH_LATENCY_US": "200000"}


@torch.library.custom_op("accinte_test::observe_state", mutates_args=(), device_types="cpu")
def observe(x: torch.Tensor) -> torch.Tensor:
    SEEN.update(
        thread=threading.get_ident(),
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        autocast_cpu=torch.is_autocast_enabled("cpu"),
        autocast_cpu_dtype=torch.get_autocast_dtype("cpu"),
        autocast_accinte=torch.is_autocast_enabled("accinte"),
        autocast_accinte_dtype=torch.get_autocast_dtype("accinte"),
        autocast_cache=torch.is_autocast_cache_enabled(),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        fill_uninitialized=torch.utils.deterministic.fill_uninitialized_memory,
        default_dtype=torch.get_default_dtype(),
        threads=torch.get_num_threads(),
        functionalize_excluded=torch._C._dispatch_tls_is_dispatch_key_excluded(
            torch._C.DispatchKey.Functionalize),
    )
    return x.clone()


@observe.register_fake
def _(x):
    return torch.empty_like(x)


def seen_in_kernel() -> dict:
    SEEN.clear()
    observe(torch.ones(3, device="accinte"))
    # Polled, not synchronized: a synchronisation would run the queued kernel
    # on this thread (Note [accinte a waiting host runs the queue]), and the
    # tests are about the worker's state.
    stream = torch.accinte.current_stream()
    while not stream.query():
        time.sleep(1e-4)
    assert SEEN["thread"] != threading.get_ident(), "the kernel ran on the calling thread"
    return dict(SEEN)


def test_kernel_runs_on_the_worker_with_the_default_state():
    seen = seen_in_kernel()
    assert seen["grad"] and not seen["inference"] and not seen["autocast_cpu"]


def test_a_kernel_run_by_the_waiting_thread_sees_its_launch_state():
    # A synchronisation runs queued kernels on the waiting thread: they see
    # the state of their launch, not the waiter's, which they leave as it was.
    # The worker takes a kernel the host has not come to wait for yet after
    # the launch latency (Note [accinte launch latency]): the host usually
    # comes first, and the test retries until it did.
    x = torch.ones(3, device="accinte")
    for _ in range(1000):
        SEEN.clear()
        with torch.inference_mode():
            observe(x)
        torch.accinte.synchronize()
        if SEEN["thread"] == threading.get_ident():
            break
    else:
        pytest.fail("no synchronisation ran the kernel on the waiting thread")
    assert SEEN["inference"] and not SEEN["grad"]
    assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()


def test_a_waiting_thread_that_runs_another_threads_kernel_keeps_its_thread_count(run_python):
    # A long launch latency leaves the waiting thread the time to come first.
    out = run_python("""
        import threading, torch, torch_accinte
        torch.set_num_threads(2)
        seen = {}

        @torch.library.custom_op("accinte_test::threads_seen", mutates_args=(), device_types="cpu")
        def threads_seen(x: torch.Tensor) -> torch.Tensor:
            seen.update(thread=threading.get_ident(), threads=torch.get_num_threads())
            return x.clone()

        x = torch.ones(3, device="accinte")
        threads_seen(x)  # the first call of the signature, checked at the call
        torch.accinte.synchronize()

        def launch_with_one_thread():
            torch.set_num_threads(1)
            threads_seen(x)  # queued on the default stream, not waited for

        launcher = threading.Thread(target=launch_with_one_thread)
        launcher.start()
        launcher.join()
        torch.accinte.synchronize()
        assert seen == {"thread": threading.get_ident(), "threads": 1}, seen
        assert torch.get_num_threads() == 2, torch.get_num_threads()
        print("ok")
    """, env=HOST_FIRST)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# A host thread that synchronizes may be inside what a worker never is; the
# kernels it runs for the stream must not see it. A long launch latency
# leaves the waiting thread the time to run them.
ABOVE_THE_BACKEND = """
import threading, torch, torch_accinte
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

ran_on = []

@torch.library.custom_op("accinte_test::negated", mutates_args=(), device_types="cpu")
def negated(x: torch.Tensor) -> torch.Tensor:
    ran_on.append(threading.get_ident())
    return torch.neg(x)

class Seen:
    def __init__(self):
        self.ops = []

class LogDispatch(TorchDispatchMode, Seen):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))

class LogFunction(TorchFunctionMode, Seen):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ops.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))

x = torch.arange(64.0, device="accinte")
negated(x)  # the first call of the signature, checked at the call
torch.accinte.synchronize()
for name, scope in [("fake", FakeTensorMode), ("dispatch", LogDispatch),
                    ("function", LogFunction)]:
    for _ in range(3):
        y = negated(x) * 2 + 1
        mode = scope()
        with mode:
            torch.accinte.synchronize()
        assert ran_on[-1] == threading.get_ident(), name
        assert not getattr(mode, "ops", []), (name, mode.ops)
        assert torch.equal(y.cpu(), -torch.arange(64.0) * 2 + 1), name
# Starting the profiler can outlast the launch latency on a loaded machine
# (then the worker runs the kernel, and the case is not made): a first
# profile warms it up, and the case is made again until the host ran it.
with profile(activities=[ProfilerActivity.CPU]):
    pass
for attempt in range(5):
    y = negated(x)
    with profile(activities=[ProfilerActivity.CPU]) as recording:
        torch.accinte.synchronize()
    if ran_on[-1] == threading.get_ident():
        break
assert ran_on[-1] == threading.get_ident(), "the worker ran it every time"
names = [e.name for e in recording.events()]
assert "aten::neg" not in names, names
print("ok")
"""


def test_kernels_a_waiting_thread_runs_see_none_of_its_modes(run_python):
    out = run_python(ABOVE_THE_BACKEND, env=HOST_FIRST)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_grad_mode():
    with torch.no_grad():
        assert not seen_in_kernel()["grad"]
    assert seen_in_kernel()["grad"]


def test_inference_mode_state():
    with torch.inference_mode():
        seen = seen_in_kernel()
    assert seen["inference"] and not seen["grad"]
    assert not seen_in_kernel()["inference"]


# The operators that failed on the worker with "Inplace update to inference
# tensor outside InferenceMode" before kernels carried the caller's state.
INFERENCE_CALLS = {
    "embedding": lambda d: F.embedding(torch.tensor([0, 2, 1], device=d),
                                       torch.arange(12.).reshape(4, 3).to(d)),
    "index_select": lambda d: torch.arange(12.).reshape(4, 3).to(d).index_select(
        0, torch.tensor([3, 0], device=d)),
    "nonzero": lambda d: torch.tensor([[0., 1.], [2., 0.]], device=d).nonzero(),
    "layer_norm": lambda d: F.layer_norm(torch.arange(12.).reshape(4, 3).to(d), (3,)),
    "masked_select": lambda d: torch.arange(6.).to(d)[torch.arange(6).to(d) % 2 == 0],
    "in_place": lambda d: torch.arange(6.).to(d).mul_(3).add_(1),
}


@pytest.mark.parametrize("name", sorted(INFERENCE_CALLS))
def test_inference_mode_ops_match_cpu(name):
    with torch.inference_mode():
        expected = INFERENCE_CALLS[name]("cpu")
        got = INFERENCE_CALLS[name]("accinte")
        assert got.is_inference()
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


def test_autocast_state():
    with torch.autocast("cpu", dtype=torch.float16):
        seen = seen_in_kernel()
    assert seen["autocast_cpu"] and seen["autocast_cpu_dtype"] == torch.float16
    with torch.autocast("accinte", dtype=torch.float16, cache_enabled=False):
        seen = seen_in_kernel()
    assert seen["autocast_accinte"] and seen["autocast_accinte_dtype"] == torch.float16
    assert not seen["autocast_cache"] and not seen["autocast_cpu"]
    seen = seen_in_kernel()
    assert not seen["autocast_accinte"] and seen["autocast_cache"]


def test_excluded_dispatch_keys():
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)
    with torch._C._ExcludeDispatchKeyGuard(keys):
        assert seen_in_kernel()["functionalize_excluded"]
    assert not seen_in_kernel()["functionalize_excluded"]


def test_deterministic_algorithms():
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert seen_in_kernel()["deterministic"]
        # index_put_ with accumulate takes its sorting path when deterministic.
        index = torch.tensor([0, 1, 0, 3, 1])
        values = torch.tensor([0.1, 1e8, 0.2, 3.0, -1e8])
        expected = torch.zeros(4).index_put_((index,), values, accumulate=True)
        got = torch.zeros(4, device="accinte").index_put_(
            (index.to("accinte"),), values.to("accinte"), accumulate=True)
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    finally:
        torch.use_deterministic_algorithms(before)
    assert not seen_in_kernel()["deterministic"]


def test_default_dtype():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert seen_in_kernel()["default_dtype"] == torch.float64
    finally:
        torch.set_default_dtype(before)


def _set_fill(mode):
    torch.utils.deterministic.fill_uninitialized_memory = mode  # a module property


# Process-wide settings (Note [accinte kernels and process-wide settings]):
# (set it, what the kernel saw of it, the value set, the value to restore).
PROCESS_SETTINGS = {
    "use_deterministic_algorithms": (torch.use_deterministic_algorithms,
                                     "deterministic", True, False),
    "warn_only": (lambda on: torch.use_deterministic_algorithms(True, warn_only=on),
                  "deterministic_warn_only", True, False),
    "set_deterministic_debug_mode": (lambda on: torch.set_deterministic_debug_mode(
        "error" if on else "default"), "deterministic", True, False),
    "fill_uninitialized_memory": (lambda on: _set_fill(not on), "fill_uninitialized",
                                  False, True),
    "set_default_dtype": (lambda on: torch.set_default_dtype(
        torch.float64 if on else torch.float32), "default_dtype", torch.float64, torch.float32),
}


@pytest.mark.parametrize("name", sorted(PROCESS_SETTINGS))
def test_a_queued_kernel_runs_under_the_process_settings_of_its_launch(name):
    # One value for the process: the setter waits for the queued kernel, which
    # would otherwise read the value set after its launch. The held stream
    # keeps the kernel queued until the setter is called.
    set_it, key, value, restored = PROCESS_SETTINGS[name]
    x = torch.ones(3, device="accinte")
    observe(x)  # the first call of the signature, checked at the call
    torch.accinte.synchronize()
    set_it(True)
    try:
        with hold_stream(timeout=1):
            SEEN.clear()
            observe(x)  # queued behind the held kernel
            set_it(False)  # waits for it
        torch.accinte.synchronize()
        assert SEEN[key] == value
    finally:
        set_it(False)
        torch.use_deterministic_algorithms(False)
    assert seen_in_kernel()[key] == restored


def test_intra_op_thread_count():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert seen_in_kernel()["threads"] == 1
    finally:
        torch.set_num_threads(before)
    assert seen_in_kernel()["threads"] == before


def test_flush_denormal():
    tiny = torch.tensor([1e-39, 1.0])  # a float32 denormal
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    try:
        expected = tiny * 3
        got = tiny.to("accinte") * 3
        assert expected[0] == 0
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    finally:
        torch.set_flush_denormal(False)
    assert (tiny.to("accinte") * 3).cpu()[0] != 0



# Every kind of CPU-computed kernel runs in one scope (Note [accinte one
# kernel scope], csrc/emulation/CpuKernel.cpp): whichever thread runs it, it
# sees the state of the thread that launched it, and nothing of a thread that
# waits for it. Each kind is launched outside any mode, then waited for
# inside one: by synchronize(), which runs the queue on the waiting thread
# (a long launch latency keeps the worker away), or by polling query(),
# which leaves the work to the worker. One child interpreter per runner
# checks every kind in turn and prints a JSON line: each kind's "ok" or its
# traceback.
EVERY_KERNEL_KIND = """
import json, sys, tempfile, threading, traceback, torch, torch_accinte
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

runner, kinds = sys.argv[1], sys.argv[2:]
ran_on = []

@torch.library.custom_op("accinte_test::marker", mutates_args=(), device_types="cpu")
def marker(x: torch.Tensor) -> torch.Tensor:
    ran_on.append(threading.get_ident())
    return x.clone()

class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))

g = torch.Generator().manual_seed(0)
x = torch.randn(4, 3, 16, 16, generator=g)
w = torch.randn(8, 3, 3, 3, generator=g)
v = torch.randn(4096, generator=g)
xd, wd, vd = x.to("accinte"), w.to("accinte"), v.to("accinte")

# (launch, expected): a call that queues one kernel of `kind`, and its CPU result.
def kernel(kind):
    if kind == "collective":
        if not dist.is_initialized():
            dist.init_process_group("accl", init_method="file://" + tempfile.mktemp(), rank=0,
                                    world_size=1)
        def launch():
            t = vd.clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))  # scales with CPU operators
            return t
        return launch, v * 0.5
    if kind == "compiled":
        compiled = torch.compile(lambda a: (a * 2 + 1).sin())
        return (lambda: compiled(vd)), compiled(v)
    return {
        "convolution": (lambda: F.conv2d(xd, wd), F.conv2d(x, w)),
        "copy": (lambda: vd.to(torch.float64), v.to(torch.float64)),
        "custom_op": (lambda: torch.ops.accinte.custom_abs(vd), v.abs()),
    }[kind]

def wait(stream):
    if runner == "host":
        torch.accinte.synchronize()
    else:
        while not stream.query():
            pass

def check(kind):
    launch, expected = kernel(kind)
    scopes = {
        "dispatch": Count,
        "autocast": lambda: torch.autocast("cpu", dtype=torch.bfloat16),
        "inference": torch.inference_mode,
    }
    for _ in range(2):  # the first call of a signature may be checked at the call
        launch()
    torch.accinte.synchronize()
    stream = torch.accinte.current_stream()
    for name, scope in scopes.items():
        made = 0
        # On a loaded machine the host may reach synchronize() after the
        # launch latency, and the worker runs the work: the host's case is
        # then not made, and is made again (at most 20 tries for 3 cases).
        for _ in range(20 if runner == "host" else 3):
            y = launch()
            marker(vd)  # records which thread ran the stream's work
            mode = scope()
            with mode:
                wait(stream)
            waited_here = ran_on[-1] == threading.get_ident()
            assert runner == "host" or not waited_here, (name, runner)
            assert not getattr(mode, "ops", []), (name, mode.ops)
            assert torch.equal(y.cpu(), expected), name
            made += waited_here == (runner == "host")
            if made == 3:
                break
        assert made == 3, (name, runner, made)
    # The other way round: launched inside inference mode, run outside it. The
    # kernel writes inference tensors, which it may do only inside the mode.
    with torch.inference_mode():
        y = launch()
        marker(vd)
    wait(stream)
    assert torch.equal(y.cpu(), expected)

results = {}
for kind in kinds:
    try:
        check(kind)
        results[kind] = "ok"
    except Exception:
        results[kind] = traceback.format_exc()
        torch.accinte.synchronize()
print(json.dumps(results))
"""
KERNEL_KINDS = ["convolution", "copy", "custom_op", "collective", "compiled"]
LAUNCH_VARIABLES = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                    "LOCAL_WORLD_SIZE", "NODE_RANK"}


@pytest.fixture(scope="module")
def kinds_checked_by():
    """runner -> {kind: "ok" or the child's traceback}, one child per runner, run at
    the first test that asks for the runner."""
    checked = {}

    def results(runner: str) -> dict:
        if runner not in checked:
            latency = HOST_FIRST["ACCINTE_LAUNCH_LATENCY_US"] if runner == "host" else "20"
            # Without the launch variables a library's DDP run (Lightning's) may
            # have left in this worker: the child's group is its own, of one rank.
            env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARIABLES
                   and not k.startswith(("ACCL_", "TORCHELASTIC_", "GROUP_"))}
            out = forkserver.run_python(["-c", runner, *KERNEL_KINDS], EVERY_KERNEL_KIND,
                                        {**env, "ACCINTE_LAUNCH_LATENCY_US": latency}, 600)
            assert out.returncode == 0, out.stderr[-3000:]
            checked[runner] = json.loads(out.stdout.strip().splitlines()[-1])
        return checked[runner]

    return results


@pytest.mark.parametrize("runner", ["host", "worker"])
@pytest.mark.parametrize("kind", KERNEL_KINDS)
def test_every_kernel_kind_runs_in_its_launchers_state_whoever_runs_it(kinds_checked_by, kind,
                                                                       runner):
    result = kinds_checked_by(runner)[kind]
    assert result == "ok", result
