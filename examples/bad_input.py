"""Bad input on accinte: a clear exception at the call, as on the CPU, and a
device that keeps working afterwards (docs/chapters/robustness.md)."""

import io

import torch


def refused(what, call):
    """Runs `call`, which must raise; prints the exception accinte raised."""
    try:
        call()
    except (RuntimeError, ValueError) as error:
        print(f"{what:38s} -> {type(error).__name__}: {str(error).splitlines()[0][:90]}")
        return error
    raise AssertionError(f"{what} was accepted")


def device_works():
    x = torch.arange(6.0, device="accinte")
    assert torch.equal((x * 2).cpu(), torch.arange(6.0) * 2)


# A negative size is refused by the allocator, as by the CPU's.
refused("UntypedStorage(-1)", lambda: torch.UntypedStorage(-1, device="accinte"))

# A view left past a storage that was shrunk under it: refused before any
# kernel touches memory the view no longer owns.
big = torch.ones((1 << 20) + 4, device="accinte")
tail = big[1 << 20:]
big.untyped_storage().resize_(16)
# (noqa: ruff takes `tail` for undefined because of the `del` further down,
# though the lambda runs first: astral-sh/ruff#9858.)
refused("a view past its shrunk storage", lambda: tail + 1)  # noqa: F821
assert torch.equal(big[:4].cpu(), torch.ones(4))

# torch.device("accinte:128") wraps to index -128: no device has it.
refused("torch.ones(device='accinte:128')", lambda: torch.ones(1, device="accinte:128"))
refused("get_device_properties(-2)", lambda: torch.accinte.get_device_properties(-2))

# A generator belongs to one device.
refused("CPU randn with an accinte generator",
        lambda: torch.randn(3, generator=torch.Generator("accinte")))

# A checkpoint whose tensor claims more elements than its storage holds.
buffer = io.BytesIO()
torch.save(torch.arange(4.0, device="accinte"), buffer)
crafted = buffer.getvalue().replace(b"K\x04\x85", b"K@\x85")  # size (4,) -> (64,)
refused("a crafted checkpoint", lambda: torch.load(io.BytesIO(crafted), weights_only=True))

# Out of memory is an exception, and the memory comes back.
refused("4 GiB on a 4 GiB device", lambda: torch.empty(1 << 30, device="accinte"))
del big, tail
torch.accinte.empty_cache()
assert torch.accinte.memory_allocated() == 0

device_works()
print("bad input is refused at the call and the device keeps working")
