"""Autoload: `import torch` alone brings accinte up; the switch turns it off.

Every program here runs in a fresh interpreter (`fresh=True`), not in a child of
the fork server, which has imported torch already."""


def test_import_torch_alone_gives_the_device(run_python):
    out = run_python(
        """
        import sys
        import torch
        assert "torch_accinte" in sys.modules
        x = torch.tensor([[1., 2.], [3., 4.]], device="accinte")
        print(torch.accinte.is_available(), (x + 2).cpu().sum().item(), x.device)
        """,
        fresh=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "18.0", "accinte:0"]


def test_autoload_can_be_turned_off(run_python):
    out = run_python(
        """
        import sys
        import torch
        print("torch_accinte" in sys.modules, hasattr(torch, "accinte"))
        import torch_accinte
        print(hasattr(torch, "accinte"), torch.ones(2, device="accinte").sum().item())
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        fresh=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True", "2.0"]


def test_autoload_entry_point_is_reentrant(run_python):
    out = run_python(
        """
        import torch_accinte   # importing the package first imports torch, which autoloads it
        import torch
        torch_accinte._autoload()
        torch_accinte._autoload()
        print(torch.ones(1, device="accinte").item())
        """,
        fresh=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"


def test_entry_point_is_registered():
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="torch.backends")}
    assert names.get("torch_accinte") == "torch_accinte:_autoload"


# Sanitizer builds and some MPI stacks make Python load extensions with
# RTLD_GLOBAL; libtorch_python then exports its own `initModule` into the
# global scope, which the _C stub must not pick up in place of its own.
RTLD_GLOBAL_PREAMBLE = """
import os, sys
sys.setdlopenflags(os.RTLD_GLOBAL | os.RTLD_NOW)
"""


def test_import_torch_under_rtld_global_autoloads(run_python):
    out = run_python(
        RTLD_GLOBAL_PREAMBLE
        + """
import torch
print(torch.ones(3, device="accinte").sum().item())
""",
        fresh=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3.0"


def test_import_torch_accinte_under_rtld_global(run_python):
    out = run_python(
        RTLD_GLOBAL_PREAMBLE
        + """
import torch
import torch_accinte
print(hasattr(torch, "accinte"), torch.ones(2, device="accinte").sum().item())
""",
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        fresh=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "2.0"]
