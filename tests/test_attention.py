"""F.scaled_dot_product_attention on accinte takes PyTorch's overrideable
fused backend, computed by the CPU's flash attention kernel, and gives the
CPU's bits forward and backward (Note [accinte fused attention])."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from held_stream import hold_stream

OVERRIDEABLE = 4  # at::SDPBackend::overrideable
FLASH = 1
MATH = 0


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().reshape(-1).view(torch.uint8)


def qkv(heads_kv=4, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, 9, 16, generator=g).to(dtype)
    k = torch.randn(2, heads_kv, 11, 16, generator=g).to(dtype)
    v = torch.randn(2, heads_kv, 11, 16, generator=g).to(dtype)
    return q, k, v


def test_fused_sdp_choice_says_overrideable_where_the_cpu_takes_flash():
    q, k, v = qkv()
    d = [t.to("accinte") for t in (q, k, v)]
    assert torch._fused_sdp_choice(q, k, v) == FLASH
    assert torch._fused_sdp_choice(*d) == OVERRIDEABLE
    assert torch._fused_sdp_choice(*d, is_causal=True) == OVERRIDEABLE
    # The CPU's flash kernel has no dropout: both take the math path.
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.5) == MATH
    assert torch._fused_sdp_choice(*d, dropout_p=0.5) == MATH


MASK_GEN = torch.Generator().manual_seed(1)
CASES = {
    "plain": {},
    "causal": dict(is_causal=True),
    "bool_mask": dict(attn_mask=torch.rand(9, 11, generator=MASK_GEN) > 0.3),
    "float_mask": dict(attn_mask=torch.randn(2, 1, 9, 11, generator=MASK_GEN)),
    "scale": dict(scale=0.3),
    "gqa": dict(enable_gqa=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_cpu_forward_and_backward(case, dtype):
    kwargs = CASES[case]
    q, k, v = qkv(heads_kv=2 if case == "gqa" else 4, dtype=dtype)
    cpu = [t.clone().requires_grad_() for t in (q, k, v)]
    dev = [t.to("accinte").requires_grad_() for t in (q, k, v)]
    dev_kwargs = {key: value.to("accinte") if isinstance(value, torch.Tensor) else value
                  for key, value in kwargs.items()}
    out = F.scaled_dot_product_attention(*cpu, **kwargs)
    out_dev = F.scaled_dot_product_attention(*dev, **dev_kwargs)
    assert out_dev.grad_fn.name() == "ScaledDotProductFusedAttentionOverrideableBackward0"
    assert torch.equal(bits(out_dev), bits(out))
    grad = torch.randn_like(out)
    out.backward(grad)
    out_dev.backward(grad.to("accinte"))
    for d, c in zip(dev, cpu):
        assert torch.equal(bits(d.grad), bits(c.grad))


def test_the_fused_path_is_one_asynchronous_kernel():
    q, k, v = (t.to("accinte") for t in qkv())
    torch.accinte.synchronize()
    with hold_stream() as hold:  # the stream is busy: nothing queued after can have run
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert hold.held()
    assert out.shape == (2, 4, 9, 16)
    torch.accinte.synchronize()


def test_dropout_draws_from_the_accinte_generator():
    q, k, v = (t.to("accinte") for t in qkv())
    torch.accinte.manual_seed(7)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.manual_seed(123)  # the CPU's generator does not matter
    torch.accinte.manual_seed(7)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    c = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.equal(b.cpu(), c.cpu())
    no_dropout = F.scaled_dot_product_attention(q, k, v)
    assert not torch.equal(a.cpu(), no_dropout.cpu())


def test_mask_that_requires_grad_takes_the_math_path_as_on_the_cpu():
    q, _, _ = qkv()
    mask = torch.randn(9, 9, requires_grad=True)
    mask_dev = mask.detach().to("accinte").requires_grad_()
    F.scaled_dot_product_attention(q, q, q, attn_mask=mask).sum().backward()
    qd = q.to("accinte")
    F.scaled_dot_product_attention(qd, qd, qd, attn_mask=mask_dev).sum().backward()
    torch.testing.assert_close(mask_dev.grad.cpu(), mask.grad)
