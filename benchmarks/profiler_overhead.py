"""What the profiler costs the small-op workload, measured interleaved in one run.

Times `x.add_(1)` on a 16-element accinte tensor (bench.py's small-op row) in
child interpreters that stay alive for the whole run and are asked for one
sample each in turn:

  baseline     another built checkout (--baseline, e.g. one without activity
               records), profiler off
  off          this checkout, profiler off
  cpu-only     this checkout inside torch.profiler.profile(activities=[CPU])
  device       this checkout inside profile(activities=[CPU, PrivateUse1])

and prints each median and its ratio to "off". "off / baseline" is the cost
of the activity hooks while nothing is profiled.

    python benchmarks/profiler_overhead.py [--baseline DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, time, torch
from torch.profiler import ProfilerActivity, profile
mode, inner = sys.argv[1], int(sys.argv[2])
activities = {"cpu-only": [ProfilerActivity.CPU],
              "device": [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]}.get(mode)
x = torch.ones(16, device="accinte")

def sample():
    start = time.perf_counter()
    for _ in range(inner):
        x.add_(1)
    torch.accinte.synchronize()
    return (time.perf_counter() - start) / inner

def timed():
    if activities is None:
        return sample()
    with profile(activities=activities):
        return sample()

timed()  # warm-up
for line in sys.stdin:
    print(timed(), flush=True)
"""


def child(checkout: Path, mode: str, inner: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    return subprocess.Popen([sys.executable, "-c", CHILD, mode, str(inner)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another built checkout")
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--inner", type=int, default=2000)
    args = parser.parse_args()

    runs = {"off": (REPO, "off"), "cpu-only": (REPO, "cpu-only"), "device": (REPO, "device")}
    if args.baseline is not None:
        runs = {"baseline": (args.baseline, "off"), **runs}
    children = {name: child(path, mode, args.inner) for name, (path, mode) in runs.items()}
    samples = {name: [] for name in runs}
    try:
        for _ in range(args.repeats):
            for name, proc in children.items():
                proc.stdin.write("\n")
                proc.stdin.flush()
                samples[name].append(float(proc.stdout.readline()))
    finally:
        for proc in children.values():
            proc.stdin.close()
            proc.wait(timeout=60)
    off = statistics.median(samples["off"])
    print(f"{'small in-place op (16 elements)':34} {'median':>10} {'vs off':>7}")
    for name in runs:
        median = statistics.median(samples[name])
        print(f"{name:34} {median * 1e6:8.2f}us {median / off:6.3f}x")


if __name__ == "__main__":
    main()
