"""Optimizers step on accinte as on the CPU, in each implementation.

Every optimizer runs in its three implementations (a for-loop over
parameters, the `_foreach_*` kernels, and the fused `_fused_sgd_`,
`_fused_adam_`, `_fused_adamw_` kernels, which PyTorch enables for the
PrivateUse1 backend and which accinte runs through its fallback) with the same
settings on the CPU and on accinte, from the same weights and with the same
data; parameters and optimizer state must match after every step.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from model_helpers import DEVICE, assert_close, assert_same_parameters, to, twin

STEPS = 4

OPTIMIZERS = {
    "sgd": (torch.optim.SGD, dict(lr=0.1)),
    "sgd-momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2)),
    "sgd-nesterov-weight-decay": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True,
                                                        weight_decay=0.05)),
    "sgd-maximize": (torch.optim.SGD, dict(lr=0.05, momentum=0.5, maximize=True)),
    "adam": (torch.optim.Adam, dict(lr=1e-2)),
    "adam-weight-decay-amsgrad": (torch.optim.Adam, dict(lr=1e-2, weight_decay=0.05,
                                                         amsgrad=True, betas=(0.8, 0.9))),
    "adamw": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    "adamw-amsgrad-maximize": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1,
                                                       amsgrad=True, maximize=True)),
}

IMPLEMENTATIONS = {
    "for-loop": dict(foreach=False),
    "foreach": dict(foreach=True),
    "fused": dict(fused=True),
}


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batches():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g))
            for _ in range(STEPS)]


def assert_same_state(dev_opt, cpu_opt):
    dev_state = dev_opt.state_dict()["state"]
    cpu_state = cpu_opt.state_dict()["state"]
    assert dev_state.keys() == cpu_state.keys()
    for index, entries in cpu_state.items():
        assert dev_state[index].keys() == entries.keys()
        for key, value in entries.items():
            got = dev_state[index][key]
            if isinstance(value, torch.Tensor):
                assert_close(got, value, msg=f"state {key} of parameter {index}")
            else:
                assert got == value, f"state {key} of parameter {index}"


def run_both(cls, settings):
    """Trains twins with `cls(**settings)` on accinte and the CPU, comparing
    parameters and state after every step."""
    cpu = make_model()
    dev = twin(cpu)
    cpu_opt = cls(cpu.parameters(), **settings)
    dev_opt = cls(dev.parameters(), **settings)
    for x, y in batches():
        for model, opt, device in ((dev, dev_opt, DEVICE), (cpu, cpu_opt, "cpu")):
            opt.zero_grad()
            F.mse_loss(model(to(x, device)), to(y, device)).backward()
            opt.step()
        assert_same_parameters(dev, cpu)
        assert_same_state(dev_opt, cpu_opt)
    assert not torch.allclose(cpu[0].weight, make_model()[0].weight)  # it did train
    return dev_opt


class OpLog(TorchDispatchMode):
    """Records the name of every operator called under it."""

    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


# The operator whose presence shows that each implementation ran.
SIGNATURE_OPS = {
    ("for-loop", torch.optim.SGD): "add_", ("for-loop", torch.optim.Adam): "lerp_",
    ("for-loop", torch.optim.AdamW): "lerp_",
    ("foreach", torch.optim.SGD): "_foreach_add_", ("foreach", torch.optim.Adam): "_foreach_lerp_",
    ("foreach", torch.optim.AdamW): "_foreach_lerp_",
    ("fused", torch.optim.SGD): "_fused_sgd_", ("fused", torch.optim.Adam): "_fused_adam_",
    ("fused", torch.optim.AdamW): "_fused_adamw_",
}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_cpu(name, impl):
    cls, settings = OPTIMIZERS[name]
    dev_opt = run_both(cls, {**settings, **IMPLEMENTATIONS[impl]})
    with OpLog() as log:
        dev_opt.step()  # the gradients of the last step are still there
    assert SIGNATURE_OPS[impl, cls] in log.names, sorted(log.names)
    if impl != "fused":
        assert not any(n.startswith("_fused") for n in log.names), sorted(log.names)
    for state in dev_opt.state.values():
        for key, value in state.items():
            # The fused kernels keep `step` on the device; the others on the CPU.
            if isinstance(value, torch.Tensor) and (key != "step" or impl == "fused"):
                assert value.device.type == DEVICE, key


@pytest.mark.parametrize("impl", ["for-loop", "foreach"])
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW])
def test_capturable_adam_matches_cpu(cls, impl):
    # capturable=True keeps `step` on the device and never reads it on the host.
    # The CPU is not a capturable device, so the CPU runs capturable=False.
    cpu = make_model()
    dev = twin(cpu)
    settings = dict(lr=1e-2, weight_decay=0.05, **IMPLEMENTATIONS[impl])
    cpu_opt = cls(cpu.parameters(), **settings)
    dev_opt = cls(dev.parameters(), capturable=True, **settings)
    for x, y in batches():
        for model, opt, device in ((dev, dev_opt, DEVICE), (cpu, cpu_opt, "cpu")):
            opt.zero_grad()
            F.mse_loss(model(to(x, device)), to(y, device)).backward()
            opt.step()
        assert_same_parameters(dev, cpu)
    assert all(s["step"].device.type == DEVICE for s in dev_opt.state.values())


def test_fused_optimizers_are_accepted_for_accinte():
    # PyTorch lists the PrivateUse1 backend among the fused devices; this is
    # what makes fused=True above reach the fused kernels rather than raise.
    from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    assert DEVICE in _get_fused_kernels_supported_devices()
    p = nn.Parameter(torch.ones(3, device=DEVICE))
    p.grad = torch.full((3,), 0.5, device=DEVICE)
    opt = torch.optim.Adam([p], lr=0.1, fused=True)
    opt.step()
    # Adam's first step moves each element by lr (m̂/√v̂ = sign of the gradient).
    assert_close(p.detach(), torch.full((3,), 0.9))
