"""Runs PyTorch's OpInfo samples on the CPU and on accinte and compares them.

For every OpInfo in `op_db` and every dtype of DTYPES that the op supports on
the CPU, up to `max_samples` sample inputs are made on accinte (as PyTorch's
device-generic tests make them on CUDA; arguments an op wants on the host stay
there) and copied to the CPU with their storage, so views stay views. Both run
forward; for floating dtypes of differentiable ops the gradients of a sum of
the outputs are compared too. A sample the CPU itself cannot run is not
counted. Random operators are compared by shape and dtype only: accinte draws
from its own generator, as CUDA does.

The same run under torch.inference_mode() (`inference=True`) checks that the
stream kernels see the caller's inference mode; it compares forward only.

`python -m tests.conformance.opinfo_runner` prints the summary and every
failure; tests/conformance/test_opinfo.py asserts on the same results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import warnings

import torch
from torch.testing._internal.common_methods_invocations import op_db

from .samples import sample_inputs, seed

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
          torch.int64, torch.bool]
BACKWARD_DTYPES = {torch.float32, torch.float64}

# Tolerances for comparing accinte with the CPU: those of PyTorch's own
# device-versus-CPU test (test_ops.py's test_compare_cpu, 1e-3), wider for
# the half types. accinte runs the CPU's kernels, so most ops agree bit for
# bit; the slack covers ops that PyTorch routes to another algorithm for a
# non-CPU device (the fused RNN cells, derivative formulas that make inputs
# contiguous off the CPU) and reductions whose order depends on alignment.
TOLERANCES = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=1.6e-2, atol=2e-2),
    torch.float32: dict(rtol=1e-3, atol=1e-3),
    torch.float64: dict(rtol=1e-3, atol=1e-3),
    torch.complex64: dict(rtol=1e-3, atol=1e-3),
}


@dataclasses.dataclass
class Result:
    op: str
    dtype: str
    sample: int
    stage: str  # "forward" or "backward"
    error: str


def is_random(op) -> bool:
    return bool(getattr(op, "nondeterministic_seeded", False)) or op.name in {
        "bernoulli", "normal", "uniform", "multinomial", "rand_like", "randn_like",
        "randint_like", "nn.functional.dropout", "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout", "nn.functional.dropout2d",
        "nn.functional.dropout3d", "nn.functional.rrelu", "randint", "randn", "rand",
        "bernoulli_", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
        "torch.empty", "empty_permuted", "exponential", "geometric", "cauchy", "log_normal",
        # draw random numbers inside (pooling regions, random projections)
        "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
        "svd_lowrank", "pca_lowrank",
    }


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A CPU copy of an accinte tensor that keeps its storage layout (views of
    a larger storage stay such views)."""
    if t.layout != torch.strided:
        return t.to("cpu")
    storage = t.detach().untyped_storage().cpu()
    copy = torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.shape, t.stride())
    if t.is_conj():
        copy = copy.conj()
    if t.is_neg():
        copy = copy._neg_view()
    return copy.requires_grad_(t.requires_grad) if t.is_leaf else copy


def sample_is_random(op, sample) -> bool:
    """Attention samples that apply dropout draw random numbers."""
    if op.name == "nn.functional.scaled_dot_product_attention":
        return sample.kwargs.get("dropout_p", 0.0) > 0
    if op.name == "nn.functional.multi_head_attention_forward":
        dropout_p = sample.args[9] if len(sample.args) > 9 else sample.kwargs.get("dropout_p", 0)
        return dropout_p > 0 and sample.kwargs.get("training", True)
    return False


def _to_cpu(value):
    if isinstance(value, torch.Tensor):
        return _host_copy(value) if value.device.type == "accinte" else value
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, torch.device) and value.type == "accinte":
        return torch.device("cpu")
    if isinstance(value, str) and value.startswith("accinte"):
        return "cpu"
    return value


def _flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(itertools.chain.from_iterable(_flatten(v) for v in value))
    if isinstance(value, torch.return_types.__dict__.get("_ReturnType", ())) or hasattr(value, "_fields"):
        return list(itertools.chain.from_iterable(_flatten(v) for v in value))
    return [value]


