"""timm on accinte (a ResNet and a ViT), when it can be installed.

timm needs torchvision, and the package registry has no CPU build of
torchvision for torch 2.13: its only wheel for 2.13 (0.28.0) is built against
CUDA torch and fails to import next to the CPU build ("operator
torchvision::nms does not exist"). The dev requirements therefore leave timm
out and this file skips, saying so; it runs as soon as both import."""

from __future__ import annotations

import pytest
import torch

from . import compat
from .twins import run_both

LIB = "timm"
REASON = ("torchvision has no CPU wheel for torch 2.13 on PyPI (0.28.0 is built against CUDA "
          "torch and fails to import: operator torchvision::nms does not exist), and timm "
          "requires torchvision")

try:
    import timm
except Exception:  # not installed, or torchvision broken underneath
    timm = None
    compat.skipped(LIB, REASON)

pytestmark = pytest.mark.skipif(timm is None, reason=REASON)


@pytest.mark.parametrize("name", ["resnet18", "vit_tiny_patch16_224"])
def test_forward_backward(name):
    def fn(device):
        torch.manual_seed(0)
        kwargs = {"img_size": 32, "patch_size": 8} if name.startswith("vit") else {}
        model = timm.create_model(name, pretrained=False, num_classes=4, **kwargs).to(device)
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
        out = model(x)
        out.sum().backward()
        return {"out": out, "grads": {n: p.grad for n, p in model.named_parameters()}}
    run_both(LIB, name, fn)
