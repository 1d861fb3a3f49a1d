"""Defines a new operator from Python with torch.library, without any C++:
examples::softsign(x) = x / (1 + |x|), with a kernel for accinte, a fake
kernel (shapes for fake tensors and torch.compile) and a backward. Results and
gradients are compared with the same formula on the CPU, and
torch.library.opcheck checks the registrations together.

The backend's own Python operators are registered the same way in
torch_accinte/accinte/ops.py.
"""

import torch
from torch import Tensor
from torch._subclasses.fake_tensor import FakeTensorMode


# The schema comes from the type hints; device_types="accinte" registers the
# kernel for the accinte dispatch key only. The name "accinte" is known here
# because importing torch autoloaded the backend, which renamed PrivateUse1.
@torch.library.custom_op("examples::softsign", mutates_args=(), device_types="accinte")
def softsign(x: Tensor) -> Tensor:
    # A kernel may use any operator that works on the device.
    return x / (1 + x.abs())


@softsign.register_fake
def _(x: Tensor) -> Tensor:
    return torch.empty_like(x)


def setup_context(ctx, inputs, output) -> None:
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad: Tensor) -> Tensor:
    (x,) = ctx.saved_tensors
    return grad / (1 + x.abs()) ** 2


softsign.register_autograd(backward, setup_context=setup_context)


def reference(x: Tensor) -> Tensor:
    return x / (1 + x.abs())


x_cpu = torch.linspace(-3, 3, 7)
x = x_cpu.to("accinte").requires_grad_(True)
y = torch.ops.examples.softsign(x)
print("softsign(x) =", y.detach().cpu())
assert y.device.type == "accinte"
torch.testing.assert_close(y.detach().cpu(), reference(x_cpu))

y.sum().backward()
x_ref = x_cpu.clone().requires_grad_(True)
reference(x_ref).sum().backward()
print("gradient    =", x.grad.cpu())
torch.testing.assert_close(x.grad.cpu(), x_ref.grad)

with FakeTensorMode() as mode:
    fake = torch.ops.examples.softsign(mode.from_tensor(torch.empty(3, 4, device="accinte")))
print("fake result =", tuple(fake.shape), fake.device)
assert fake.shape == (3, 4) and fake.device.type == "accinte"

# No kernel for the CPU was registered: the operator refuses CPU tensors.
try:
    torch.ops.examples.softsign(x_cpu)
except NotImplementedError as e:
    print("on the CPU  = NotImplementedError:", str(e).split(". ")[0])
else:
    raise AssertionError("softsign ran on the CPU without a CPU kernel")

# Schema, fake kernel and the backward through AOT dispatch. opcheck's
# "test_autograd_registration" is left out: in PyTorch 2.13 it refuses every
# device but CPU, CUDA and XPU before looking at the operator.
torch.library.opcheck(softsign, (torch.randn(5, device="accinte", requires_grad=True),),
                      test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
print("opcheck passed (schema, fake tensor, AOT dispatch)")
print("examples::softsign matches the CPU formula: forward, backward, fake shapes")
