"""Streams and events on accinte, as with torch.cuda: work queued on a stream
runs later, in order, while Python goes on; events mark points in a stream,
time the work between them and order one stream after another.

torch.accinte._sleep(ms) queues a kernel that keeps the current stream busy,
which makes the asynchrony visible.
"""

import time

import torch

device = torch.device("accinte")
main = torch.accinte.current_stream()
side = torch.accinte.Stream()
print("current stream:", main)
print("side stream:   ", side)
assert side != main and main == torch.accinte.default_stream()
torch.accinte.synchronize()

# 1. Launches return at once; the stream stays busy until its work is done.
start = time.perf_counter()
torch.accinte._sleep(300)
x = torch.ones(1000, device=device) * 2  # queued behind the sleep
queued_after = time.perf_counter() - start
busy = not main.query()
total = x.sum().item()  # .item() waits for the stream
waited = time.perf_counter() - start
print(f"sleep and two ops queued in {queued_after * 1000:.1f} ms; stream busy: {busy}; "
      f"result {total} after {waited * 1000:.0f} ms")
assert queued_after < 0.2 and busy and waited >= 0.3 and total == 2000.0

# 2. Timing with events (enable_timing=True), recorded on the current stream.
begin = torch.accinte.Event(enable_timing=True)
end = torch.accinte.Event(enable_timing=True)
begin.record()
torch.accinte._sleep(100)
end.record()
end.synchronize()
elapsed = begin.elapsed_time(end)
print(f"elapsed_time between the events: {elapsed:.1f} ms")
assert 100 <= elapsed < 1000

# 3. A side stream: work on it may run concurrently with the main stream.
#    wait_stream orders it after what the main stream has queued so far.
data = torch.arange(1_000_000, device=device, dtype=torch.float64)
torch.accinte._sleep(200)  # the main stream is busy...
data.mul_(2)  # ...and this is queued behind the sleep
side.wait_stream(main)  # side waits for the sleep and mul_
with torch.accinte.stream(side):
    assert torch.accinte.current_stream() == side
    total_on_side = data.sum()  # queued on the side stream
    ready = torch.accinte.Event()
    ready.record()  # records on the current stream: side
print("side stream busy until the main stream's work is done:", not side.query())
main.wait_event(ready)  # main waits for the side stream's sum
result = total_on_side.item()
print(f"sum computed on the side stream: {result:.0f}")
assert result == float(sum(range(1_000_000)) * 2)

# 4. record_stream: a tensor allocated on one stream and used on another.
#    Without it, freeing the tensor would let its memory be reused by the main
#    stream while the side stream may still read it.
buffer = torch.full((1 << 20,), 3.0, device=device)  # allocated on main
side.wait_stream(main)
with torch.accinte.stream(side):
    torch.accinte._sleep(100)
    partial = buffer.sum()
buffer.record_stream(side)
pointer = buffer.data_ptr()
del buffer  # not handed out again until the side stream's work is done
reused = torch.empty(1 << 20, device=device)
print("freed block reused at once while the side stream used it:", reused.data_ptr() == pointer)
assert reused.data_ptr() != pointer
# .item() waits for the current stream only, as on CUDA: the main stream must
# wait for the side stream's sum before reading it.
main.wait_stream(side)
assert partial.item() == 3.0 * (1 << 20)
torch.accinte.synchronize()
print("streams and events behave as on CUDA")
