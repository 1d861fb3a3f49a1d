"""torch.distributed on accinte against Gloo on the CPU, on 2 processes, as
ratios measured interleaved in one run.

- all_reduce bus bandwidth, 1 KiB to 64 MiB of float32: accl on accinte
  tensors against Gloo on CPU tensors of the same size (target: accl >= 0.95x
  Gloo's bandwidth). Both ranks share this host, so accl moves the bytes with
  its shm engine (shared memory, csrc/distributed/ShmEngine.h); the "on gloo"
  column is accl with ACCL_ENGINE=gloo, Gloo's own algorithm on the device
  memory with no copies, against Gloo on the CPU; the "check" column is
  accl's time over its time in a group made with ACCL_AGREEMENT_CHECK=0, what
  the ranks' agreement check costs (csrc/distributed/Agreement.h);
- a DDP training step (an MLP, 64 samples per rank): DDP on accinte over accl
  against DDP on the CPU over Gloo (target: <= 1.10x the time).

Both ranks join one group, "cpu:gloo,accinte:accl", so each collective
reaches Gloo or accl by the device of its tensors; the sides alternate
`--repeats` times (each repeat in a rotated order) and the table shows medians.
Every accinte timing ends with torch.accinte.synchronize(). Each rank uses one
CPU thread for operators.

The all_reduce rows also show a control: Gloo on CPU tensors in a second Gloo
group, against the first, measured the same way. Both run the same code on the
same bytes, so the control's distance from 1.00x is the noise floor of the
Gloo side of that row. Between 256 KiB and 4 MiB on 2 cores it is wide (and so
is "on gloo"'s, which rides the same transport); the shm engine does not go
through it. There Gloo's TCP
transport stalls a collective for a scheduler tick (4 ms at HZ=250) whenever
its I/O thread busy-polls a socket whose lock another of its threads holds
while preempted (gloo/transport/tcp: Pair::handleEvents only try-locks, and
epoll reports the unread data again at once), and how often that happens
depends on where the scheduler puts each group's threads.

    python benchmarks/bench_distributed.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

WORLD_SIZE = 2
KiB, MiB = 2**10, 2**20
SIZES = [KiB * 4**i for i in range(9)]  # 1 KiB .. 64 MiB
QUICK_SIZES = [KiB, MiB]


def timed(fn, device: torch.device, inner: int) -> float:
    """Seconds per call of ``fn``, both ranks starting together."""
    dist.barrier()
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    if device.type == "accinte":
        torch.accinte.synchronize()
    return (time.perf_counter() - start) / inner


def interleaved(fns: dict, inner: int, repeats: int) -> dict:
    """Median seconds per call of each fn (keyed by name, valued (device, fn)),
    the fns alternating in an order rotated every repeat, after a warm-up."""
    for device, fn in fns.values():
        timed(fn, device, inner)
    names = list(fns)
    samples = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            device, fn = fns[name]
            samples[name].append(timed(fn, device, inner))
    return {name: statistics.median(s) for name, s in samples.items()}


def accl_group_with(name: str, value: str):
    """Another accl group, made while the environment variable `name` is `value`
    (ACCL_ENGINE=gloo, ACCL_AGREEMENT_CHECK=0: read when a group is made)."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        return dist.new_group(backend="accl")
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def all_reduce_rows(accinte: torch.device, sizes: list[int], repeats: int):
    """(bytes, Gloo's, accl's, accl-on-Gloo's, unchecked accl's and the control Gloo
    group's bus bandwidth) per size."""
    cpu = torch.device("cpu")
    control = dist.new_group(backend="gloo")  # a second Gloo group: the noise floor
    on_gloo = accl_group_with("ACCL_ENGINE", "gloo")
    unchecked = accl_group_with("ACCL_AGREEMENT_CHECK", "0")
    for nbytes in sizes:
        t = {name: torch.zeros(nbytes // 4, device=d)
             for name, d in (("gloo", cpu), ("accl", accinte), ("on_gloo", accinte),
                             ("unchecked", accinte), ("control", cpu))}
        fns = {"gloo": (cpu, lambda: dist.all_reduce(t["gloo"])),
               "accl": (accinte, lambda: dist.all_reduce(t["accl"])),
               "on_gloo": (accinte, lambda: dist.all_reduce(t["on_gloo"], group=on_gloo)),
               "unchecked": (accinte,
                             lambda: dist.all_reduce(t["unchecked"], group=unchecked)),
               "control": (cpu, lambda: dist.all_reduce(t["control"], group=control))}
        inner = max(2, min(100, 4 * MiB // nbytes))
        seconds = interleaved(fns, inner, repeats)
        # Bus bandwidth as nccl-tests define it: all_reduce moves 2(n-1)/n of
        # the buffer through each rank's link.
        bus = {k: nbytes * 2 * (WORLD_SIZE - 1) / WORLD_SIZE / s for k, s in seconds.items()}
        yield (nbytes, bus["gloo"], bus["accl"], bus["on_gloo"], bus["unchecked"],
               bus["control"])


def ddp_step(device: torch.device, rank: int):
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                      nn.Linear(512, 10)).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(64, 512, generator=g).to(device)
    y = torch.randint(0, 10, (64,), generator=g).to(device)

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def size_name(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes >= MiB else f"{nbytes // KiB} KiB"


def run(rank: int, init_method: str, quick: bool, repeats: int) -> None:
    torch.set_num_threads(1)
    accinte = torch.device("accinte", rank)
    torch.accinte.set_device(accinte)
    dist.init_process_group("cpu:gloo,accinte:accl", init_method=init_method, rank=rank,
                            world_size=WORLD_SIZE)
    show = print if rank == 0 else (lambda *a, **k: None)
    engine = dist.group.WORLD._get_backend(accinte).engine
    show(f"all_reduce, float32, {WORLD_SIZE} processes: bus bandwidth (GB/s)")
    show(f"{'size':>10} {'gloo cpu':>10} {'accl':>10} {'ratio':>7} {'on gloo':>8} "
         f"{'check':>7} {'control':>8} {'target':>7}")
    for nbytes, gloo, accl, on_gloo, unchecked, control in all_reduce_rows(
            accinte, QUICK_SIZES if quick else SIZES, repeats):
        ratio = accl / gloo
        mark = "" if ratio >= 0.95 else "  (under target)"
        show(f"{size_name(nbytes):>10} {gloo / 1e9:10.3f} {accl / 1e9:10.3f} {ratio:6.2f}x "
             f"{on_gloo / gloo:7.2f}x {unchecked / accl:6.2f}x {control / gloo:7.2f}x "
             f"{0.95:6.2f}x{mark}")
    show(f"(accl: its {engine!r} engine; on gloo: accl with ACCL_ENGINE=gloo / Gloo on the CPU; "
         "check: accl's time / accl's with ACCL_AGREEMENT_CHECK=0, what the ranks' agreement "
         "check costs; "
         "control: a second Gloo group on CPU tensors / the first, the noise floor of each row)")

    steps = {d.type: (d, ddp_step(d, rank)) for d in (torch.device("cpu"), accinte)}
    seconds = interleaved(steps, 2 if quick else 10, repeats)
    cpu, acc = seconds["cpu"], seconds["accinte"]
    ratio = acc / cpu
    mark = "" if ratio <= 1.10 else "  (over target)"
    show(f"\n{'DDP training step (MLP)':24} {'gloo cpu':>10} {'accl':>10} {'ratio':>7} {'target':>7}")
    show(f"{'time per step':24} {cpu * 1e3:8.3f}ms {acc * 1e3:8.3f}ms {ratio:6.2f}x {1.10:6.2f}x{mark}")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="two sizes, few iterations, for tests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        init_method = f"file://{Path(tmp) / 'store'}"
        mp.spawn(run, args=(init_method, args.quick, args.repeats), nprocs=WORLD_SIZE)


if __name__ == "__main__":
    main()