def compare(got, expected, dtype, random_op: bool) -> None:
    got_flat, exp_flat = _flatten(got), _flatten(expected)
    assert len(got_flat) == len(exp_flat), f"{len(got_flat)} outputs, expected {len(exp_flat)}"
    for g, e in zip(got_flat, exp_flat):
        if isinstance(e, torch.Tensor):
            assert isinstance(g, torch.Tensor), f"got {type(g).__name__}, expected a tensor"
            assert g.device.type == "accinte", f"output on {g.device}"
            assert g.shape == e.shape and g.dtype == e.dtype, (
                f"got {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}")
            if random_op:
                continue
            tol = TOLERANCES.get(e.dtype, dict(rtol=0, atol=0))
            torch.testing.assert_close(g.cpu(), e, equal_nan=True, check_stride=False, **tol)
        elif isinstance(e, float) and e != e:
            assert g != g
        else:
            assert g == e or (isinstance(e, float) and abs(g - e) <= 1e-5 * max(1, abs(e))), (
                f"got {g!r}, expected {e!r}")


def _grads(result, inputs):
    outputs = [t for t in _flatten(result)
               if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point]
    leaves = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs or not leaves:
        return None
    total = sum((o.float().sum() if o.numel() else o.sum()) for o in outputs)
    return torch.autograd.grad(total, leaves, allow_unused=True)


def run_op(op, max_samples: int = 3, dtypes=DTYPES,
           inference: bool = False) -> tuple[int, list[Result]]:
    """Runs one OpInfo; returns (samples compared, failures). With `inference`
    samples are made and both devices run under torch.inference_mode(),
    forward only (inference tensors take no gradient)."""
    mode = torch.inference_mode if inference else contextlib.nullcontext
    with mode():
        return _run_op(op, max_samples, dtypes, not inference)


def _run_op(op, max_samples, dtypes, with_backward) -> tuple[int, list[Result]]:
    compared = 0
    failures: list[Result] = []
    random_op = is_random(op)
    # LITERALINCLUDE START: TESTING OPINFO SAMPLES
    supported = op.supported_dtypes("cpu")
    for dtype in dtypes:
        if dtype not in supported:
            continue
        backward = with_backward and dtype in BACKWARD_DTYPES and op.supports_autograd
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                samples = list(itertools.islice(
                    sample_inputs(op, "accinte", dtype, requires_grad=backward), max_samples))
    # LITERALINCLUDE END: TESTING OPINFO SAMPLES
        except Exception as error:  # noqa: BLE001
            # Making samples on accinte is itself an accinte failure if the
            # CPU can make them.
            try:
                next(sample_inputs(op, "cpu", dtype))
            except Exception:  # noqa: BLE001
                continue
            compared += 1
            failures.append(Result(op_key(op), str(dtype).replace("torch.", ""), -1, "samples",
                                   f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"))
            continue
        for index, sample in enumerate(samples):
            random_sample = random_op or sample_is_random(op, sample)
            try:
                cpu_input = _to_cpu(sample.input)
                cpu_args = _to_cpu(sample.args)
                cpu_kwargs = _to_cpu(sample.kwargs)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    seed(0)
                    expected = op(cpu_input, *cpu_args, **cpu_kwargs)
                    expected_grads = (_grads(expected, _flatten([cpu_input, *cpu_args]))
                                      if backward else None)
            except Exception:
                continue  # not a sample the CPU runs
            compared += 1
            stage = "forward"
            try:
                dev_input, dev_args, dev_kwargs = sample.input, sample.args, sample.kwargs
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    seed(0)
                    got = op(dev_input, *dev_args, **dev_kwargs)
                compare(got, expected, dtype, random_sample)
                if expected_grads is not None and not random_sample:
                    stage = "backward"
                    got_grads = _grads(got, _flatten([dev_input, *dev_args]))
                    for g, e in zip(got_grads or (), expected_grads):
                        if e is None:
                            continue
                        assert g is not None, "missing gradient"
                        compare(g, e, dtype, False)
            except Exception as error:  # noqa: BLE001 — every failure is data
                message = str(error).strip().splitlines()
                failures.append(Result(op_key(op), str(dtype).replace("torch.", ""), index, stage,
                                       f"{type(error).__name__}: {message[0] if message else ''}"[:300]))
    return compared, failures


def op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def main() -> None:
    import sys

    total = 0
    all_failures = []
    for op in op_db:
        compared, failures = run_op(op)
        total += compared
        all_failures.extend((op_key(op), f) for f in failures)
        print(f"{op_key(op):45} {compared:4d} samples {len(failures):3d} failures", file=sys.stderr)
    failed = len(all_failures)
    print(f"compared {total} samples, {failed} failed: {100 * (total - failed) / max(total, 1):.2f}% pass")
    for key, f in all_failures:
        print(f"{key} {f.dtype} #{f.sample} {f.stage}: {f.error}")


if __name__ == "__main__":
    main()
