"""accinte tensors shared between processes, as CUDA tensors are with
torch.multiprocessing: the receiver gets the sender's device memory (a
handle, not a copy), and an interprocess event orders the receiver's stream
after the work the sender had queued, so sending never waits for the device.

torch.accinte._sleep(ms) queues a kernel that keeps the current stream busy,
which makes the ordering visible.
"""

import time

import torch
import torch.multiprocessing as mp

TIMEOUT = 60


def receiver(inbox, outbox):
    torch.zeros(1, device="accinte")  # the device is ready before the sender's timing starts
    outbox.put("ready")
    x = inbox.get(timeout=TIMEOUT)
    # The current stream waits for the sender's queued work: the sum sees it.
    outbox.put(("sum", x.sum().item()))
    x.add_(1)  # written in place, in the sender's memory
    torch.accinte.synchronize()
    outbox.put("written")
    assert inbox.get(timeout=TIMEOUT) == "done"  # x is released once the sender is done


def main():
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=receiver, args=(inbox, outbox))
    child.start()
    try:
        assert outbox.get(timeout=TIMEOUT) == "ready"
        x = torch.arange(1000.0, device="accinte")
        torch.accinte._sleep(300)  # the current stream is busy for 300 ms...
        x.mul_(2)  # ...and the doubling is queued behind it
        start = time.perf_counter()
        inbox.put(x)  # pickled by the queue's thread: a handle and an event
        kind, total = outbox.get(timeout=TIMEOUT)
        waited = time.perf_counter() - start
        print(f"the receiver's sum: {total:.0f}, after {waited * 1000:.0f} ms")
        assert kind == "sum" and total == 2 * sum(range(1000)) and waited >= 0.25

        assert outbox.get(timeout=TIMEOUT) == "written"
        seen = x.cpu()
        print("the sender sees the receiver's write:", seen[:4].tolist())
        assert torch.equal(seen, torch.arange(1000.0) * 2 + 1)
        inbox.put("done")
        child.join(TIMEOUT)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
    print("accinte tensors are shared across processes as CUDA tensors are")


if __name__ == "__main__":
    main()
