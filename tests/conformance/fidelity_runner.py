"""The asynchronous engine's checks on PyTorch's op_db, against the CPU.

The OpInfo comparison (opinfo_runner.py) calls each operator once, functionally,
and reads the result at once. These checks call it the ways that catch an engine
that lies (see Note [accinte fallback]):

- errors: every `error_inputs` sample raises on accinte the exception type the
  CPU raises, at the call; a synchronisation right after raises nothing;
- out: an operator with an `out=` variant, given a preallocated, an empty and a
  wrongly-shaped `out`, gives the CPU's values, shapes and strides for the same
  call, with the CPU's warnings;
- repeat: a sample run three times gives three identical results, equal to the
  CPU's;
- inplace: an in-place variant, run three times on fresh copies, gives the
  CPU's result each time.

Sampling, to fit a few minutes on two cores: the first sample input only, for
float32 and one integer dtype (int64, else int32) where the CPU supports them;
every error input. Random operators are left out of the value checks.
`python -m tests.conformance.fidelity_runner` prints the figures and failures.
"""

from __future__ import annotations

import dataclasses
import warnings

import torch

from .opinfo_runner import TOLERANCES, _flatten, _to_cpu, is_random, op_db, op_key
from .samples import error_inputs, sample_inputs

CHECKS = ("errors", "out", "repeat", "inplace")
DTYPES = (torch.float32, torch.int64, torch.int32)


@dataclasses.dataclass
class Failure:
    check: str
    op: str
    detail: str


def _dtypes(op):
    supported = op.supported_dtypes("cpu")
    chosen = [torch.float32] if torch.float32 in supported else []
    integer = next((d for d in (torch.int64, torch.int32) if d in supported), None)
    return chosen + ([integer] if integer is not None else [])


