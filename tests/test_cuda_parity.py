"""What CUDA accepts and the CPU's kernel refuses, which libraries' GPU code
paths use, works on accinte and computes what CUDA computes (Note [accinte
CUDA parity])."""

from __future__ import annotations

import pytest
import torch


def cuda_histc(values: list[int], bins: int, low: int, high: int) -> list[int]:
    """CUDA's integer histc (aten/src/ATen/native/cuda/SummaryOps.cu), in Python."""
    if low == high and values:
        low, high = min(values), max(values)
    if low == high:
        low, high = low - 1, high + 1
    counts = [0] * bins
    for v in values:
        if low <= v <= high:
            counts[min((v - low) * bins // (high - low), bins - 1)] += 1
    return counts


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.int16])
@pytest.mark.parametrize("bins, low, high", [(8, 0, 7), (5, 0, 0), (3, 2, 5), (4, 1, 30)])
def test_integer_histc_computes_what_cuda_does(dtype, bins, low, high):
    x = torch.randint(0, 8, (64,), generator=torch.Generator().manual_seed(bins)).to(dtype)
    with pytest.raises(RuntimeError, match="not implemented for"):
        torch.histc(x, bins=bins, min=low, max=high)  # the CPU refuses integers
    got = torch.histc(x.to("accinte"), bins=bins, min=low, max=high)
    assert got.device.type == "accinte" and got.dtype == dtype
    assert got.cpu().tolist() == cuda_histc(x.tolist(), bins, low, high)


def test_mixtral_tokens_per_expert():
    # transformers' Mixtral MoE: tokens routed to each of 8 experts.
    experts = torch.randint(0, 8, (16, 2), generator=torch.Generator().manual_seed(0))
    counts = torch.histc(experts.to("accinte"), bins=8, min=0, max=7)
    assert counts.cpu().tolist() == torch.bincount(experts.flatten(), minlength=8).tolist()


def test_floating_histc_still_runs_the_cpu_kernel():
    x = torch.randn(200, generator=torch.Generator().manual_seed(0))
    assert torch.equal(torch.histc(x.to("accinte"), 13, -2, 2).cpu(), torch.histc(x, 13, -2, 2))


def test_integer_histc_errors():
    x = torch.arange(5, device="accinte", dtype=torch.int32)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, bins=3, min=4, max=1)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64, torch.bool])
def test_histc_dtypes_cuda_refuses_are_refused(dtype):
    # CUDA's integer histc covers int8..int64 and uint8 only; bool is refused
    # on both devices (the CPU's kernel runs for it).
    x = torch.ones(4, dtype=dtype, device="accinte")
    with pytest.raises(NotImplementedError, match="not implemented for"):
        torch.histc(x, bins=3, min=0, max=2)
    torch.accinte.synchronize()


# --- half and bfloat16 computed in float (Note [accinte low precision as CUDA]) ---

LOW = [torch.float16, torch.bfloat16]


def in_float(fn, *tensors, dtype):
    """CUDA's definition for these kernels: read the low-precision input,
    compute in float, round the result once to its dtype (here with the CPU's
    float kernel)."""
    return fn(*(t.to(dtype).float() for t in tensors)).to(dtype)


@pytest.mark.parametrize("dtype", LOW)
def test_avg_pool3d_low_precision_computes_in_float(dtype):
    # diffusers' video autoencoders pool latents with avg_pool3d in bfloat16;
    # vidtok casts to float itself only when the device is "cpu".
    def pool(t):
        return torch.nn.functional.avg_pool3d(t, (1, 2, 2), stride=(1, 2, 2))

    x = torch.randn(2, 3, 4, 6, 6, generator=torch.Generator().manual_seed(0)).to(dtype)
    with pytest.raises(NotImplementedError, match="avg_pool3d_out_frame"):
        pool(x)  # the CPU's kernel refuses half and bfloat16
    xa = x.to("accinte").requires_grad_()
    out = pool(xa)
    assert out.dtype == dtype and torch.equal(out.detach().cpu(), in_float(pool, x, dtype=dtype))
    # Windows that do not overlap: each gradient written once, as CUDA does.
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    out.backward(grad.to("accinte"))
    xf = x.float().requires_grad_()
    pool(xf).backward(grad.float())
    assert xa.grad.dtype == dtype and torch.equal(xa.grad.cpu(), xf.grad.to(dtype))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", LOW)
