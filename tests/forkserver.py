"""A fork server: Python programs in processes of their own, without paying for
`import torch` in each.

Starting an interpreter that imports torch costs a couple of seconds of CPU,
and the suite starts a hundred such programs (scripts in a fresh process:
start-up settings, strict-mode faults, the examples, the robustness cases). So
a test process starts this program once per set of start-up variables
(`ForkServer`): it imports the modules it is told to and waits. For each
program it forks a child, which takes the program's environment, working
directory, arguments and output files, runs the source as `__main__` and exits
as a fresh interpreter would (atexit handlers, non-daemon threads joined). The
server reports how the child ended: exit code or signal, time-out, and what it
printed.

What the child inherits is what the server imported, and what importing it
read from the environment: the server's environment is the program's but for
the variables read later (all but `STARTUP_VARIABLES`: ACCINTE_*, ACCL_*...),
which are the child's own. A server started with `TORCH_DEVICE_BACKEND_AUTOLOAD=0`
leaves the device backends to the child, which loads them before the program
runs, under the program's environment (so libaccinte reads its ACCINTE_*
variables). A program that must see `import torch` itself happen (the autoload
tests) runs in a fresh interpreter instead. Other differences: every child of
a server has the server's string hash seed, and the child leads a process
group of its own, which is killed when it exits.

Protocol: the client writes one JSON object per line on the server's stdin,
``{"source", "argv", "env", "cwd", "timeout", "merge_output"}``; the server
answers one line on its stdout, ``{"returncode", "timed_out", "stdout",
"stderr"}``.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

# What `import torch` and the libraries it loads (OpenMP, MKL, OpenBLAS, the
# allocator, Kineto, the C library's locale and time zone) read from the
# environment, by prefix: a server serves the programs that agree with it on
# these. Everything else (ACCINTE_*, ACCL_*, the launch variables, Inductor's
# cache) is read later and is the child's own, as is the autoload switch (see
# above), so that a variable a test or a library leaves behind costs no server.
STARTUP_VARIABLES = ("OMP_", "MKL_", "OPENBLAS_", "GOMP_", "KMP_", "TORCH", "PYTORCH_", "FX_",
                     "NPY_", "KINETO_", "LD_", "PYTHON", "MALLOC_", "GLIBC_", "ASAN_", "UBSAN_",
                     "LSAN_", "LANG", "LC_", "TZ", "CUDA_")
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"


def _startup_key(env: dict[str, str]) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(STARTUP_VARIABLES) and k != AUTOLOAD))


# ---- the server -----------------------------------------------------------


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    """The child's exit code (-signal if a signal ended it) and whether it timed
    out (then it and its process group were killed)."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), True
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    _kill_group(pid)  # grandchildren the program left behind
    return os.waitstatus_to_exitcode(status), False


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing left in it


def _die_with_parent() -> None:
    """SIGKILL when the server dies (a client that timed out stops it), so that
    no program outlives its server with no time-out left."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def serve(replies) -> dict:
    """Answers requests until stdin closes (then exits); in each forked child,
    returns the child's request."""
    for line in sys.stdin:
        request = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)  # its own group: a time-out kills its children too
                _die_with_parent()
                os.dup2(out.fileno(), 1)
                os.dup2((out if request["merge_output"] else err).fileno(), 2)
                replies.close()
                return request
            try:
                os.setpgid(pid, pid)  # also here: a time-out may come before the child ran
            except OSError:
                pass  # the child has set it, or has exited already
            returncode, timed_out = _wait(pid, request["timeout"])
            out.seek(0)
            err.seek(0)
            replies.write(json.dumps({
                "returncode": returncode, "timed_out": timed_out,
                "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace")}) + "\n")
    sys.exit(0)


