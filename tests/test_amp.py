"""Automatic mixed precision: the autocast policy of csrc/amp/autocast_mode.cpp
class by class, agreement with CPU autocast, GradScaler, a training loop."""

import pytest
import torch
import torch.nn.functional as F

DEV = "accinte"
LOW = [torch.float16, torch.bfloat16]


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEV, dtype=dtype)


# Each entry builds float32 accinte inputs and calls one operator.
LOWER_PRECISION_OPS = {
    "mm": lambda: torch.mm(rand(4, 5), rand(5, 3)),
    "mv": lambda: torch.mv(rand(4, 5), rand(5)),
    "bmm": lambda: torch.bmm(rand(2, 4, 5), rand(2, 5, 3)),
    "matmul": lambda: torch.matmul(rand(4, 5), rand(5, 3)),
    "addmm": lambda: torch.addmm(rand(4, 3), rand(4, 5), rand(5, 3)),
    "addmv": lambda: torch.addmv(rand(4), rand(4, 5), rand(5)),
    "addr": lambda: torch.addr(rand(4, 3), rand(4), rand(3)),
    "addbmm": lambda: torch.addbmm(rand(4, 3), rand(2, 4, 5), rand(2, 5, 3)),
    "baddbmm": lambda: torch.baddbmm(rand(2, 4, 3), rand(2, 4, 5), rand(2, 5, 3)),
    "linear": lambda: F.linear(rand(4, 5), rand(3, 5), rand(3)),
    "einsum": lambda: torch.einsum("ij,jk->ik", rand(4, 5), rand(5, 3)),
    "linalg_multi_dot": lambda: torch.linalg.multi_dot([rand(4, 5), rand(5, 3), rand(3, 2)]),
    "linalg_vecdot": lambda: torch.linalg.vecdot(rand(4, 5), rand(4, 5)),
    "conv1d": lambda: F.conv1d(rand(1, 2, 8), rand(3, 2, 3)),
    "conv1d.padding": lambda: F.conv1d(rand(1, 2, 8), rand(3, 2, 3), padding="same"),
    "conv2d": lambda: F.conv2d(rand(1, 2, 6, 6), rand(3, 2, 3, 3), rand(3)),
    "conv3d": lambda: F.conv3d(rand(1, 2, 4, 4, 4), rand(3, 2, 2, 2, 2)),
    "conv_transpose1d": lambda: F.conv_transpose1d(rand(1, 2, 5), rand(2, 3, 3)),
    "conv_transpose2d": lambda: F.conv_transpose2d(rand(1, 2, 4, 4), rand(2, 3, 3, 3)),
    "conv_transpose3d": lambda: F.conv_transpose3d(rand(1, 2, 3, 3, 3), rand(2, 3, 2, 2, 2)),
    "prelu": lambda: F.prelu(rand(2, 3, 4), rand(3)),
    "sdpa": lambda: F.scaled_dot_product_attention(rand(1, 2, 4, 8), rand(1, 2, 4, 8),
                                                   rand(1, 2, 4, 8)),
}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", LOWER_PRECISION_OPS)
def test_lower_precision_ops_run_in_the_autocast_dtype(name, dtype):
    with torch.autocast(DEV, dtype=dtype):
        out = LOWER_PRECISION_OPS[name]()
    assert out.dtype == dtype
    assert LOWER_PRECISION_OPS[name]().dtype == torch.float32  # and only inside the region


