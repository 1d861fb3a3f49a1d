"""accinte queues every operator asynchronously and still behaves as the CPU:
errors at the call, the same bits at every call, out= resized as on the CPU.
See Note [accinte fallback] in csrc/emulation/fallback/Fallback.cpp."""

import warnings

import torch
import torch.nn.functional as F

torch.manual_seed(0)
i, t = torch.rand(15, 10), torch.rand(15, 10)
expected = F.binary_cross_entropy(i, t, reduction="sum")
di, dt = i.to("accinte"), t.to("accinte")
losses = [F.binary_cross_entropy(di, dt, reduction="sum").item() for _ in range(3)]
print("binary_cross_entropy, three calls:", losses, "CPU:", expected.item())
assert losses == [expected.item()] * 3

b = torch.tensor([2, 3], dtype=torch.int32, device="accinte")
try:
    torch.pow(b, -1, out=torch.empty_like(b))
except RuntimeError as error:
    print("raised at the call:", error)
else:
    raise AssertionError("pow of integers to a negative power must raise")
torch.accinte.synchronize()  # nothing left to raise later

x = torch.ones(3, 4, device="accinte")
out = torch.empty(7, device="accinte")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.sum(x, 0, out=out)
print("out= resized to", tuple(out.shape), "with the CPU's warning:", str(caught[0].message)[:60])
assert out.shape == (4,) and len(caught) == 1
print("the asynchronous engine behaves as the CPU")
