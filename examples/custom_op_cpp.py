"""Uses accinte::custom_abs, a custom operator registered in C++
(csrc/aten/AccInteCustomOps.cpp, kernels in csrc/aten/native/CustomAbs.cpp):
forward on the device, backward through its AutogradPrivateUse1 kernel, shapes
through its Meta kernel (meta and fake tensors), each compared with the CPU.
"""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

custom_abs = torch.ops.accinte.custom_abs
print("operator:", custom_abs.default._schema)

# Forward: the device kernel against torch.abs on the CPU.
x_cpu = torch.tensor([[-1.5, 2.0, -0.0], [3.25, -4.0, 0.5]])
x = x_cpu.to("accinte")
y = custom_abs(x)
print("custom_abs(x) =", y.cpu())
assert y.device.type == "accinte"
torch.testing.assert_close(y.cpu(), torch.abs(x_cpu))

# Backward: the autograd kernel gives d|x|/dx = sign(x), as abs does on the CPU.
x.requires_grad_(True)
(custom_abs(x) * torch.arange(6.0, device="accinte").view(2, 3)).sum().backward()
x_ref = x_cpu.clone().requires_grad_(True)
(torch.abs(x_ref) * torch.arange(6.0).view(2, 3)).sum().backward()
print("gradient      =", x.grad.cpu())
assert x.grad.device.type == "accinte"
torch.testing.assert_close(x.grad.cpu(), x_ref.grad)

# Meta: shapes without data, as fake tensors and torch.compile use them.
m = custom_abs(torch.empty(4, 5, device="meta"))
print("on meta       =", m.shape, m.device)
assert m.shape == (4, 5) and m.device.type == "meta"
with FakeTensorMode() as mode:
    fake = mode.from_tensor(torch.empty(7, 2, device="accinte"))
    out = custom_abs(fake)
print("on fake       =", tuple(out.shape), out.device)
assert out.shape == (7, 2) and out.device.type == "accinte"

print("custom_abs matches the CPU: forward, backward, meta and fake shapes")
