"""The examples run as a user would run them."""

import subprocess
import sys
from pathlib import Path

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
