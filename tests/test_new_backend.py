"""tools/new_backend.py: a starter backend for a new device, generated from
this tree by the disposition table of docs/chapters/new-backend.md."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("new_backend", ROOT / "tools" / "new_backend.py")
new_backend = importlib.util.module_from_spec(spec)
sys.modules["new_backend"] = new_backend  # dataclasses look their module up
spec.loader.exec_module(new_backend)

MYCHIP = new_backend.Names("mychip", "MyChip", "my", "mccl")


def test_every_source_file_has_a_disposition_in_the_guide():
    rows = new_backend.read_dispositions()
    covered = [p for p in new_backend.tracked_files() if p.startswith(new_backend.COVERED)]
    assert len(covered) > 150
    missing = [p for p in covered if new_backend.disposition_of(p, rows) is None]
    assert not missing, f"no disposition in docs/chapters/new-backend.md for: {missing}"


def test_a_file_without_a_disposition_is_found(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text("| `csrc/runtime/*` | copy and rename | yes | why |\n")
    rows = new_backend.read_dispositions(guide)
    assert new_backend.disposition_of("csrc/runtime/AccInteStream.h", rows).starter
    assert new_backend.disposition_of("csrc/aten/AccInteMinimal.cpp", rows) is None
    guide.write_text("| `csrc/*` | keep it | yes | why |\n")
    with pytest.raises(SystemExit, match="unknown disposition"):
        new_backend.read_dispositions(guide)


@pytest.mark.parametrize("old, new", [
    ("torch_accinte/accinte/streams.py", "torch_mychip/mychip/streams.py"),
    ("c10::accinte::AccInteStream", "c10::mychip::MyChipStream"),
    ("ACCINTE_STRICT=1 torch.accinte", "MYCHIP_STRICT=1 torch.mychip"),
    ("acError_t e = acMalloc(&p, n); if (e != acSuccess)",
     "myError_t e = myMalloc(&p, n); if (e != mySuccess)"),
    ('ProcessGroupACCL, backend "accl", ACCL_ENGINE', 'ProcessGroupMCCL, backend "mccl", MCCL_ENGINE'),
    ("AccinteAccelerator; an accelerator, back, acquire", "MychipAccelerator; an accelerator, back, acquire"),
])
def test_every_spelling_is_renamed(old, new):
    assert MYCHIP.rename(old) == new


def run_tool(*args):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "new_backend.py"), *args],
                          capture_output=True, text=True, timeout=120)


def test_bad_names_and_an_existing_folder_are_refused(tmp_path):
    for name in ("MyChip", "my-chip", "cuda", "x", "accinte2"):
        out = run_tool(name, str(tmp_path / name))
        assert out.returncode != 0 and "NAME" in out.stderr, (name, out.stderr)
    out = run_tool("mychip", str(tmp_path))
    assert out.returncode != 0 and "exists" in out.stderr


def test_the_starter_names_only_the_new_device_and_leaves_the_later_steps_out(tmp_path):
    dest = tmp_path / "mychip"
    out = run_tool("mychip", str(dest))
    assert out.returncode == 0, out.stderr
    assert new_backend.leftovers(dest) == []
    for present in ("Makefile", "README.md", ".gitignore", "tests/test_starter.py",
                    "third_party/mychip/include/mychip/mychip.h",
                    "csrc/runtime/MychipStream.cpp", "csrc/emulation/fallback/Fallback.cpp",
                    "torch_mychip/mychip/__init__.py", "torch_mychip/csrc/Module.cpp"):
        assert (dest / present).is_file(), present
    for absent in ("csrc/profiler", "csrc/distributed", "torch_mychip/_inductor",
                   "torch_mychip/integrations", "torch_mychip/distributed.py",
                   "torch_mychip/csrc/Inductor.cpp", "csrc/README.md"):
        assert not (dest / absent).exists(), absent
    whole = tmp_path / "whole"
    assert run_tool("mychip", str(whole), "--whole").returncode == 0
    assert (whole / "csrc/distributed/ProcessGroupMCCL.cpp").is_file()
    assert new_backend.leftovers(whole) == []


def starter_venv(dest: Path) -> None:
    """The starter's .venv, on this tree's packages: a venv of the same base
    interpreter whose site-packages links to each of this tree's (torch 2.13,
    the build tools, pytest) but torch_accinte's own, whose autoload entry
    point would claim PrivateUse1 first; cmake and ninja beside its python,
    where setup.py and the Makefile look for them. The Makefile's stamp marks
    its dependencies installed, so `make test` starts at the build: installing
    torch again would cost about 50 s of CPU time, spent on what this tree's
    own set-up has just done with the same pins."""
    venv = dest / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    ours = next(Path(p) for p in sys.path
                if p.endswith("site-packages") and Path(p).is_relative_to(sys.prefix))
    theirs = next(venv.glob("lib/python*/site-packages"))
    for entry in ours.iterdir():
        if "torch_accinte" not in entry.name:
            (theirs / entry.name).symlink_to(entry)
    for tool in ("cmake", "ninja"):
        (venv / "bin" / tool).symlink_to(Path(sys.executable).parent / tool)
    (venv / ".deps-installed").touch()


def test_the_starter_builds_and_passes_its_own_tests(tmp_path):
    # The starter's build and tests/test_starter.py, in a .venv that has the
    # starter's dependencies: the bar a vendor starts from. Minutes: the core
    # library is most of this tree's.
    dest = tmp_path / "mychip"
    assert run_tool("mychip", str(dest)).returncode == 0
    starter_venv(dest)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACCINTE_", "VIRTUAL_ENV", "PYTHONPATH"))}
    # -O1: the same code for a quarter less compile time than the Release
    # build's -O3; the stand-in kernels' speed is not what this test checks.
    env["CMAKE_ARGS"] = "-DCMAKE_CXX_FLAGS_RELEASE='-O1 -DNDEBUG' -DCMAKE_C_FLAGS_RELEASE='-O1 -DNDEBUG'"
    done = subprocess.run(["make", "test", "JOBS=2"], cwd=dest, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
    # In the starter's environment: a tensor on mychip trains, and
    # torch.accelerator names mychip.
    check = subprocess.run(
        [str(dest / ".venv/bin/python"), "-c",
         "import torch; x = torch.ones(3, device='mychip', requires_grad=True); "
         "(x * x).sum().backward(); print(torch.accelerator.current_accelerator().type, "
         "x.grad.cpu().tolist())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.split() == ["mychip", "[2.0,", "2.0,", "2.0]"], check.stderr[-2000:]
