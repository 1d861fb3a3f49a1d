"""Inputs and outputs that partly share memory: refused as the CPU refuses them
("unsupported operation: some elements of the input tensor and the written-to
tensor refer to a single memory location"), at the call, also when the same
shapes were queued before without overlap; never a silently wrong result.
The CPU aliases the engine builds must not hide the overlap from PyTorch's
checks, and `_copy_from` checks it itself."""

import pytest

# Each runs after a call of the same signature without overlap (so a queued
# launch, not only the first synchronous run, must refuse it).
CASES = {
    "add_out": ("torch.add(y[:-1], 1, out=x[1:])", "torch.add(x[:-1], 1, out=x[1:])"),
    "mul_out_other_side": ("torch.mul(y[1:], 2, out=x[:-1])", "torch.mul(x[1:], 2, out=x[:-1])"),
    "abs_out": ("torch.abs(y[:4], out=x[2:])", "torch.abs(x[:4], out=x[2:])"),
    "copy_": ("x[1:].copy_(y[:-1])", "x[1:].copy_(x[:-1])"),
    "copy_backwards": ("x[:-2].copy_(y[2:])", "x[:-2].copy_(x[2:])"),
    "copy_expanded": ("y.view(2, 3).copy_(torch.ones(2, 3, device=x.device))",
                      "x[:3].expand(2, 3).copy_(torch.ones(2, 3, device=x.device))"),
    "in_place_on_expanded": ("y[:3].add_(1)", "x[:1].expand(3).add_(1)"),
    "cat_out": ("torch.cat([y[:2], y[2:4]], out=x[2:])", "torch.cat([x[:2], x[2:4]], out=x[2:])"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_partial_overlap_same_as_cpu(cases, name):
    recorded, overlapping = CASES[name]
    cases.check(f"""
        def call(d):
            x, y = torch.arange(6.0, device=d), torch.arange(6.0, device=d)
            {recorded}
            {recorded}
            try:
                {overlapping}
            finally:
                if d != "cpu":
                    torch.accinte.synchronize()   # nothing is left for later
            return x
        cpu = same_as_cpu(call)
        assert cpu[0] == "raised" and "unsupported operation" in cpu[2], cpu
        raises(RuntimeError, lambda: call("accinte"), match="unsupported operation")
    """)


def test_full_overlap_is_allowed(cases):
    # The CPU computes in place when input and output are the same memory.
    cases.check("""
        def call(d):
            x = torch.arange(6.0, device=d)
            torch.add(x, 1, out=x)
            x[2:].copy_(x[2:])
            torch.mul(x[1:4], 3, out=x[1:4])
            return x
        same_as_cpu(call)
    """)
