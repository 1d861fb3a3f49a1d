"""Negative and impossible sizes: refused as the CPU refuses them, never a
crash; the caching allocator's rounding cannot wrap around."""

import pytest

SAME_AS_CPU = {
    # The CPU allocator refuses a negative byte count (RuntimeError); accinte
    # once rounded it to a huge size_t, made a 0-byte block and crashed.
    "negative_storage": "lambda d: torch.UntypedStorage(-1, device=d)",
    "negative_storage_resize": "lambda d: torch.UntypedStorage(16, device=d).resize_(-512)",
    "negative_empty": "lambda d: torch.empty(-1, device=d)",
    "negative_resize": "lambda d: torch.empty(4, device=d).resize_(-3)",
    "overflowing_shape": "lambda d: torch.empty(2**40, 2**40, device=d)",
    "negative_view": "lambda d: torch.zeros(4, device=d).view(-1, -1)",
    "bad_reshape": "lambda d: torch.zeros(6, device=d).reshape(4, -1)",
    "negative_narrow": "lambda d: torch.zeros(6, device=d).narrow(0, -9, 2)",
    "as_strided_past_storage": "lambda d: torch.zeros(4, device=d).as_strided((4,), (2,))",
    "set_negative_offset": "lambda d: torch.empty(0, device=d).set_("
                           "torch.zeros(4, device=d).untyped_storage(), -1, (2,), (1,))",
    "zero_size_ok": "lambda d: torch.empty(0, 5, device=d).sum(0)",
}


@pytest.mark.parametrize("name", sorted(SAME_AS_CPU))
def test_same_as_cpu(cases, name):
    cases.check(f"same_as_cpu({SAME_AS_CPU[name]})")


def test_sizes_beyond_any_device_are_out_of_memory(cases):
    # CUDA: torch.OutOfMemoryError for a request larger than the device; the
    # statistics are untouched afterwards.
    cases.check("""
        for nbytes in (2**62 + 1, 2**63 - 1, 5 * 2**30):
            raises(torch.OutOfMemoryError, lambda: torch.UntypedStorage(nbytes, device="accinte"),
                   match="out of memory")
        assert torch.accinte.memory_allocated() == 0
        # Beyond int64: Python's argument parsing refuses it on every device.
        same_as_cpu(lambda d: torch.UntypedStorage(2**64 - 100, device=d))
    """)


def test_grown_storage_is_zero_filled(cases):
    # Growing a storage must not expose what the caching allocator kept in
    # the block: fill a block with a pattern, free it, grow into it.
    cases.check("""
        junk = torch.full((1 << 16,), 7.0, device="accinte")
        del junk
        s = torch.zeros(4, device="accinte").untyped_storage()
        s.resize_(4 * (1 << 16))
        grown = torch.empty(0, device="accinte").set_(s, 0, (1 << 16,), (1,))
        assert torch.count_nonzero(grown).item() == 0
        t = torch.ones(3, device="accinte")
        t.resize_(1 << 15)
        assert torch.equal(t[:3].cpu(), torch.ones(3)) and torch.count_nonzero(t[3:]).item() == 0
    """)
