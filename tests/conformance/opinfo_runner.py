"""Runs PyTorch's OpInfo samples on the CPU and on accinte and compares them.

For every OpInfo in `op_db` and every dtype of DTYPES that the op supports on
the CPU, up to `max_samples` sample inputs run forward on both devices; for
floating dtypes of differentiable ops the gradients of a sum of the outputs
are compared too. A sample the CPU itself cannot run is not counted. Random
operators are compared by shape and dtype only: accinte draws from its own
generator, as CUDA does.

`python -m tests.conformance.opinfo_runner` prints the summary and every
failure; tests/conformance/test_opinfo.py asserts on the same results.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import torch
from torch.testing._internal.common_methods_invocations import op_db

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
          torch.int64, torch.bool]
BACKWARD_DTYPES = {torch.float32, torch.float64}

# Tolerances per dtype for comparing accinte with the CPU. accinte runs the
# CPU's own kernels, so most ops agree bit for bit; the slack covers kernels
# whose vectorised and scalar paths differ when memory alignment differs.
TOLERANCES = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
    torch.complex64: dict(rtol=1.3e-6, atol=1e-5),
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
    }


def _to(value, device):
    if isinstance(value, torch.Tensor):
        return value.detach().to(device).requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    if isinstance(value, torch.device) or (isinstance(value, str) and value == "cpu"):
        return device
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


def run_op(op, max_samples: int = 3) -> tuple[int, list[Result]]:
    """Runs one OpInfo; returns (samples compared, failures)."""
    compared = 0
    failures: list[Result] = []
    random_op = is_random(op)
    supported = op.supported_dtypes("cpu")
    for dtype in DTYPES:
        if dtype not in supported:
            continue
        backward = dtype in BACKWARD_DTYPES and op.supports_autograd
        try:
            samples = list(itertools.islice(
                op.sample_inputs("cpu", dtype, requires_grad=backward), max_samples))
        except Exception:
            continue  # the CPU cannot even build samples: nothing to compare
        for index, sample in enumerate(samples):
            inputs = [sample.input, *sample.args]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.manual_seed(0)
                    expected = op(sample.input, *sample.args, **sample.kwargs)
                    expected_grads = _grads(expected, _flatten(inputs)) if backward else None
            except Exception:
                continue  # not a sample the CPU runs
            compared += 1
            stage = "forward"
            try:
                dev_input = _to(sample.input, "accinte")
                dev_args = _to(sample.args, "accinte")
                dev_kwargs = _to(sample.kwargs, "accinte")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.manual_seed(0)
                    got = op(dev_input, *dev_args, **dev_kwargs)
                compare(got, expected, dtype, random_op)
                if expected_grads is not None and not random_op:
                    stage = "backward"
                    got_grads = _grads(got, _flatten([dev_input, *dev_args]))
                    for g, e in zip(got_grads or (), expected_grads):
                        if e is None:
                            continue
                        assert g is not None, "missing gradient"
                        compare(g, e, dtype, False)
            except Exception as error:  # noqa: BLE001 — every failure is data
                message = str(error).strip().splitlines()
                failures.append(Result(op.full_name if hasattr(op, "full_name") else op.name,
                                       str(dtype).replace("torch.", ""), index, stage,
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