# Each entry takes a lower-precision accinte tensor of shape (4, 6).
FP32_OPS = {
    "exp": torch.exp,
    "log": lambda h: torch.log(h.abs() + 1),
    "pow": lambda h: torch.pow(h, 2),
    "rsqrt": lambda h: torch.rsqrt(h.abs() + 1),
    "softplus": F.softplus,
    "logsumexp": lambda h: torch.logsumexp(h, 1),
    "softmax": lambda h: torch.softmax(h, 1),
    "log_softmax": lambda h: torch.log_softmax(h, 1),
    "sum": torch.sum,
    "sum.dim": lambda h: h.sum(1),
    "prod": lambda h: h.prod(1),
    "cumsum": lambda h: h.cumsum(1),
    "cumprod": lambda h: h.cumprod(1),
    "layer_norm": lambda h: F.layer_norm(h, (6,)),
    "group_norm": lambda h: F.group_norm(h.view(2, 2, 6), 2),
    "norm": lambda h: h.norm(),
    "norm.dim": lambda h: h.norm(2, 1),
    "frobenius_norm": lambda h: torch.norm(h, "fro", dim=(0, 1)),
    "nuclear_norm": torch.nuclear_norm,
    "linalg_vector_norm": torch.linalg.vector_norm,
    "cosine_similarity": lambda h: F.cosine_similarity(h, h),
    "cdist": lambda h: torch.cdist(h, h),
    "mse_loss": lambda h: F.mse_loss(h, torch.zeros_like(h)),
    "l1_loss": lambda h: F.l1_loss(h, torch.zeros_like(h)),
    "smooth_l1_loss": lambda h: F.smooth_l1_loss(h, torch.zeros_like(h)),
    "huber_loss": lambda h: F.huber_loss(h, torch.zeros_like(h)),
    "nll_loss": lambda h: F.nll_loss(h, torch.zeros(4, dtype=torch.long, device=DEV)),
    "cross_entropy": lambda h: F.cross_entropy(h, torch.zeros(4, dtype=torch.long, device=DEV)),
    "bce_with_logits": lambda h: F.binary_cross_entropy_with_logits(h, torch.zeros_like(h)),
    "kl_div": lambda h: F.kl_div(h, torch.softmax(h.float(), 1), reduction="batchmean"),
    "upsample_bilinear2d": lambda h: F.interpolate(h.view(1, 1, 4, 6), scale_factor=2,
                                                    mode="bilinear"),
}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", FP32_OPS)
def test_fp32_ops_run_in_float32(name, dtype):
    h = rand(4, 6).to(dtype)
    with torch.autocast(DEV, dtype=dtype):
        out = FP32_OPS[name](h)
    assert out.dtype == torch.float32


def test_an_explicit_output_dtype_is_kept():
    # fp32_set_opt_dtype: float32 only when the caller chose no dtype.
    h = rand(4, 6).half()
    with torch.autocast(DEV, dtype=torch.float16):
        assert torch.softmax(h, 1, dtype=torch.float64).dtype == torch.float64
        assert h.sum(dtype=torch.float16).dtype == torch.float16


PROMOTE_OPS = {
    "addcmul": lambda a, b: torch.addcmul(a, b, b),
    "addcdiv": lambda a, b: torch.addcdiv(a, b, b.abs() + 1),
    "atan2": torch.atan2,
    "dot": lambda a, b: torch.dot(a.flatten(), b.flatten()),
    "cross": lambda a, b: torch.cross(a[:, :3], b[:, :3], dim=1),
    "linalg_cross": lambda a, b: torch.linalg.cross(a[:, :3], b[:, :3]),
    "cat": lambda a, b: torch.cat([a, b]),
    "stack": lambda a, b: torch.stack([a, b]),
    "tensordot": lambda a, b: torch.tensordot(a, b, dims=([1], [1])),
    "scatter_add": lambda a, b: a.scatter_add(0, torch.zeros_like(b, dtype=torch.long), b),
    "index_put": lambda a, b: a.index_put((torch.tensor([0, 1], device=DEV),), b[:2]),
    "bilinear": lambda a, b: F.bilinear(a, b, rand(2, 6, 6).to(b.dtype)),
}


@pytest.mark.parametrize("name", PROMOTE_OPS)
def test_promote_ops_run_in_the_widest_input_dtype(name):
    op = PROMOTE_OPS[name]
    full, half = rand(4, 6), rand(4, 6).half()
    with torch.autocast(DEV, dtype=torch.float16):
        assert op(full, half).dtype == torch.float32
        assert op(half, half).dtype == torch.float16


