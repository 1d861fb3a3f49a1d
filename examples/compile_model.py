"""torch.compile on accinte: Inductor writes C++ kernels, and each one runs as a
kernel queued on the current accinte stream (see docs/chapters/compiler.md).

A small pre-norm residual block (LayerNorm, Linear, GELU, Linear) is compiled
on accinte and checked against the same block run eagerly on the CPU: the
output, every parameter's gradient, and the weights after three training steps.
"""

import copy

import torch
from torch import nn

# LITERALINCLUDE START: COMPILER EXAMPLE
device = "accinte"
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


cpu_model = Block()
model = copy.deepcopy(cpu_model).to(device)
compiled = torch.compile(model)  # Inductor, the default backend

x = torch.randn(16, 32)
out = compiled(x.to(device))  # returns once the kernels are queued
out.sum().backward()
expected = cpu_model(x)
expected.sum().backward()
torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=1e-4)
for (name, p), q in zip(cpu_model.named_parameters(), model.parameters()):
    torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=0, atol=1e-4, msg=name)
print("compiled forward and backward match the CPU")

# Three training steps, the optimizer step compiled too.
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (cpu_model, model)]
step = torch.compile(optimizers[1].step)
for _ in range(3):
    batch, target = torch.randn(16, 32), torch.randn(16, 32)
    for optimizer in optimizers:
        optimizer.zero_grad()
    nn.functional.mse_loss(compiled(batch.to(device)), target.to(device)).backward()
    step()
    nn.functional.mse_loss(cpu_model(batch), target).backward()
    optimizers[0].step()
for (name, p), q in zip(cpu_model.named_parameters(), model.parameters()):
    torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=0, atol=1e-4, msg=name)
# LITERALINCLUDE END: COMPILER EXAMPLE
print("three compiled training steps reach the CPU's weights")
print("torch.compile works on accinte and matches the CPU")
