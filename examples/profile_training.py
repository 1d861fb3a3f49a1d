"""Profiling a training step on accinte with torch.profiler, as on CUDA.

The batch is copied to the device on a side stream (pinned memory,
non_blocking) while the default stream trains; the profiler records the CPU
operators and, through accinte's Kineto plugin, every kernel and copy on the
device, each linked to the operator that launched it. Prints key_averages()
sorted by device time and writes a Chrome trace (open it in
chrome://tracing or https://ui.perfetto.dev).

    python examples/profile_training.py [--trace FILE]
"""

import argparse
import json
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--trace", type=Path, help="where to write the Chrome trace")
args = parser.parse_args()
trace = args.trace or Path(tempfile.mkdtemp()) / "profile_training.json"

torch.manual_seed(0)
device = torch.device("accinte")
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
copy_stream = torch.accinte.Stream()
batches = [(torch.randn(256, 64).pin_memory(), torch.randint(0, 10, (256,)).pin_memory())
           for _ in range(3)]


# LITERALINCLUDE START: PROFILER EXAMPLE STEP
def train_step(x_host, y_host):
    # The copies run on their own stream; the default stream waits for them.
    with torch.accinte.stream(copy_stream):
        x = x_host.to(device, non_blocking=True)
        y = y_host.to(device, non_blocking=True)
    torch.accinte.current_stream().wait_stream(copy_stream)
    # Allocated on copy_stream, used here: without this, the next step's copies
    # could take their memory while this step's backward still reads it.
    x.record_stream(torch.accinte.current_stream())
    y.record_stream(torch.accinte.current_stream())
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


train_step(*batches[0])  # warm-up, outside the trace
torch.accinte.synchronize()  # so the trace holds only the profiled steps' work
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.ACCINTE],
             profile_memory=True) as prof:
    for x_host, y_host in batches[1:]:
        loss = train_step(x_host, y_host)
    print(f"loss {loss.item():.4f}")  # .item() waits for the current stream
print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=12))
prof.export_chrome_trace(str(trace))
# LITERALINCLUDE END: PROFILER EXAMPLE STEP
print(f"Chrome trace written to {trace}")

# What the trace holds: kernels named by operator on one row per stream, the
# copies with their sizes, device time for the matrix products.
events = json.loads(trace.read_text())["traceEvents"]
kernels = [e for e in events if e.get("cat") == "kernel"]
copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
rows = {(e["pid"], e["tid"]) for e in kernels + copies}
assert {"aten::addmm", "aten::mm", "aten::relu"} <= {k["name"] for k in kernels}
assert (0, 0) in rows and (0, copy_stream.stream_id) in rows, rows
assert all("External id" in e["args"] for e in kernels + copies)
assert {c["args"]["bytes"] for c in copies} >= {256 * 64 * 4, 256 * 8}
mm = next(e for e in prof.key_averages() if e.key == "aten::mm")
assert mm.self_device_time_total > 0
print(f"{len(kernels)} kernels and {len(copies)} copies on {len(rows)} stream rows; "
      f"aten::mm used {mm.self_device_time_total:.0f} us of device time")
print("the profiler sees accinte kernels, copies and memory")