def _first_sample(op, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return next(sample_inputs(op, "accinte", dtype), None)


def _call(fn, *args, **kwargs):
    """(result, warnings, exception) of a call, warnings as message strings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn(*args, **kwargs), [str(w.message) for w in caught], None
        except Exception as error:  # noqa: BLE001 — compared with the CPU's
            return None, [str(w.message) for w in caught], error


def _equal(got, expected) -> str | None:
    """None if `got` (accinte) equals `expected` (CPU), else why not."""
    got_flat, exp_flat = _flatten(got), _flatten(expected)
    if len(got_flat) != len(exp_flat):
        return f"{len(got_flat)} outputs, expected {len(exp_flat)}"
    for g, e in zip(got_flat, exp_flat):
        if not isinstance(e, torch.Tensor):
            continue
        if not isinstance(g, torch.Tensor) or g.device.type != "accinte":
            return f"got {type(g).__name__}, not an accinte tensor"
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"got {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"
        try:
            tol = TOLERANCES.get(e.dtype, dict(rtol=0, atol=0))
            torch.testing.assert_close(g.cpu(), e, equal_nan=True, check_stride=False, **tol)
        except AssertionError as error:
            return str(error).splitlines()[0]
    return None


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.cpu()
    t = (t.to_dense() if t.layout != torch.strided else t).resolve_conj().resolve_neg()
    t = t.contiguous().view(-1)
    return t.view(torch.uint8) if t.numel() else t


def _identical(a, b) -> bool:
    """Bit for bit (NaNs included)."""
    return all(torch.equal(_bits(x), _bits(y))
               for x, y in zip(_flatten(a), _flatten(b)) if isinstance(x, torch.Tensor))


def _sync_error() -> str | None:
    try:
        torch.accinte.synchronize()
    except Exception as error:  # noqa: BLE001
        return str(error).splitlines()[0][:200]
    return None


# LITERALINCLUDE START: TESTING FIDELITY ERRORS
def check_errors(op):
    compared, failures = 0, []
    try:
        inputs = list(error_inputs(op, "accinte"))
    except Exception:  # noqa: BLE001 — no error inputs for this device
        return 0, []
    for index, error_input in enumerate(inputs):
        sample = error_input.sample_input
        try:
            cpu_args = (_to_cpu(sample.input), _to_cpu(sample.args), _to_cpu(sample.kwargs))
        except Exception:  # noqa: BLE001
            continue
        _, _, cpu_error = _call(op, cpu_args[0], *cpu_args[1], **cpu_args[2])
        if cpu_error is None:
            continue  # the CPU accepts it: nothing to compare
        compared += 1
        _, _, error = _call(op, sample.input, *sample.args, **sample.kwargs)
        late = _sync_error()
        if type(error) is not type(cpu_error):
            got = type(error).__name__ if error is not None else "nothing at the call"
            failures.append(Failure("errors", op_key(op), f"#{index}: raised {got}, CPU "
                                    f"{type(cpu_error).__name__}" + (f"; late: {late}" if late else "")))
        elif late:
            failures.append(Failure("errors", op_key(op), f"#{index}: late error {late}"))
    return compared, failures
# LITERALINCLUDE END: TESTING FIDELITY ERRORS


# LITERALINCLUDE START: TESTING FIDELITY OUT
def check_out(op):
    if not op.supports_out or is_random(op):
        return 0, []
    compared, failures = 0, []
    for dtype in _dtypes(op):
        sample = _first_sample(op, dtype)
        if sample is None:
            continue
        cpu_in, cpu_args, cpu_kwargs = (_to_cpu(sample.input), _to_cpu(sample.args),
                                        _to_cpu(sample.kwargs))
        expected, _, error = _call(op, cpu_in, *cpu_args, **cpu_kwargs)
        if error is not None or not all(isinstance(t, torch.Tensor) and t.layout == torch.strided
                                        for t in _flatten(expected)):
            continue
        single = isinstance(expected, torch.Tensor)

        def outs(device, how):
            made = []
            for e in _flatten(expected):
                if how == "preallocated":
                    made.append(torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=device))
                elif how == "empty":
                    made.append(torch.empty(0, dtype=e.dtype, device=device))
                else:  # wrongly shaped, with elements
                    made.append(torch.empty(e.numel() + 1, dtype=e.dtype, device=device))
            return made[0] if single else tuple(made)

        for how in ("preallocated", "empty", "wrong shape"):
            # A first call spends the warnings the CPU raises once per process.
            _call(op, cpu_in, *cpu_args, **cpu_kwargs, out=outs("cpu", how))
            cpu_out = outs("cpu", how)
            _, cpu_warnings, cpu_error = _call(op, cpu_in, *cpu_args, **cpu_kwargs, out=cpu_out)
            if cpu_error is not None:
                continue
            compared += 1
            out = outs("accinte", how)
            _, got_warnings, got_error = _call(op, sample.input, *sample.args, **sample.kwargs,
                                               out=out)
            late = _sync_error()
            what = f"{dtype} {how} out"
            if got_error is not None or late:
                message = str(got_error or late).splitlines()[0][:160]
                failures.append(Failure("out", op_key(op), f"{what}: {message}"))
                continue
            why = _equal(out, cpu_out)
            strides = [t.stride() for t in _flatten(out)] == [t.stride() for t in _flatten(cpu_out)]
            if why or not strides or got_warnings != cpu_warnings:
                failures.append(Failure("out", op_key(op), f"{what}: " + (
                    why or ("strides differ" if not strides else
                            f"{len(got_warnings)} warnings, CPU {len(cpu_warnings)}"))))
    return compared, failures
# LITERALINCLUDE END: TESTING FIDELITY OUT


# LITERALINCLUDE START: TESTING FIDELITY REPEAT
def check_repeat(op, inplace=False):
    check = "inplace" if inplace else "repeat"
    fn = op.inplace_variant if inplace else op
    if fn is None or is_random(op):
        return 0, []
    compared, failures = 0, []
    for dtype in _dtypes(op):
        sample = _first_sample(op, dtype)
        if sample is None:
            continue
        copy = (lambda t: t.clone()) if inplace else (lambda t: t)
        cpu_in = _to_cpu(sample.input)
        cpu_args, cpu_kwargs = _to_cpu(sample.args), _to_cpu(sample.kwargs)
        with torch.no_grad():
            expected, _, error = _call(fn, copy(cpu_in) if isinstance(cpu_in, torch.Tensor) else cpu_in,
                                       *cpu_args, **cpu_kwargs)
        if error is not None:
            continue
        compared += 1
        results = []
        with torch.no_grad():
            for _ in range(3):
                inp = copy(sample.input) if isinstance(sample.input, torch.Tensor) else sample.input
                got, _, got_error = _call(fn, inp, *sample.args, **sample.kwargs)
                if got_error is not None:
                    break
                results.append(got)
        late = _sync_error()
        if len(results) < 3 or late:
            message = str(got_error or late).splitlines()[0][:160]
            failures.append(Failure(check, op_key(op), f"{dtype}: {message}"))
            continue
        why = _equal(results[0], expected)
        if why or not all(_identical(results[0], r) for r in results[1:]):
            failures.append(Failure(check, op_key(op), f"{dtype}: " + (why or "calls differ")))
    return compared, failures
# LITERALINCLUDE END: TESTING FIDELITY REPEAT


def run_checks(op):
    """{check: (compared, failures)} for one OpInfo."""
    checks = {"errors": check_errors, "out": check_out, "repeat": check_repeat,
              "inplace": lambda op: check_repeat(op, inplace=True)}
    results = {}
    for check, run in checks.items():
        try:
            results[check] = run(op)
        except Exception as error:  # noqa: BLE001 — a broken check is a failure too
            results[check] = (1, [Failure(check, op_key(op), f"check raised {error!r}"[:200])])
    return results


def main() -> None:
    import sys

    names = set(sys.argv[1:])  # optional: only these OpInfos
    totals = {check: [0, []] for check in CHECKS}
    for op in op_db:
        if names and op_key(op) not in names:
            continue
        for check, (compared, failures) in run_checks(op).items():
            totals[check][0] += compared
            totals[check][1].extend(failures)
    for check, (compared, failures) in totals.items():
        rate = 100 * (compared - len(failures)) / max(compared, 1)
        print(f"{check}: {compared} compared, {len(failures)} failing, {rate:.2f}% pass")
    for check, (_, failures) in totals.items():
        for f in failures:
            print(f"{f.check} {f.op}: {f.detail}")


if __name__ == "__main__":
    main()
