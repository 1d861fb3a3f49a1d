"""Trains a small MLP on accinte, then the same model on the CPU, and shows
that both reach the same loss. `make demo` runs this.

The data is a synthetic regression task made here (no downloads): targets are
a fixed random non-linear function of the inputs plus noise.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
from torch import nn
from tqdm import tqdm


def make_data(samples: int, features: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=g)
    w = torch.randn(features, 1, generator=g)
    y = torch.sin(x @ w) + 0.1 * torch.randn(samples, 1, generator=g)
    return x, y


def make_model(features: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 1))


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, device: str, epochs: int,
          batch: int) -> tuple[list[float], float]:
    """Trains in place on `device`; returns the per-epoch mean losses and seconds taken."""
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    losses = []
    start = time.perf_counter()
    bar = tqdm(range(epochs), desc=f"train on {device:>7}", unit="epoch")
    for _ in bar:
        total = torch.zeros((), device=device)
        for i in range(0, x.shape[0], batch):
            optimizer.zero_grad()
            loss = loss_fn(model(x[i:i + batch]), y[i:i + batch])
            loss.backward()
            optimizer.step()
            total += loss.detach()
        losses.append(total.item() / (x.shape[0] // batch))
        bar.set_postfix(loss=f"{losses[-1]:.5f}")
    return losses, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()

    if not torch.accinte.is_available():
        print("accinte is not available")
        return 1
    print(f"accinte: {torch.accinte.device_count()} device(s), "
          f"{torch.accinte.get_device_name(0)}")

    x, y = make_data(args.samples, features=16)
    model = make_model(features=16)
    accinte_losses, accinte_s = train(copy.deepcopy(model), x, y, "accinte", args.epochs,
                                      args.batch)
    cpu_losses, cpu_s = train(copy.deepcopy(model), x, y, "cpu", args.epochs, args.batch)

    print(f"final loss  accinte: {accinte_losses[-1]:.6f}   cpu: {cpu_losses[-1]:.6f}")
    print(f"first loss  accinte: {accinte_losses[0]:.6f}   cpu: {cpu_losses[0]:.6f}")
    print(f"time        accinte: {accinte_s:.2f} s   cpu: {cpu_s:.2f} s")
    same = all(abs(a - c) <= 1e-4 * max(1.0, abs(c)) for a, c in zip(accinte_losses, cpu_losses))
    print("accinte reached the CPU's loss" if same else "MISMATCH between accinte and CPU")
    return 0 if same and accinte_losses[-1] < accinte_losses[0] else 1


if __name__ == "__main__":
    raise SystemExit(main())