def test_antialiased_resize_low_precision_computes_in_float(dtype, mode):
    # transformers' SAM2 video tracker resizes masks with antialias=True.
    def resize(t):
        return torch.nn.functional.interpolate(t, size=(4, 5), mode=mode, antialias=True)

    x = torch.randn(1, 2, 9, 11, generator=torch.Generator().manual_seed(2)).to(dtype)
    with pytest.raises(NotImplementedError, match="compute_index_ranges_weights"):
        resize(x)
    xa = x.to("accinte").requires_grad_()
    out = resize(xa)
    assert out.dtype == dtype and torch.equal(out.detach().cpu(), in_float(resize, x, dtype=dtype))
    out.sum().backward()
    xf = x.float().requires_grad_()
    resize(xf).sum().backward()
    assert torch.equal(xa.grad.cpu(), xf.grad.to(dtype))


def test_float_compute_refuses_half_and_bfloat16_together():
    x = torch.randn(1, 2, 4, 4, 4, device="accinte")
    grad = torch.randn(1, 2, 4, 4, 4, device="accinte")
    with pytest.raises(RuntimeError, match="aten::avg_pool3d_backward: expected every Half or "
                                           "BFloat16 tensor argument to have one dtype, got "
                                           "Half and BFloat16"):
        torch.ops.aten.avg_pool3d_backward(grad.half(), x.bfloat16(), [3, 3, 3], [1, 1, 1],
                                           [1, 1, 1], False, True, None)
    torch.accinte.synchronize()  # the device keeps working


def test_float_compute_leaves_other_dtypes_to_the_cpu_kernel():
    def pool(t):
        return torch.nn.functional.avg_pool3d(t, 3, stride=1, padding=1)

    x = torch.randn(1, 2, 4, 4, 4, generator=torch.Generator().manual_seed(3))
    assert torch.equal(pool(x.to("accinte")).cpu(), pool(x))
    assert torch.equal(pool(x.double().to("accinte")).cpu(), pool(x.double()))
    # Invalid arguments raise what the CPU's float kernel raises, at the call.
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        torch.nn.functional.avg_pool3d(x.half().to("accinte"), 2, padding=2)
    torch.accinte.synchronize()


# --- nn.SyncBatchNorm (Note [accinte SyncBatchNorm]) ---

