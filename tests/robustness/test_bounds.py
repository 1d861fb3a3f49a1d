"""Every kernel argument lies inside its storage, checked before launch
(Note [accinte argument bounds]): a view left past a shrunk storage raises
instead of reading or writing memory it does not own."""

import pytest

SHRUNK = """
    x = torch.ones((1 << 24) + 16, device="accinte")   # 64 MiB
    v = x[1 << 24:]
    x.untyped_storage().resize_(16)
    torch.accinte.empty_cache()
"""

USES = {
    "read_to_host": "v.cpu()",
    "operator": "v + 1",
    "in_place": "v.add_(1)",
    "reduction": "v.sum()",
    "as_copy_source": "torch.empty(16, device='accinte').copy_(v)",
    "as_copy_destination": "v.copy_(torch.zeros(16))",
    "device_to_device_copy": "v.copy_(torch.zeros(16, device='accinte'))",
    "as_out": "torch.add(torch.ones(16, device='accinte'), 1, out=v)",
    "other_device": "v.to('accinte:1')",
    "printing": "str(v)",
}


@pytest.mark.parametrize("use", sorted(USES))
def test_view_past_shrunk_storage(cases, use):
    # CUDA: an illegal-address error from the kernel; accinte refuses at the call.
    cases.check(SHRUNK + f"""
    raises(RuntimeError, lambda: {USES[use]}, match="storage has 16")
    assert torch.equal(x[:4].cpu(), torch.ones(4))  # what the storage still holds is intact
    """)


def test_storage_resized_to_zero(cases):
    cases.check("""
        x = torch.ones(8, device="accinte")
        x.untyped_storage().resize_(0)
        raises(RuntimeError, lambda: x * 2, match="storage has 0")
    """)
