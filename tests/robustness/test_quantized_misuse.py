"""Quantized tensors: once a tensor whose dtype said qint8 but that was no
quantized tensor, whose copy kernel crashed the process at a random later
point. Now each use gives the CPU's result or, for an operator the CPU runs
on quantized tensors and accinte cannot, a NotImplementedError at the call
(Note [accinte quantized tensors])."""

import pytest

USES = {
    "quantize_copy_print": """
        def use(d):
            q = torch.quantize_per_tensor(torch.linspace(-1, 1, 64, device=d), 0.1, 0, torch.qint8)
            q2 = q.clone().to(d)
            text = str(q2.cpu())
            return torch.cat([q2.int_repr().float().cpu(), q2.dequantize().cpu()])
        same_as_cpu(use)
    """,
    "per_channel": """
        def use(d):
            x = torch.linspace(-2, 2, 24, device=d).reshape(4, 6)
            q = torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3, 0.4], device=d),
                                           torch.zeros(4, dtype=torch.int64, device=d), 0, torch.quint8)
            return q.dequantize()
        same_as_cpu(use)
    """,
    "unsupported_operator": """
        q = torch.quantize_per_tensor(torch.ones(8, device="accinte"), 0.1, 0, torch.qint8)
        for _ in range(20):
            raises(NotImplementedError, lambda: q + q, match="quantized")
        torch.accinte.synchronize()
        assert torch.equal(q.dequantize().cpu(), torch.ones(8))
    """,
}


@pytest.mark.parametrize("name", sorted(USES))
def test_quantized(cases, name):
    cases.check(USES[name])
