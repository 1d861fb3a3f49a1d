"""accinte time / CPU time, per workload, measured interleaved in one run.

Each workload is timed on the CPU and on accinte alternately, `--repeats`
times; every accinte run ends with torch.accinte.synchronize(). The table
shows the medians and their ratio, with the issue's target for it.

    python benchmarks/bench.py [--repeats N] [--quick] [--only NAME]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch
from torch import nn

MiB = 2**20


# LITERALINCLUDE START: TESTING BENCHMARK TIMING
def timed(fn: Callable[[], None], device: str, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    if device == "accinte":
        torch.accinte.synchronize()
    return (time.perf_counter() - start) / inner
# LITERALINCLUDE END: TESTING BENCHMARK TIMING


def training_step(model_fn, input_fn, device: str):
    torch.manual_seed(0)
    model = model_fn().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = (t.to(device) for t in input_fn())

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def workloads(quick: bool):
    def small_op(device):
        x = torch.ones(16, device=device)
        return lambda: x.add_(1)

    def add_4m(device):
        a, b = torch.randn(4 * MiB, device=device), torch.randn(4 * MiB, device=device)
        return lambda: a + b

    def matmul(device):
        a = torch.randn(1024, 1024, device=device)
        return lambda: a @ a

    def mlp(device):
        return training_step(
            lambda: nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)),
            lambda: (torch.randn(256, 512), torch.randint(0, 10, (256,))), device)

    def cnn(device):
        return training_step(
            lambda: nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                  nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                  nn.Flatten(), nn.Linear(32, 10)),
            lambda: (torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))), device)

    def transformer(device):
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
                self.encoder = nn.TransformerEncoder(layer, 2)
                self.head = nn.Linear(128, 10)

            def forward(self, x):
                return self.head(self.encoder(x).mean(1))

        return training_step(Classifier, lambda: (torch.randn(16, 64, 128),
                                                  torch.randint(0, 10, (16,))), device)

    def item(device):
        x = torch.ones(1, device=device)
        return lambda: x.add_(1).item()

    def sdpa(device):
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(4, 8, 256, 64, generator=g).to(device).requires_grad_()
                   for _ in range(3))

        def forward_backward():
            out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            q.grad = k.grad = v.grad = None
            out.sum().backward()

        return forward_backward

    def h2d(device):
        src = torch.randn(16 * MiB)  # 64 MiB
        return (lambda: src.to("accinte")) if device == "accinte" else (lambda: src.clone())

    def d2h(device):
        src = torch.randn(16 * MiB, device=device)
        return (lambda: src.to("cpu")) if device == "accinte" else (lambda: src.clone())

    # name, factory, inner iterations, target ratio
    table = [
        ("small in-place op (16 elements)", small_op, 2000, 1.5),
        ("in-place op + .item() round trip", item, 2000, 2.0),
        ("add, 4M elements", add_4m, 20, 1.10),
        ("matmul 1024x1024", matmul, 5, 1.10),
        ("MLP training step", mlp, 10, 1.10),
        ("CNN training step", cnn, 5, 1.10),
        ("Transformer training step", transformer, 5, 1.0),
        ("SDPA forward+backward (causal)", sdpa, 5, 1.05),
        ("copy 64 MiB host->device", h2d, 5, 1.05),
        ("copy 64 MiB device->host", d2h, 5, 1.05),
    ]
    if quick:
        table = [(n, f, max(1, i // 5), t) for n, f, i, t in table]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="fewer iterations, for tests")
    parser.add_argument("--only", default="", help="run the workloads whose name contains this")
    args = parser.parse_args()

    print(f"{'workload':34} {'cpu':>10} {'accinte':>10} {'ratio':>7} {'target':>7}")
    for name, factory, inner, target in workloads(args.quick):
        if args.only not in name:
            continue
        fns = {device: factory(device) for device in ("cpu", "accinte")}
        for device, fn in fns.items():  # warm up: caches, allocator, Meta results
            timed(fn, device, inner)
        samples = {"cpu": [], "accinte": []}
        for _ in range(args.repeats):
            for device, fn in fns.items():
                samples[device].append(timed(fn, device, inner))
        cpu, acc = (statistics.median(samples[d]) for d in ("cpu", "accinte"))
        ratio = acc / cpu
        mark = "" if ratio <= target else "  (over target)"
        print(f"{name:34} {cpu * 1e3:8.3f}ms {acc * 1e3:8.3f}ms {ratio:6.2f}x {target:6.2f}x{mark}")


if __name__ == "__main__":
    main()