def test_ops_without_a_policy_fall_through():
    # Without the fallthrough on AutocastPrivateUse1 these would not run at all.
    x = rand(4, 6)
    with torch.autocast(DEV, dtype=torch.float16):
        assert torch.relu(x).dtype == torch.float32
        assert (x + 1).dtype == torch.float32
        assert x.half().relu().dtype == torch.float16


def test_binary_cross_entropy_is_refused_with_the_safe_alternative():
    probs, target = torch.sigmoid(rand(4)), torch.rand(4, device=DEV)
    with torch.autocast(DEV, dtype=torch.float16):
        with pytest.raises(RuntimeError, match="binary_cross_entropy_with_logits"):
            F.binary_cross_entropy(probs, target)
        # PyTorch's standard wording, which code matches on; the same as CUDA's.
        with pytest.raises(RuntimeError, match="BCELoss are unsafe to autocast"):
            F.binary_cross_entropy(probs, target)
        with torch.autocast(DEV, enabled=False):  # allowed where autocast is off
            assert F.binary_cross_entropy(probs, target).dtype == torch.float32
    assert F.binary_cross_entropy(probs, target).dtype == torch.float32


def test_cpu_tensors_are_left_alone():
    with torch.autocast(DEV, dtype=torch.float16):
        assert torch.mm(torch.randn(2, 2), torch.randn(2, 2)).dtype == torch.float32


# CPU autocast has the same policy for these operators: same casts, same
# kernels (the fallback runs the CPU's), so the results must be identical.
SAME_POLICY_ON_CPU = {
    "mm": (torch.mm, [(4, 5), (5, 3)]),
    "bmm": (torch.bmm, [(2, 4, 5), (2, 5, 3)]),
    "matmul": (torch.matmul, [(2, 4, 5), (5, 3)]),
    "addmm": (torch.addmm, [(4, 3), (4, 5), (5, 3)]),
    "baddbmm": (torch.baddbmm, [(2, 4, 3), (2, 4, 5), (2, 5, 3)]),
    "linear": (F.linear, [(4, 5), (3, 5), (3,)]),
    "conv2d": (F.conv2d, [(1, 2, 6, 6), (3, 2, 3, 3), (3,)]),
    "conv_transpose2d": (F.conv_transpose2d, [(1, 2, 4, 4), (2, 3, 3, 3)]),
}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", SAME_POLICY_ON_CPU)
def test_matches_cpu_autocast(name, dtype):
    op, shapes = SAME_POLICY_ON_CPU[name]
    inputs = [torch.randn(*shape) for shape in shapes]
    with torch.autocast(DEV, dtype=dtype):
        got = op(*[t.to(DEV) for t in inputs])
    with torch.autocast("cpu", dtype=dtype):
        expected = op(*inputs)
    assert got.dtype == expected.dtype == dtype
    assert torch.equal(got.cpu(), expected)


def test_gradients_flow_back_in_float32():
    layer = torch.nn.Linear(6, 3).to(DEV)
    x = rand(4, 6)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        out = layer(x)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32


