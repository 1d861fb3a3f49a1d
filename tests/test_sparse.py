"""Sparse tensors (COO and the compressed layouts) on accinte: their
components live in device memory, and operators on them give the CPU's
answer (Note [accinte layout fallbacks] in csrc/emulation/fallback/LayoutFallback.cpp)."""

import pytest
import torch

DEVICE = "accinte"


def dense_with_zeros(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x * (torch.rand(*shape, generator=g) > 0.5)


def assert_same_sparse(got, expected):
    assert got.device.type == DEVICE
    assert got.layout == expected.layout
    torch.testing.assert_close(got.cpu(), expected)


def test_to_sparse_keeps_components_on_the_device():
    x = dense_with_zeros(4, 5)
    s = x.to(DEVICE).to_sparse()
    assert s.is_sparse and s.device.type == DEVICE
    assert s._indices().device.type == DEVICE and s._values().device.type == DEVICE
    assert s._nnz() == int((x != 0).sum())
    assert (s.sparse_dim(), s.dense_dim()) == (2, 0)
    assert_same_sparse(s, x.to_sparse())


def test_coo_round_trips_between_host_and_device():
    expected = dense_with_zeros(3, 6).to_sparse()
    on_device = expected.to(DEVICE)
    assert on_device.is_sparse and on_device.device.type == DEVICE
    back = on_device.to("cpu")
    assert back.is_sparse and back.device.type == "cpu"
    assert torch.equal(back.to_dense(), expected.to_dense())
    assert torch.equal(on_device.to_dense().cpu(), expected.to_dense())


def test_sparse_coo_tensor_built_on_the_device():
    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    v = torch.tensor([3.0, 4.0, 5.0])
    s = torch.sparse_coo_tensor(i.to(DEVICE), v.to(DEVICE), (2, 3))
    assert s.device.type == DEVICE
    assert torch.equal(s.to_dense().cpu(), torch.sparse_coo_tensor(i, v, (2, 3)).to_dense())
    # _values() aliases the device tensor, as on CUDA.
    assert s._values().data_ptr() == s._values().data_ptr()


@pytest.mark.parametrize("layout", [torch.sparse_csr, torch.sparse_csc])
def test_compressed_round_trips(layout):
    x = dense_with_zeros(5, 4, seed=1)
    expected = x.to_sparse(layout=layout)
    s = x.to(DEVICE).to_sparse(layout=layout)
    assert s.layout == layout and s.device.type == DEVICE
    assert s.values().device.type == DEVICE
    assert_same_sparse(s, expected)
    assert torch.equal(expected.to(DEVICE).to_dense().cpu(), x)


@pytest.mark.parametrize("layout", [torch.sparse_bsr, torch.sparse_bsc])
def test_blocked_layouts_round_trip(layout):
    x = dense_with_zeros(4, 6, seed=2)
    expected = x.to_sparse(layout=layout, blocksize=(2, 2))
    s = x.to(DEVICE).to_sparse(layout=layout, blocksize=(2, 2))
    assert s.layout == layout and s.device.type == DEVICE
    assert torch.equal(s.to_dense().cpu(), x)
    assert torch.equal(s.cpu().values(), expected.values())


def test_to_sparse_csr_and_matmul_match_cpu():
    a = dense_with_zeros(6, 5, seed=3)
    b = torch.randn(5, 3)
    expected = a.to_sparse_csr() @ b
    got = a.to(DEVICE).to_sparse_csr() @ b.to(DEVICE)
    assert got.device.type == DEVICE and got.layout == torch.strided
    torch.testing.assert_close(got.cpu(), expected)


def test_coo_ops_match_cpu():
    a, b = dense_with_zeros(4, 4, seed=4).to_sparse(), dense_with_zeros(4, 4, seed=5).to_sparse()
    da, db = a.to(DEVICE), b.to(DEVICE)
    assert_same_sparse(da + db, a + b)
    assert_same_sparse(da * 3, a * 3)
    assert_same_sparse(da.coalesce(), a.coalesce())
    assert_same_sparse(da.t(), a.t())
    torch.testing.assert_close(torch.sparse.sum(da).cpu(), torch.sparse.sum(a))
    dense = torch.randn(4, 2)
    torch.testing.assert_close(torch.sparse.mm(da, dense.to(DEVICE)).cpu(),
                               torch.sparse.mm(a, dense))


def test_in_place_op_updates_the_device_tensor():
    a = dense_with_zeros(3, 3, seed=6).to_sparse()
    d = a.to(DEVICE)
    d.mul_(2)
    d.add_(d)
    assert torch.equal(d.to_dense().cpu(), (a * 4).to_dense())
    # copy_ between sparse tensors replaces the components.
    e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 3),
                                device=DEVICE)
    e.copy_(d)
    assert torch.equal(e.to_dense().cpu(), (a * 4).to_dense())


