"""Quantized tensors on accinte (Note [accinte quantized tensors]): made,
copied, read and printed as on the CPU, by the CPU's quantized kernels on
host aliases; an operator the CPU cannot run on them raises
NotImplementedError naming it."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions")


def data(seed=0):
    return torch.randn(4, 6, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype", [torch.qint8, torch.quint8, torch.qint32])
def test_quantize_per_tensor_matches_cpu(dtype):
    x = data()
    q = torch.quantize_per_tensor(x, 0.05, 2, dtype)
    qd = torch.quantize_per_tensor(x.to("accinte"), 0.05, 2, dtype)
    assert qd.is_quantized and qd.device.type == "accinte" and qd.dtype == dtype
    assert qd.qscheme() == torch.per_tensor_affine
    assert qd.q_scale() == 0.05 and qd.q_zero_point() == 2
    assert torch.equal(qd.int_repr().cpu(), q.int_repr())
    assert torch.equal(qd.dequantize().cpu(), q.dequantize())


def test_quantize_per_channel_matches_cpu():
    x = data()
    scales = torch.rand(6, generator=torch.Generator().manual_seed(1)) + 0.05
    zeros = torch.arange(6)
    q = torch.quantize_per_channel(x, scales, zeros, 1, torch.quint8)
    qd = torch.quantize_per_channel(x.to("accinte"), scales.to("accinte"), zeros.to("accinte"),
                                    1, torch.quint8)
    del scales, zeros  # the device tensor keeps its own parameters
    assert qd.qscheme() == torch.per_channel_affine and qd.q_per_channel_axis() == 1
    assert torch.equal(qd.q_per_channel_scales().cpu(), q.q_per_channel_scales())
    assert torch.equal(qd.int_repr().cpu(), q.int_repr())
    assert torch.equal(qd.dequantize().cpu(), q.dequantize())


def test_copies_in_every_direction():
    q = torch.quantize_per_tensor(data(), 0.1, 0, torch.qint8)
    qd = q.to("accinte")
    assert qd.is_quantized and qd.device.type == "accinte"
    assert torch.equal(qd.int_repr().cpu(), q.int_repr())
    back = qd.cpu()
    assert back.is_quantized and back.device.type == "cpu"
    assert torch.equal(back.int_repr(), q.int_repr()) and back.q_scale() == q.q_scale()
    other = torch.quantize_per_tensor(data(1).to("accinte"), 0.1, 0, torch.qint8)
    other.copy_(qd)
    assert torch.equal(other.int_repr().cpu(), q.int_repr())
    assert torch.equal(qd.clone().int_repr().cpu(), q.int_repr())
    assert torch.equal(qd.t().contiguous().int_repr().cpu(), q.t().contiguous().int_repr())
    assert torch.equal(torch.cat([qd, qd]).int_repr().cpu(), torch.cat([q, q]).int_repr())


def test_printing_matches_cpu():
    q = torch.quantize_per_tensor(data(), 0.1, 3, torch.qint8)
    qd = q.to("accinte")
    text = repr(qd)
    assert "device='accinte:0'" in text and "scale=0.1" in text and "zero_point=3" in text
    values = lambda t: t.split("]]")[0].replace("\n", "").replace(" ", "")  # noqa: E731
    assert values(text) == values(repr(q))


@pytest.mark.parametrize("call", [lambda q: q + q, lambda q: q.sum()], ids=["add", "sum"])
def test_unsupported_operator_raises_not_implemented(call):
    qd = torch.quantize_per_tensor(data().to("accinte"), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match="not supported for quantized tensors on accinte"):
        call(qd)
    assert torch.equal((qd.dequantize() + 1).cpu(), qd.cpu().dequantize() + 1)  # still working


def test_quantize_copy_print_cycles_do_not_crash(run_python):
    out = run_python("""
        import io, warnings, torch
        warnings.simplefilter("ignore")
        x = torch.randn(8, 8)
        for i in range(100):
            q = torch.quantize_per_tensor(x.to("accinte"), 0.1, i % 5, torch.qint8)
            c = q.cpu().to("accinte").clone()
            print(c, file=io.StringIO())
            assert torch.equal(c.int_repr().cpu(),
                               torch.quantize_per_tensor(x, 0.1, i % 5, torch.qint8).int_repr())
        torch.accinte.synchronize()
        print("done")
    """, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "done" in out.stdout