def test_accinte_amp_conveniences():
    with torch.accinte.amp.autocast(dtype=torch.bfloat16):
        assert torch.is_autocast_enabled(DEV)
        assert torch.get_autocast_dtype(DEV) == torch.bfloat16
        assert torch.mm(rand(2, 2), rand(2, 2)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled(DEV)

    @torch.accinte.amp.autocast()
    def product(a, b):
        return a @ b

    assert product(rand(2, 2), rand(2, 2)).dtype == torch.get_autocast_dtype(DEV)
    assert torch.accinte.amp.GradScaler().get_scale() == 2.0**16


def test_unsupported_dtype_disables_autocast_with_a_warning():
    with pytest.warns(UserWarning, match="accinte"):
        with torch.autocast(DEV, dtype=torch.float64):
            assert torch.mm(rand(2, 2), rand(2, 2)).dtype == torch.float32


# ---- GradScaler -------------------------------------------------------------


def test_non_finite_check_updates_found_inf_in_place_on_the_device():
    found_inf = torch.zeros(1, device=DEV)
    ptr = found_inf.data_ptr()
    grads = [torch.tensor([2.0, 4.0], device=DEV), torch.tensor([8.0], device=DEV)]
    torch._amp_foreach_non_finite_check_and_unscale_(
        grads, found_inf, torch.tensor([0.5], device=DEV))
    assert found_inf.item() == 0.0
    assert grads[0].tolist() == [1.0, 2.0] and grads[1].tolist() == [4.0]
    grads[1].fill_(float("nan"))
    torch._amp_foreach_non_finite_check_and_unscale_(
        grads, found_inf, torch.tensor([0.5], device=DEV))
    assert found_inf.item() == 1.0
    assert found_inf.data_ptr() == ptr and found_inf.device.type == DEV


def test_update_scale_works_in_place_on_the_device():
    scale = torch.tensor([8.0], device=DEV)
    tracker = torch.zeros(1, dtype=torch.int32, device=DEV)
    ptrs = scale.data_ptr(), tracker.data_ptr()
    no_inf = torch.zeros(1, device=DEV)
    for _ in range(2):
        torch._amp_update_scale_(scale, tracker, no_inf, 2.0, 0.5, 2)
    assert scale.item() == 16.0 and tracker.item() == 0  # grew after 2 clean steps
    torch._amp_update_scale_(scale, tracker, torch.ones(1, device=DEV), 2.0, 0.5, 2)
    assert scale.item() == 8.0  # backed off
    assert (scale.data_ptr(), tracker.data_ptr()) == ptrs


def _one_param_step(scaler, grad_value):
    p = torch.nn.Parameter(torch.ones(3, device=DEV))
    opt = torch.optim.SGD([p], lr=0.5)
    loss = (p * 2).sum()
    scaler.scale(loss).backward()
    p.grad[0] = grad_value
    scaler.step(opt)
    scaler.update()
    return p.detach().cpu()


def test_grad_scaler_scales_and_unscales():
    scaler = torch.amp.GradScaler(DEV, init_scale=4.0)
    p = torch.nn.Parameter(torch.ones(3, device=DEV))
    opt = torch.optim.SGD([p], lr=0.5)
    assert scaler.scale(torch.tensor(3.0, device=DEV)).item() == 12.0
    scaler.scale((p * 2).sum()).backward()
    assert p.grad.tolist() == [8.0, 8.0, 8.0]
    scaler.unscale_(opt)
    assert p.grad.tolist() == [2.0, 2.0, 2.0]
    scaler.step(opt)
    scaler.update()
    assert p.detach().cpu().tolist() == [0.0, 0.0, 0.0]
    assert scaler.get_scale() == 4.0


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_grad_scaler_skips_steps_with_non_finite_gradients_and_backs_off(bad):
    scaler = torch.amp.GradScaler(DEV, init_scale=16.0, backoff_factor=0.25)
    assert torch.equal(_one_param_step(scaler, bad), torch.ones(3))  # step skipped
    assert scaler.get_scale() == 4.0
    assert scaler._scale.device.type == DEV


def test_grad_scaler_grows_after_clean_steps():
    scaler = torch.amp.GradScaler(DEV, init_scale=2.0, growth_interval=3)
    for _ in range(3):
        _one_param_step(scaler, 1.0)
    assert scaler.get_scale() == 4.0


def test_mixed_precision_training_loop():
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    y = (x @ torch.randn(8, 1)).tanh()
    x, y = x.to(DEV), y.to(DEV)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1)).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(DEV, init_scale=2.0**10)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        with torch.autocast(DEV, dtype=torch.float16):
            out = model(x)
            assert out.dtype == torch.float16
            loss = F.mse_loss(out, y)
            assert loss.dtype == torch.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert losses[-1] < 0.5 * losses[0]