def run_as_main(request: dict) -> None:
    """In the child: becomes the program, as `python -c source args...` or
    `python script args...` would have started it."""
    import builtins
    import types

    # Whether the server loaded the device backends (its environment allowed it).
    autoloaded = "torch" in sys.modules and os.environ.get(AUTOLOAD, "1") == "1"
    with open(os.devnull) as devnull:
        os.dup2(devnull.fileno(), 0)
    sys.stdin = open(0, closefd=False)
    # As the interpreter opens them on files: stdout buffered (written through
    # under -u or PYTHONUNBUFFERED, which a forked child's unflushed print
    # relies on), stderr line-buffered.
    if sys.__stdout__.write_through or request["merge_output"]:
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    else:
        sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the server's choice, made before the environment was the program's
    os.chdir(request["cwd"])
    sys.argv = request["argv"]
    script = sys.argv[0] if sys.argv[0] != "-c" else None
    sys.path[0] = os.path.dirname(os.path.abspath(script)) if script else ""
    torch = sys.modules.get("torch")
    if torch is not None and not autoloaded and torch._is_device_backend_autoload_enabled():
        torch._import_device_backends()  # as `import torch` would have, under this environment
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    if script:
        main.__file__ = os.path.abspath(script)
    sys.modules["__main__"] = main
    source = request["source"]
    if script:
        import tokenize

        with tokenize.open(script) as f:  # its coding cookie, else UTF-8, as python reads it
            source = f.read()
    try:
        exec(compile(source, script or "<string>", "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:  # as the interpreter reports it: from the program's frames
        e.with_traceback(e.__traceback__.tb_next)
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)


def main() -> None:
    import gc
    import importlib

    for name in sys.argv[1:]:
        importlib.import_module(name)
    # Everything imported so far is never garbage: children skip it in their
    # collections (which would otherwise also copy every page it lives on).
    gc.freeze()
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the protocol
    run_as_main(serve(replies))


# ---- the client -----------------------------------------------------------


class ForkServer:
    """Starts the server (with `env` and the modules `preload` imports), runs
    programs in it, one at a time (not thread-safe), restarts it if it died."""

    def __init__(self, env: dict[str, str] | None = None, preload: tuple[str, ...] = ("torch",)):
        self._env = dict(os.environ if env is None else env)
        self._preload = preload
        self._process: subprocess.Popen | None = None

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *self._preload], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=self._env, text=True, bufsize=1)

    def run(self, argv: list[str], source: str = "", env: dict[str, str] | None = None,
            timeout: float = 120, merge_output: bool = False) -> dict:
        """Runs `source` (argv[0] "-c") or the script argv[0], with the arguments
        argv[1:], the environment `env` (the server's if None) and this process's
        working directory; returns the server's answer (see the protocol)."""
        if self._process is None or self._process.poll() is not None:
            self._start()
        request = {"source": source, "argv": argv, "env": self._env if env is None else env,
                   "cwd": os.getcwd(), "timeout": timeout, "merge_output": merge_output}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        ready, _, _ = select.select([self._process.stdout], [], [], timeout + 60)
        answer = self._process.stdout.readline() if ready else ""
        if not answer:
            self.close()
            raise RuntimeError("the fork server died or stopped answering")
        return json.loads(answer)

    def close(self) -> None:
        """Stops the server (it holds no state worth an orderly exit)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process.stdin.close()
            self._process.stdout.close()
            self._process = None


_servers: dict[tuple, ForkServer] = {}
MAX_SERVERS = 3  # each holds torch's few hundred MiB (shared with its children)


@atexit.register
def _close_servers() -> None:
    while _servers:
        _servers.popitem()[1].close()


def run_python(argv: list[str], source: str = "", env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """As `subprocess.run([sys.executable, *argv], env=env, capture_output=True,
    text=True, timeout=timeout)`, in a child of the fork server whose start-up
    variables are env's (a server is started for a new set, the oldest one
    stopped beyond MAX_SERVERS). Raises subprocess.TimeoutExpired as run does."""
    env = dict(os.environ if env is None else env)
    key = _startup_key(env)
    server = _servers.pop(key, None)
    if server is None:
        server = ForkServer({**env, AUTOLOAD: "0"})
        while len(_servers) >= MAX_SERVERS:
            _servers.pop(next(iter(_servers))).close()
    _servers[key] = server  # the most recently used last
    answer = server.run(argv, source, env, timeout)
    args = [sys.executable, *argv]
    if answer["timed_out"]:
        raise subprocess.TimeoutExpired(args, timeout, answer["stdout"], answer["stderr"])
    return subprocess.CompletedProcess(args, answer["returncode"], answer["stdout"],
                                       answer["stderr"])


if __name__ == "__main__":
    main()
