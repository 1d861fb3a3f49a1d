"""Python on accinte's streams without deadlocks.

A CPU kernel written in Python runs on accinte like any other: the engine
queues it on the current stream, and the stream's worker thread takes the GIL
to run it. Host code that waits for that stream must therefore not hold the
GIL while it waits, even where PyTorch's bindings keep it (storage copies and
resizes), and kernels never drop Python objects on the worker: what they own
is released on the host. See docs/chapters/streams.md, "Host waits, the GIL
and what kernels own".
"""

import threading
import time
import weakref

import torch

# 1. A CPU kernel written in Python, for an operator of our own.
lib = torch.library.Library("waits_example", "DEF")
lib.define("slow_double(Tensor x) -> Tensor")


def slow_double(x):
    time.sleep(0.05)  # Python, holding the GIL, on whatever thread runs the kernel
    return x * 2


lib.impl("slow_double", slow_double, "CPU")
lib.impl("slow_double", lambda x: torch.empty_like(x), "Meta")

x = torch.arange(4.0, device="accinte")
torch.ops.waits_example.slow_double(x)  # the first call of a signature is checked at the call
start = time.perf_counter()
y = torch.ops.waits_example.slow_double(x)  # later ones are queued: the worker runs Python
queued = time.perf_counter() - start
# UntypedStorage.cpu() waits for the stream inside PyTorch's binding, which
# holds the GIL; accinte releases it for the wait, so the worker can run.
host = y.untyped_storage().cpu()
values = torch.tensor([], dtype=torch.float32).set_(host).tolist()
print(f"queued in {queued * 1000:.1f} ms, then read back through a storage copy: {values}")
assert values == [0.0, 2.0, 4.0, 6.0]

# 2. A host tensor that only a queued kernel still references is released on
# the host (at the next launch or synchronisation), never on the worker.
released_on = []
torch.accinte._sleep(50)
scale = torch.tensor(3.0)
weakref.finalize(scale, lambda: released_on.append(threading.current_thread().name))
z = x.mul(scale)
del scale  # the queued mul holds the last reference
torch.accinte.synchronize()
print(f"the host tensor was released on thread {released_on[0]!r}")
assert released_on == [threading.main_thread().name]
assert z.cpu().tolist() == [0.0, 3.0, 6.0, 9.0]
print("Python kernels and host waits share the GIL without deadlock")
