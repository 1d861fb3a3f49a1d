"""Mixed precision on accinte: torch.autocast("accinte") runs matrix products
in float16 and keeps precision-sensitive operators in float32 (the policy of
csrc/amp/autocast_mode.cpp), and torch.amp.GradScaler("accinte") scales the
loss, skips the step whose gradients overflowed and adjusts its scale.
A small regression model trains a few steps and its loss goes down.
"""

import torch
from torch import nn

device = "accinte"
torch.manual_seed(0)

# What autocast does to single operators.
a = torch.randn(8, 8, device=device)
with torch.autocast(device):
    product = a @ a
    probabilities = torch.softmax(a, dim=1)
print(f"under autocast: matmul -> {product.dtype}, softmax -> {probabilities.dtype}")
assert torch.get_autocast_dtype(device) == torch.float16
assert product.dtype == torch.float16 and probabilities.dtype == torch.float32
torch.testing.assert_close(product.float().cpu(), a.cpu() @ a.cpu(), rtol=1e-2, atol=1e-2)

# Training steps with a GradScaler. PyTorch's GradScaler defaults to "cuda":
# name the device.
x = torch.randn(256, 16, device=device)
y = x @ torch.randn(16, 1, device=device) + 0.1
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler(device, init_scale=1024.0, growth_interval=5)


def step() -> float:
    optimizer.zero_grad()
    with torch.autocast(device):
        out = model(x)
        assert out.dtype == torch.float16
        loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # unscales; skips the step if a gradient is inf/NaN
    scaler.update()
    return loss.item()


losses = [step() for _ in range(20)]
print(f"loss: first {losses[0]:.4f}, last {losses[-1]:.4f}, scale now {scaler.get_scale():.0f}")
assert losses[-1] < 0.5 * losses[0]
assert scaler.get_scale() > 1024.0  # grew every 5 finite steps

# An overflowing gradient: the step is skipped and the scale backs off.
weights = [p.detach().clone() for p in model.parameters()]
scale_before = scaler.get_scale()
optimizer.zero_grad()
with torch.autocast(device):
    loss = nn.functional.mse_loss(model(x).float(), y)
scaler.scale(loss).backward()
next(model.parameters()).grad[0, 0] = float("inf")
scaler.step(optimizer)
scaler.update()
print(f"inf gradient: step skipped, scale {scale_before:.0f} -> {scaler.get_scale():.0f}")
assert scaler.get_scale() == scale_before * 0.5
assert all(torch.equal(w.cpu(), p.detach().cpu()) for w, p in zip(weights, model.parameters()))
print("autocast and GradScaler work on accinte")
