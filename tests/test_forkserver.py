"""tests/forkserver.py: a child of the fork server behaves as a program in a
fresh interpreter would, for what the suite's scripts rely on."""

import os
import subprocess
import sys

import pytest

import forkserver


def test_exit_code_and_both_outputs():
    out = forkserver.run_python(["-c", "a", "b"], """
import sys
print("out", sys.argv)
print("err", file=sys.stderr)
sys.exit(3)
""")
    assert (out.returncode, out.stdout, out.stderr) == (3, "out ['-c', 'a', 'b']\n", "err\n")


def test_an_uncaught_exception_is_reported_from_the_programs_frames():
    out = forkserver.run_python(["-c"], "def f():\n    raise ValueError('boom')\nf()\n")
    assert out.returncode == 1
    assert out.stderr.startswith("Traceback (most recent call last):\n  File \"<string>\"")
    assert out.stderr.endswith("ValueError: boom\n") and "forkserver" not in out.stderr


def test_the_backend_loads_under_each_programs_environment():
    # One server for both (the runtime's variables are read after import
    # torch), each child's runtime reading its own ACCINTE_DEVICE_COUNT.
    source = "import os, torch; print(torch.accinte.device_count(), os.getppid())"
    seen = [forkserver.run_python(["-c"], source, {**os.environ, "ACCINTE_DEVICE_COUNT": n})
            for n in ("3", "2")]
    assert [out.returncode for out in seen] == [0, 0], [out.stderr for out in seen]
    (three, server), (two, same_server) = (out.stdout.split() for out in seen)
    assert (three, two) == ("3", "2") and server == same_server
    off = forkserver.run_python(["-c"], "import sys; print('torch_accinte' in sys.modules)",
                                {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert off.stdout == "False\n", off.stderr


def test_a_script_gets_its_path_and_folder(tmp_path):
    script = tmp_path / "script.py"
    (tmp_path / "beside.py").write_text("VALUE = 7\n")
    script.write_text("import sys, beside\nprint(__file__, __name__, sys.argv[1:], beside.VALUE)\n")
    out = forkserver.run_python([str(script), "x"])
    assert out.stdout.split() == [str(script), "__main__", "['x']", "7"], out.stderr


def test_a_time_out_kills_the_program_and_raises_as_subprocess_run_does():
    with pytest.raises(subprocess.TimeoutExpired):
        forkserver.run_python(["-c"], "import time; print('started', flush=True); time.sleep(60)",
                              timeout=1)
    assert forkserver.run_python(["-c"], "print('next')").stdout == "next\n"


def test_a_server_that_died_is_started_again():
    out = forkserver.run_python(["-c"], "import os; print(os.getppid())")
    server = next(s for s in forkserver._servers.values() if s._process.pid == int(out.stdout))
    server._process.kill()
    server._process.wait()
    again = forkserver.run_python(["-c"], "import os; print(os.getppid())")
    assert again.returncode == 0 and again.stdout != out.stdout, again.stderr


def test_the_interpreter_is_this_ones():
    out = forkserver.run_python(["-c"], "import sys; print(sys.executable)")
    assert out.stdout.strip() == sys.executable
