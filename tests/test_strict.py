"""Strict mode (ACCINTE_STRICT=1): device memory is unreadable to host code,
while everything the backend does keeps working."""

import signal

# LITERALINCLUDE START: TESTING STRICT MODE
SCRIPT = """
import ctypes, torch
def compute(device):
    x = torch.arange(12.0, device=device).reshape(3, 4)
    y = (x.t().contiguous() * 2 + torch.ones(4, 3, device=device)).sum(dim=0)
    x.resize_(4, 4)
    return x, y
x, y = compute("accinte")
_, expected = compute("cpu")
print("same as cpu", torch.equal(y.cpu(), expected), x[1, 1].item() == 5.0)
print("about to touch", flush=True)
ctypes.string_at(x.data_ptr(), 4)   # a host read of device memory
print("host read succeeded", flush=True)
"""


def test_strict_mode_faults_on_host_access_only(run_python):
    out = run_python(SCRIPT, env={"ACCINTE_STRICT": "1"})
    assert "same as cpu True True" in out.stdout, out.stderr
    assert "about to touch" in out.stdout
    assert "host read succeeded" not in out.stdout
    assert out.returncode == -signal.SIGSEGV
# LITERALINCLUDE END: TESTING STRICT MODE


def test_without_strict_mode_host_access_works(run_python):
    out = run_python(SCRIPT, env={"ACCINTE_STRICT": "0"})
    assert out.returncode == 0, out.stderr
    assert "host read succeeded" in out.stdout


def test_strict_flag_is_reported(run_python):
    src = "from torch_accinte import _C; print(_C._is_strict())"
    assert run_python(src, env={"ACCINTE_STRICT": "1"}).stdout.strip() == "True"
    assert run_python(src, env={"ACCINTE_STRICT": "0"}).stdout.strip() == "False"