def test_sparse_mm_with_reduce_and_sampled_addmm_match_cpu():
    a = dense_with_zeros(4, 5, seed=7).to_sparse_csr()
    b = torch.randn(5, 3)
    for reduce in ["sum", "mean", "amax", "amin"]:
        torch.testing.assert_close(torch.sparse.mm(a.to(DEVICE), b.to(DEVICE), reduce).cpu(),
                                   torch.sparse.mm(a, b, reduce))
    m = torch.randn(4, 4).relu().to_sparse_csr()
    x, y = torch.randn(4, 6), torch.randn(6, 4)
    expected = torch.sparse.sampled_addmm(m, x, y, beta=0.5, alpha=2.0)
    got = torch.sparse.sampled_addmm(m.to(DEVICE), x.to(DEVICE), y.to(DEVICE), beta=0.5,
                                     alpha=2.0)
    assert_same_sparse(got, expected)


def test_gradient_through_a_sparse_op_matches_cpu():
    a = dense_with_zeros(5, 4, seed=8).to_sparse()

    def grads(device):
        s = a.to(device).requires_grad_()
        w = torch.ones(4, 3, device=device, requires_grad=True)
        torch.sparse.mm(s, w).square().sum().backward()
        return s.grad, w.grad

    (sg, wg), (esg, ewg) = grads(DEVICE), grads("cpu")
    assert sg.is_sparse and sg.device.type == DEVICE
    torch.testing.assert_close(sg.cpu().to_dense(), esg.to_dense())
    torch.testing.assert_close(wg.cpu(), ewg)


def test_printing_shows_device_and_values():
    s = torch.tensor([[0.0, 2.0], [3.0, 0.0]], device=DEVICE).to_sparse()
    text = repr(s)
    assert "device='accinte:0'" in text and "layout=torch.sparse_coo" in text
    assert "2." in text and "3." in text


def test_mixing_host_and_device_sparse_is_an_error():
    a = dense_with_zeros(3, 3).to_sparse()
    with pytest.raises(RuntimeError, match="same device"):
        a.to(DEVICE) + a


def test_operator_without_a_cpu_kernel_names_op_and_layout():
    s = dense_with_zeros(3, 3).to(DEVICE).to_sparse_csr()
    with pytest.raises(NotImplementedError, match=r"aten::.* is not supported for "
                                                  r"torch.sparse_csr tensors on accinte"):
        torch.cumsum(s, 0)


def test_an_operator_during_capture_is_refused_before_it_is_queued():
    # The layout fallback waits for the stream, which a capture forbids: it
    # says so, naming the operator and the layout, instead of recording the
    # kernel and then failing inside the wait.
    x = dense_with_zeros(3, 3)
    s = x.to(DEVICE).to_sparse()
    with pytest.raises(RuntimeError, match="synchronization is not allowed while capturing") as e:
        with torch.accinte.graph(torch.accinte.Graph()):
            s * 2
    assert "aten::mul.Tensor on torch.sparse_coo tensors" in str(e.value.__context__)
    assert not torch.accinte.is_current_stream_capturing()
    assert_same_sparse(s * 2, x.to_sparse() * 2)  # the device keeps working


def test_strict_mode_keeps_sparse_working(run_python):
    out = run_python("""
import torch
x = torch.tensor([[0.0, 1.5], [2.5, 0.0]])
s = x.to("accinte").to_sparse()
c = x.to("accinte").to_sparse_csr()
print("ok", torch.equal((s * 2).to_dense().cpu(), x * 2),
      torch.equal((c @ torch.eye(2, device="accinte")).cpu(), x), s.to("cpu")._nnz())
""", env={"ACCINTE_STRICT": "1"})
    assert "ok True True 2" in out.stdout, out.stderr
