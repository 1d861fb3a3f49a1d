"""torch.compile on accinte: compiled accinte / compiled CPU and compiled accinte /
eager accinte, per workload, measured interleaved in one run.

Each workload is built three times (compiled on the CPU, compiled on accinte,
eager on accinte), compiled and warmed up, then timed alternately `--repeats`
times; every accinte run ends with torch.accinte.synchronize(). The table shows
the medians and the two ratios with the issue's targets (compiled accinte
within 1.05x of compiled CPU; compiled faster than eager on accinte for the
GPT block), in wall time and in the process's CPU time (all its threads:
the host thread, the stream workers, their OpenMP teams). On a loaded
machine wall time is mostly waiting for a core; CPU time is what the work
costs there.

    python benchmarks/bench_compile.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch
from torch import nn


def timed(fn: Callable[[], None], device: str, inner: int) -> tuple[float, float]:
    """Seconds per run of `fn`: (wall time, the process's CPU time)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(inner):
        fn()
    if device == "accinte":
        torch.accinte.synchronize()
    return (time.perf_counter() - start) / inner, (time.process_time() - start_cpu) / inner


class GPTBlock(nn.Module):
    """LayerNorm, causal self-attention, GELU MLP, residuals."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def build(kind: str, device: str, compiled: bool, quick: bool) -> Callable[[], None]:
    """One workload on `device`, compiled or eager, as a no-argument callable."""
    torch.manual_seed(0)
    dim, length = (64, 32) if quick else (256, 128)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 10)).to(device)
        x, y = torch.randn(256, 512, device=device), torch.randint(0, 10, (256,), device=device)
    else:
        model = GPTBlock(dim, 4).to(device)
        x = torch.randn(8, length, dim, device=device)
    run = torch.compile(model) if compiled else model
    if kind == "gpt forward":
        def forward():
            with torch.no_grad():
                run(x)
        return forward
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        out = run(x)
        loss = nn.functional.cross_entropy(out, y) if kind == "mlp" else out.square().mean()
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="small shapes, for tests")
    args = parser.parse_args()
    table = [("GPT block forward", "gpt forward", 10), ("GPT block training step", "gpt step", 5),
             ("MLP training step", "mlp", 10)]
    print(f"{'workload':24} {'cpu comp':>9} {'acc comp':>9} {'acc eager':>9} "
          f"{'comp/cpu':>9} {'comp/eager':>10}   {'CPU time: comp/cpu':>18} {'comp/eager':>10}")
    for name, kind, inner in table:
        inner = 1 if args.quick else inner
        fns = {("cpu", True): build(kind, "cpu", True, args.quick),
               ("accinte", True): build(kind, "accinte", True, args.quick),
               ("accinte", False): build(kind, "accinte", False, args.quick)}
        for (device, _), fn in fns.items():  # compiles, then warms caches and allocators
            timed(fn, device, 2)
            timed(fn, device, inner)
        samples = {key: [] for key in fns}
        for _ in range(args.repeats):
            for (device, compiled), fn in fns.items():
                samples[(device, compiled)].append(timed(fn, device, inner))
        wall = [statistics.median(w for w, _ in samples[k]) for k in fns]
        cpu_time = [statistics.median(c for _, c in samples[k]) for k in fns]
        print(f"{name:24} {wall[0] * 1e3:7.2f}ms {wall[1] * 1e3:7.2f}ms {wall[2] * 1e3:7.2f}ms "
              f"{wall[1] / wall[0]:8.2f}x {wall[1] / wall[2]:9.2f}x   "
              f"{cpu_time[1] / cpu_time[0]:17.2f}x {cpu_time[1] / cpu_time[2]:9.2f}x")


if __name__ == "__main__":
    main()