def cuda_stats(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """batch_norm_stats as CUDA defines it, in float64: per-channel mean and
    1 / sqrt(biased variance + eps)."""
    dims = [0] + list(range(2, x.dim()))
    x = x.double()
    mean = x.mean(dims)
    var = (x - mean.reshape([1, -1] + [1] * (x.dim() - 2))).square().mean(dims)
    return mean, (var + eps).rsqrt()


@pytest.mark.parametrize("dtype, rtol", [(torch.float32, 2e-6), (torch.float16, 2e-6),
                                         (torch.bfloat16, 2e-6), (torch.float64, 1e-13)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_stats(dtype, rtol, channels_last):
    x = (torch.randn(4, 3, 5, 6, generator=torch.Generator().manual_seed(4)) * 3 + 1).to(dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    with pytest.raises(NotImplementedError, match="'aten::batch_norm_stats' with arguments from the 'CPU'"):
        torch.batch_norm_stats(x, 1e-5)  # only CUDA has a kernel
    mean, invstd = torch.batch_norm_stats(x.to("accinte"), 1e-5)
    acc = torch.float64 if dtype == torch.float64 else torch.float32  # CUDA's accumulate type
    assert mean.dtype == invstd.dtype == acc and mean.shape == (3,)
    ref_mean, ref_invstd = cuda_stats(x, 1e-5)
    torch.testing.assert_close(mean.cpu().double(), ref_mean, rtol=rtol, atol=rtol)
    torch.testing.assert_close(invstd.cpu().double(), ref_invstd, rtol=rtol, atol=0)


def test_batch_norm_stats_zero_variance_and_eps():
    x = torch.ones(2, 2, 3, device="accinte")
    _, invstd = torch.batch_norm_stats(x, 0.0)
    assert invstd.cpu().tolist() == [0.0, 0.0]  # CUDA's InvStd: 0, not inf


def test_gather_stats_with_uneven_counts_merges_as_one_batch():
    # Three processes with 2, 5 and 1 samples: the merged statistics are
    # those of the whole batch, the running ones use the unbiased variance.
    g = torch.Generator().manual_seed(5)
    parts = [torch.randn(n, 4, 3, generator=g, dtype=torch.float64) for n in (2, 5, 1)]
    stats = [torch.batch_norm_stats(p.to("accinte"), 1e-5) for p in parts]
    means = torch.stack([m for m, _ in stats])
    invstds = torch.stack([i for _, i in stats])
    counts = torch.tensor([p.shape[0] * p.shape[2] for p in parts], dtype=torch.float64)
    running_mean = torch.full((4,), 0.5, dtype=torch.float64)
    running_var = torch.full((4,), 2.0, dtype=torch.float64)
    rm, rv = running_mean.to("accinte"), running_var.to("accinte")
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        parts[0].to("accinte"), means, invstds, rm, rv, 0.1, 1e-5, counts.to("accinte"))
    whole = torch.cat(parts)
    ref_mean, ref_invstd = cuda_stats(whole, 1e-5)
    torch.testing.assert_close(mean.cpu(), ref_mean, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(invstd.cpu(), ref_invstd, rtol=1e-12, atol=0)
    unbiased = whole.var([0, 2], correction=1)
    torch.testing.assert_close(rm.cpu(), 0.9 * running_mean + 0.1 * ref_mean, rtol=1e-12, atol=0)
    torch.testing.assert_close(rv.cpu(), 0.9 * running_var + 0.1 * unbiased, rtol=1e-12, atol=0)
    # The legacy form with one count for every row.
    m2, i2 = torch.batch_norm_gather_stats(parts[1].to("accinte"), means[1:2], invstds[1:2],
                                           None, None, 0.1, 1e-5, 15)
    torch.testing.assert_close(m2.cpu(), means[1].cpu(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(i2.cpu(), invstds[1].cpu(), rtol=1e-12, atol=0)


def sync_batch_norm_one_process(x, weight, bias, grad, eps=1e-5):
    """nn.SyncBatchNorm's forward and backward (torch/nn/modules/_functions.py)
    on one process: what each rank computes, the collectives being identities."""
    mean, invstd = torch.batch_norm_stats(x, eps)
    # The module's running statistics, in its parameters' dtype; the counts in
    # theirs (CUDA's kernel reads counts in the running statistics' dtype).
    running_mean, running_var = torch.zeros_like(weight), torch.ones_like(weight)
    count = torch.tensor([x.numel() // x.shape[1]], dtype=weight.dtype, device=x.device)
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        x, mean[None], invstd[None], running_mean, running_var, 0.1, eps, count)
    out = torch.batch_norm_elemt(x, weight, bias, mean, invstd, eps)
    sum_dy, sum_dy_xmu, grad_weight, grad_bias = torch.batch_norm_backward_reduce(
        grad, x, mean, invstd, weight, True, True, True)
    grad_input = torch.batch_norm_backward_elemt(
        grad, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count.to(torch.int32))
    return out, grad_input, grad_weight, grad_bias


@pytest.mark.parametrize("channels_last", [False, True])
def test_sync_batch_norm_operators_equal_batch_norm_training(channels_last):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(4, 3, 5, 5, generator=g, dtype=torch.float64)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    weight = torch.randn(3, generator=g, dtype=torch.float64)
    bias = torch.randn(3, generator=g, dtype=torch.float64)
    grad = torch.randn(4, 3, 5, 5, generator=g, dtype=torch.float64)
    got = sync_batch_norm_one_process(*(t.to("accinte") for t in (x, weight, bias, grad)))
    leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
    out = torch.nn.functional.batch_norm(leaves[0], None, None, leaves[1], leaves[2], training=True)
    out.backward(grad)
    expected = [out.detach()] + [t.grad for t in leaves]
    for name, a, e in zip(("output", "grad_input", "grad_weight", "grad_bias"), got, expected):
        torch.testing.assert_close(a.cpu(), e, rtol=1e-12, atol=1e-12, msg=name)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    assert got[0].is_contiguous(memory_format=layout)  # the input's, as on CUDA
    assert got[1].is_contiguous(memory_format=layout)


@pytest.mark.parametrize("dtype", LOW)
def test_sync_batch_norm_operators_half_round_once(dtype):
    # Half input, float statistics: outputs in the input's dtype, computed in
    # float from CUDA's formula and rounded once.
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 3, 6, generator=g).to(dtype)
    grad = torch.randn(4, 3, 6, generator=g).to(dtype)
    weight, bias = torch.randn(3, generator=g), torch.randn(3, generator=g)
    out, grad_input, grad_weight, grad_bias = sync_batch_norm_one_process(
        *(t.to("accinte") for t in (x, weight, bias, grad)))
    assert out.dtype == grad_input.dtype == dtype and grad_weight.dtype == torch.float32
    mean, invstd = (s.float()[None, :, None] for s in cuda_stats(x, 1e-5))
    ref = weight[None, :, None] * (x.float() - mean) * invstd + bias[None, :, None]
    torch.testing.assert_close(out.cpu(), ref.to(dtype), rtol=0, atol=0.02 if dtype == torch.bfloat16 else 2e-3)


def test_sync_batch_norm_errors():
    x = torch.arange(12, device="accinte").reshape(2, 3, 2)
    with pytest.raises(NotImplementedError, match="\"batch_norm_stats_accinte\" not implemented for 'Long'"):
        torch.batch_norm_stats(x, 1e-5)
    xf = x.float()
    mean, invstd = torch.batch_norm_stats(xf, 1e-5)
    with pytest.raises(RuntimeError, match="mean and invstd need to have the same data types"):
        torch.batch_norm_backward_reduce(xf, xf, mean, invstd.double(), None, True, False, False)
    with pytest.raises(RuntimeError, match="Expected count to have type Int but got Long"):
        torch.batch_norm_backward_elemt(xf, xf, mean, invstd, None, mean, mean,
                                        torch.tensor([4], device="accinte"))
    with pytest.raises(RuntimeError, match="Expected counts to have type Float but got Long"):
        torch.batch_norm_gather_stats_with_counts(xf, mean[None], invstd[None], None, None, 0.1,
                                                  1e-5, torch.tensor([4], device="accinte"))
    with pytest.raises(RuntimeError, match="found at least two devices, accinte:0 and cpu"):
        torch.batch_norm_gather_stats_with_counts(xf, mean[None], invstd[None], None, None, 0.1,
                                                  1e-5, torch.tensor([4.0]))
    with pytest.raises(RuntimeError, match="mean and invstd need one floating-point dtype.*"
                                           "got Long and Long"):
        torch.batch_norm_elemt(xf, None, None, mean.long(), invstd.long(), 1e-5)
    torch.accinte.synchronize()  # the device keeps working
