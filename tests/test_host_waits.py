"""Host waits and Python: no deadlock between the host and the stream workers.

A host thread that waits for the device releases the GIL (Note [accinte host
waits and the GIL]), and a stream worker never destroys what a kernel owned
(Note [accinte kernels release on the host]). Each scenario runs in a child
interpreter with a timeout, so a deadlock fails its test instead of hanging
the suite.
"""

import subprocess

import pytest

TIMEOUT = 90  # seconds; every scenario takes a few on a loaded 2-core machine


def finishes(run_python, source):
    try:
        out = run_python(source, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"deadlock: the child was still waiting after {TIMEOUT}s")
    assert out.returncode == 0, out.stderr
    return out.stdout


# Waits PyTorch's bindings make while holding the GIL: a storage copy to the
# host, a storage copy between devices and a storage resize.
GIL_HELD_WAITS = """
def storage_cpu(y):
    return y.untyped_storage().cpu()[:4].tolist()

def storage_copy(y):
    return torch.UntypedStorage(y.untyped_storage().nbytes()).copy_(y.untyped_storage())[:4].tolist()

def storage_resize(y):
    s = y.clone().untyped_storage()
    s.resize_(s.nbytes() + 4)
    return s.nbytes()

WAITS = [storage_cpu, storage_copy, storage_resize]
"""


def test_waits_that_hold_the_gil_finish_after_a_kernel_owning_a_host_tensor(run_python):
    # The queued add owns the only reference to a CPU tensor whose Python
    # object C++ keeps alive; the host then waits without releasing the GIL.
    out = finishes(run_python, "import torch\n" + GIL_HELD_WAITS + """
y = torch.zeros(4, device="accinte")
for wait in WAITS:
    torch.accinte._sleep(100)       # the add runs after the Python object is gone
    y.add_(torch.tensor(1.0))
    wait(y)
print(y.cpu().tolist())
""")
    assert out.split("\n")[-2] == "[3.0, 3.0, 3.0, 3.0]"


def test_kernels_release_host_tensors_on_a_host_thread(run_python):
    out = finishes(run_python, """
import threading, weakref, torch
y = torch.zeros(4, device="accinte")
released_on = []
for _ in range(3):
    torch.accinte._sleep(50)
    t = torch.tensor(2.0)
    weakref.finalize(t, lambda: released_on.append(threading.get_ident()))
    y.add_(t)
    del t                          # the kernel now holds the last reference
    torch.accinte.synchronize()
assert released_on == [threading.get_ident()] * 3, (released_on, threading.get_ident())
print(y.cpu().tolist())
""")
    assert out.strip() == "[6.0, 6.0, 6.0, 6.0]"


def test_waits_release_the_gil_for_a_kernel_written_in_python(run_python):
    # A CPU kernel registered from Python runs on the stream worker and needs
    # the GIL there: every kind of host wait must let it have it.
    out = finishes(run_python, "import time, torch\n" + GIL_HELD_WAITS + """
lib = torch.library.Library("host_wait_probe", "DEF")
lib.define("slow_add_one(Tensor x) -> Tensor")
def slow_add_one(x):
    time.sleep(0.05)
    return x + 1
lib.impl("slow_add_one", slow_add_one, "CPU")
lib.impl("slow_add_one", lambda x: torch.empty_like(x), "Meta")
x = torch.zeros(4, device="accinte")
others = [lambda y: y.sum().item(), lambda y: y.cpu(), lambda y: torch.accinte.synchronize(),
          lambda y: torch.accinte.current_stream().synchronize(),
          lambda y: torch.accinte.current_stream().record_event().synchronize()]
for wait in WAITS + others:
    for _ in range(2):                  # the first call of a signature is synchronous
        y = torch.ops.host_wait_probe.slow_add_one(x)
        wait(y)
print(y.cpu().tolist())
""")
    assert out.strip() == "[1.0, 1.0, 1.0, 1.0]"


def test_sparse_adam_state_dict_round_trip(run_python):
    # PyTorch's test_optim pattern (test_state_dict_deterministic) for
    # SparseAdam: a CPU learning-rate tensor feeds device kernels, and the
    # state dict is deep-copied into a second optimizer that must follow the
    # first step for step.
    out = finishes(run_python, """
import copy, torch
from torch.nn import Parameter
def fwd_bwd(opt, w, b, i):
    opt.zero_grad()
    loss = (w.mv(i) + b).pow(2).sum()
    loss.backward()
    w.grad, b.grad = w.grad.to_sparse(), b.grad.to_sparse()
    return loss
torch.manual_seed(0)
for kwargs in [{"lr": torch.tensor(0.001)}, {"lr": 0.01, "maximize": True}]:
    w = Parameter(torch.randn(2, 3, device="accinte"))
    b = Parameter(torch.randn(2, device="accinte"))
    i = torch.randn(3, requires_grad=True, device="accinte")
    opt = torch.optim.SparseAdam([w, b], **kwargs)
    for _ in range(3):
        opt.step(lambda: fwd_bwd(opt, w, b, i))
    with torch.no_grad():
        wc, bc = Parameter(w.clone()), Parameter(b.clone())
    optc = torch.optim.SparseAdam([wc, bc], **kwargs)
    optc.load_state_dict(copy.deepcopy(opt.state_dict()))
    for _ in range(3):
        opt.step(lambda: fwd_bwd(opt, w, b, i))
        optc.step(lambda: fwd_bwd(optc, wc, bc, i))
        assert torch.equal(w.cpu(), wc.cpu()) and torch.equal(b.cpu(), bc.cpu())
print("ok")
""")
    assert out.strip() == "ok"


def test_synchronisation_stress_while_kernels_free_python_owned_tensors(run_python):
    # Several threads queue kernels that own the last reference to host
    # tensors with Python objects, and wait in every way at once.
    out = finishes(run_python, "import threading, torch\n" + GIL_HELD_WAITS + """
waits = WAITS + [lambda y: y.sum().item(), lambda y: y.cpu(), lambda y: torch.accinte.synchronize(),
                 lambda y: torch.accinte.current_stream().synchronize(),
                 lambda y: torch.accinte.current_stream().record_event().synchronize()]
errors = []
def worker(seed):
    try:
        stream = torch.accinte.Stream()
        with torch.accinte.stream(stream):
            y = torch.zeros(64, device="accinte")
            for step in range(40):
                host = torch.tensor(1.0)
                host.tag = step          # a Python object C++ must keep alive
                y.add_(host).add_(torch.tensor(1.0))
                del host
                waits[(seed + step) % len(waits)](y)
            assert y.cpu().eq(80).all(), y.cpu()
    except BaseException as e:
        errors.append(repr(e))
threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print("ok")
""")
    assert out.strip() == "ok"
