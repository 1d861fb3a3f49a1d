"""The examples run as a user would run them."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args],
                          capture_output=True, text=True, timeout=600)


def test_train_mlp_reaches_the_cpu_loss():
    out = run("train_mlp.py", "--epochs", "3", "--samples", "1024")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "accinte reached the CPU's loss" in out.stdout


def test_usage_example_runs_as_written():
    out = run("usage.py")
    assert out.returncode == 0, out.stderr
    assert "AccInte backend is available!" in out.stdout
    assert "Device of y: accinte:0" in out.stdout
    assert "Device of z: cpu" in out.stdout
    assert "tensor([[3., 4.],\n        [5., 6.]], device='accinte:0')" in out.stdout


# Each example below asserts its own results; the test checks that it ran to
# the end and printed its conclusion.
SELF_CHECKING = [
    ("custom_op_cpp.py", "custom_abs matches the CPU: forward, backward, meta and fake shapes"),
    ("custom_op_python.py", "examples::softsign matches the CPU formula"),
    ("amp.py", "autocast and GradScaler work on accinte"),
    ("streams_events.py", "streams and events behave as on CUDA"),
    ("memory_stats.py", "memory statistics, caching and snapshots work on accinte"),
    ("profile_training.py", "the profiler sees accinte kernels, copies and memory"),
    ("bad_input.py", "bad input is refused at the call and the device keeps working"),
    ("cpu_exact.py", "accinte gives the CPU's exact answers"),
    ("fidelity.py", "the asynchronous engine behaves as the CPU"),
    ("libraries.py", "libraries train on accinte as on the CPU"),
    ("python_kernels_and_waits.py", "Python kernels and host waits share the GIL without deadlock"),
    ("compile_model.py", "torch.compile works on accinte and matches the CPU"),
]


@pytest.mark.parametrize("script, conclusion", SELF_CHECKING)
def test_example_runs_and_checks_itself(script, conclusion):
    out = run(script)
    assert out.returncode == 0, f"{script} failed:\n{out.stdout}\n{out.stderr}"
    assert conclusion in out.stdout, out.stdout


def test_every_example_is_tested_and_listed():
    tested = {"train_mlp.py", "usage.py"} | {script for script, _ in SELF_CHECKING}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested
    listed = (EXAMPLES / "README.md").read_text()
    assert all(f"`{name}`" in listed for name in tested)
