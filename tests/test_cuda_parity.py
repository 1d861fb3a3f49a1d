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
