"""Data-parallel training on accinte with DistributedDataParallel, launched by
torchrun as on any accelerator (see docs/chapters/distributed.md).

One machine, two processes (rank r trains on accinte:r)::

    torchrun --standalone --nproc-per-node=2 examples/distributed_ddp.py

Two "nodes" on one machine, the multi-machine path (run each line in its own
shell; on real machines, give the first node's address instead of 127.0.0.1)::

    torchrun --nnodes=2 --node-rank=0 --nproc-per-node=1 \\
        --master-addr=127.0.0.1 --master-port=29500 examples/distributed_ddp.py
    torchrun --nnodes=2 --node-rank=1 --nproc-per-node=1 \\
        --master-addr=127.0.0.1 --master-port=29500 examples/distributed_ddp.py

Each process trains on its share of the data (DistributedSampler); DDP
all-reduces the gradients through the "accl" backend. At the end every rank
holds the same weights, and rank 0 checks them against the same model trained
in one process on the CPU with the full batches.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

EPOCHS = 2
BATCH_PER_RANK = 16


def make_data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    y = torch.sin(x.sum(dim=1, keepdim=True)) + 0.1 * torch.randn(256, 1, generator=g)
    return TensorDataset(x, y)


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


def train(model: nn.Module, loader: DataLoader, device: torch.device,
          sampler: DistributedSampler | None = None) -> list[float]:
    """Trains in place; returns each epoch's mean loss (over all ranks if
    ``sampler`` shares the data out)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(EPOCHS):
        if sampler is not None:
            sampler.set_epoch(epoch)
        total = torch.zeros((), device=device)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            total += loss.detach()
        if sampler is not None:
            dist.all_reduce(total, op=dist.ReduceOp.AVG)
        losses.append(total.item() / len(loader))
    return losses


# LITERALINCLUDE START: DISTRIBUTED DDP EXAMPLE
def main() -> None:
    # torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("accinte", local_rank)
    torch.accinte.set_device(device)
    dist.init_process_group(backend="accl", device_id=device)
    rank, world_size = dist.get_rank(), dist.get_world_size()

    data = make_data()
    # shuffle=False: step k of all ranks together sees the k-th full batch of
    # the single-process run below.
    sampler = DistributedSampler(data, shuffle=False)
    loader = DataLoader(data, batch_size=BATCH_PER_RANK, sampler=sampler)
    model = DistributedDataParallel(make_model().to(device))
    losses = train(model, loader, device, sampler)
# LITERALINCLUDE END: DISTRIBUTED DDP EXAMPLE

    # Every rank holds the same weights, bit for bit.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(g, flat) for g in gathered), "ranks disagree on the weights"

    if rank == 0:
        print(f"{world_size} ranks, backend {dist.get_backend()}, losses per epoch:",
              " ".join(f"{loss:.5f}" for loss in losses))
        cpu_model = make_model()
        train(cpu_model, DataLoader(data, batch_size=BATCH_PER_RANK * world_size), torch.device("cpu"))
        for p, q in zip(model.module.parameters(), cpu_model.parameters()):
            torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=0, atol=1e-5)
        print(f"DDP on {world_size} accinte processes matched single-process CPU training")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
