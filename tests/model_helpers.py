"""Helpers shared by the model and optimizer tests: the CPU is the oracle.

A model is built once on the CPU under a fixed seed and deep-copied to each
device, so both copies start from the same weights; `train` runs the same
steps on each and `assert_same_*` compare what they produced.
"""

from __future__ import annotations

import copy
from typing import Callable

import torch
from torch import nn

DEVICE = "accinte"

# float32 on both sides runs the same CPU kernels on the same inputs (with the
# caller's thread count, see Note [accinte kernels see their caller's state]),
# so models built from them (MLP, CNN, Transformer encoder, GPT with the
# fused attention of Note [accinte fused attention]) match bit for bit and
# their tests pass rtol=atol=0. These defaults serve models where PyTorch
# picks another path on a non-CPU device than on the CPU: the fused RNN cells
# (CUDA's, which accinte implements).
RTOL = 1e-4
ATOL = 1e-5


def twin(model: nn.Module, device: str = DEVICE) -> nn.Module:
    """A copy of a CPU `model` on `device` with the same parameters and buffers."""
    return copy.deepcopy(model).to(device)


def to(value, device: str):
    """`value` (a tensor, or a tuple/list of them) moved to `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(to(v, device) for v in value)
    return value


def assert_close(actual, expected, rtol: float = RTOL, atol: float = ATOL, msg: str = ""):
    """`actual` (on any device) matches the CPU's `expected`."""
    torch.testing.assert_close(to(actual, "cpu"), to(expected, "cpu"), rtol=rtol, atol=atol,
                               msg=(lambda m: f"{msg}: {m}") if msg else None)


def assert_same_parameters(actual: nn.Module, expected: nn.Module, rtol: float = RTOL,
                           atol: float = ATOL):
    """Parameters and buffers (running statistics included) of two twins match."""
    got = dict(actual.named_parameters())
    want = dict(expected.named_parameters())
    assert got.keys() == want.keys()
    for name, p in want.items():
        assert_close(got[name], p, rtol, atol, msg=f"parameter {name}")
    got_b = dict(actual.named_buffers())
    want_b = dict(expected.named_buffers())
    assert got_b.keys() == want_b.keys()
    for name, b in want_b.items():
        assert_close(got_b[name], b, rtol, atol, msg=f"buffer {name}")


def assert_same_grads(actual: nn.Module, expected: nn.Module, rtol: float = RTOL,
                      atol: float = ATOL):
    """Every parameter of the twins has a gradient, and they match."""
    got = dict(actual.named_parameters())
    for name, p in expected.named_parameters():
        assert p.grad is not None, f"CPU parameter {name} has no gradient"
        assert got[name].grad is not None, f"accinte parameter {name} has no gradient"
        assert got[name].grad.device.type == DEVICE
        assert_close(got[name].grad, p.grad, rtol, atol, msg=f"gradient of {name}")


def train(model: nn.Module, batches, loss_fn: Callable, device: str,
          make_optimizer: Callable | None = None, steps: int | None = None,
          on_first_backward: Callable | None = None) -> list[torch.Tensor]:
    """Runs one optimizer step per batch on `device`; returns the losses (detached,
    still on `device`, so nothing here waits for the device).

    `batches` is a list of (inputs, target) on the CPU; `loss_fn(model, inputs,
    target)` computes the loss. `on_first_backward(model)` runs after the first
    backward, before the first step, so gradients can be compared.
    """
    if make_optimizer is None:
        def make_optimizer(params):
            return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    optimizer = make_optimizer(model.parameters())
    losses = []
    for i, (inputs, target) in enumerate(batches[:steps]):
        optimizer.zero_grad()
        loss = loss_fn(model, to(inputs, device), to(target, device))
        loss.backward()
        if i == 0 and on_first_backward is not None:
            on_first_backward(model)
        optimizer.step()
        losses.append(loss.detach())
    return losses


def train_both(model: nn.Module, batches, loss_fn: Callable, make_optimizer=None,
               rtol: float = RTOL, atol: float = ATOL) -> tuple[nn.Module, nn.Module]:
    """Trains twins of the CPU `model` on accinte and on the CPU with the same
    batches and checks that losses, first gradients and final parameters match.
    Returns (accinte model, CPU model)."""
    cpu_model = copy.deepcopy(model)
    dev_model = twin(model)
    first_grads = {}

    def keep_grads(m):
        first_grads[next(m.parameters()).device.type] = {
            n: p.grad.detach().clone() for n, p in m.named_parameters() if p.grad is not None}

    dev_losses = train(dev_model, batches, loss_fn, DEVICE, make_optimizer,
                       on_first_backward=keep_grads)
    cpu_losses = train(cpu_model, batches, loss_fn, "cpu", make_optimizer,
                       on_first_backward=keep_grads)
    assert all(loss.device.type == DEVICE for loss in dev_losses)
    assert_close(torch.stack([loss.cpu() for loss in dev_losses]), torch.stack(cpu_losses),
                 rtol, atol, msg="losses")
    assert first_grads[DEVICE].keys() == first_grads["cpu"].keys()
    assert len(first_grads["cpu"]) == len(list(model.parameters())), "a parameter got no grad"
    for name, grad in first_grads["cpu"].items():
        assert_close(first_grads[DEVICE][name], grad, rtol, atol, msg=f"first gradient of {name}")
    assert_same_parameters(dev_model, cpu_model, rtol, atol)
    # Training must have done something, or the comparison proves little.
    assert not torch.equal(cpu_losses[0], cpu_losses[-1])
    return dev_model, cpu_model
