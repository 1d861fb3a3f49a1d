"""Nested tensors (NestedTensorImpl: a buffer with host metadata) on accinte:
the buffer lives in device memory, and operators give the CPU's answer
(Note [accinte layout fallbacks] in csrc/emulation/fallback/LayoutFallback.cpp)."""

import pytest
import torch
from torch import nn

DEVICE = "accinte"

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")


def pieces():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, 4, generator=g), torch.randn(3, 4, generator=g)]


def test_nested_tensor_moves_to_the_device_and_back():
    expected = torch.nested.nested_tensor(pieces())
    nt = expected.to(DEVICE)
    assert nt.is_nested and nt.device.type == DEVICE
    back = nt.to("cpu")
    assert back.is_nested and back.device.type == "cpu"
    for got, want in zip(back.unbind(), expected.unbind()):
        assert torch.equal(got, want)


def test_nested_tensor_built_on_the_device():
    nt = torch.nested.nested_tensor([p.to(DEVICE) for p in pieces()], device=DEVICE)
    assert nt.device.type == DEVICE
    padded = torch.nested.to_padded_tensor(nt, 0.0)
    assert padded.device.type == DEVICE
    expected = torch.nested.to_padded_tensor(torch.nested.nested_tensor(pieces()), 0.0)
    assert torch.equal(padded.cpu(), expected)


def test_nested_ops_match_cpu():
    cpu = torch.nested.nested_tensor(pieces())
    dev = cpu.to(DEVICE)
    for op in [lambda t: t * 2 + 1, lambda t: t.relu(), lambda t: torch.nn.functional.softmax(t, -1),
               lambda t: t.transpose(1, 2).contiguous()]:
        got, want = op(dev), op(cpu)
        assert got.is_nested and got.device.type == DEVICE
        for g, w in zip(got.cpu().unbind(), want.unbind()):
            torch.testing.assert_close(g, w)
    linear = nn.Linear(4, 3)
    got = nn.Linear(4, 3).to(DEVICE)
    got.load_state_dict(linear.state_dict())
    for g, w in zip(got(dev).cpu().unbind(), linear(cpu).unbind()):
        torch.testing.assert_close(g, w)


def test_nested_tensor_from_mask_matches_cpu():
    x = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    expected = torch._nested_tensor_from_mask(x, mask)
    got = torch._nested_tensor_from_mask(x.to(DEVICE), mask.to(DEVICE))
    assert got.is_nested and got.device.type == DEVICE
    for g, w in zip(got.cpu().unbind(), expected.unbind()):
        assert torch.equal(g, w)


def test_transformer_encoder_fast_path_matches_cpu():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                       batch_first=True)
    cpu = nn.TransformerEncoder(layer, num_layers=2).eval()
    dev = nn.TransformerEncoder(layer, num_layers=2).eval()
    dev.load_state_dict(cpu.state_dict())
    dev.to(DEVICE)
    x = torch.randn(3, 5, 8)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] + [True] * 4])
    with torch.no_grad():
        expected = cpu(x, src_key_padding_mask=mask)
        got = dev(x.to(DEVICE), src_key_padding_mask=mask.to(DEVICE))
    assert got.device.type == DEVICE
    torch.testing.assert_close(got.cpu(), expected)


def test_strict_mode_keeps_nested_working(run_python):
    out = run_python("""
import torch
parts = [torch.ones(2, 3), torch.full((1, 3), 2.0)]
nt = torch.nested.nested_tensor(parts).to("accinte")
padded = torch.nested.to_padded_tensor(nt * 3, 0.0).cpu()
print("ok", padded.tolist())
""", env={"ACCINTE_STRICT": "1"})
    assert "ok [[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]], [[6.0, 6.0, 6.0], [0.0, 0.0, 0.0]]]" \
        in out.stdout, out.stderr
