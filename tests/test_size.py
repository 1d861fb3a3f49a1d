"""The size guard (tools/sz.py): the repository is within its limits, C++
line length included, and the guard fails on small trees made here that are
not (a file over 600 lines, a Python or C++ function over 120, a C++ line over
100 characters with ``--line-length``). Needs no device: it only reads files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import sz  # noqa: E402


def run_sz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "sz.py"), *args],
                          capture_output=True, text=True, timeout=120)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def python_function(name: str, lines: int) -> str:
    """A function spanning ``lines`` lines, its ``def`` line included."""
    return f"def {name}():\n" + "    x = 1\n" * (lines - 1)


def cpp_function(signature: str, lines: int) -> str:
    """A function spanning ``lines`` lines, signature and closing brace included."""
    return signature + " {\n" + "  f();\n" * (lines - 2) + "}\n"


def test_repository_is_within_limits():
    result = run_sz("--line-length")
    assert result.returncode == 0, result.stdout + result.stderr


def test_limits_pass_at_the_limit(tmp_path):
    write(tmp_path, "tools/ok.py", python_function("fits", 120) + "\n" * (600 - 120))
    write(tmp_path, "csrc/ok.cpp", cpp_function("void fits()", 120))
    result = run_sz(str(tmp_path))
    assert (result.returncode, result.stdout) == (0, "sizes ok\n")


def test_long_file_and_functions_fail(tmp_path):
    write(tmp_path, "tests/long_file.py", "x = 1\n" * 601)
    write(tmp_path, "examples/long_function.py", "import os\n\n\n" + python_function("big", 121))
    write(tmp_path, "third_party/accinte/src/a.c", cpp_function("static int big(void)", 121))
    write(tmp_path, "docs/ignored.py", "x = 1\n" * 700)  # not a scanned directory
    result = run_sz(str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "third_party/accinte/src/a.c:1: function big (121 lines, limit 120)",
        "examples/long_function.py:4: function big (121 lines, limit 120)",
        "tests/long_file.py:1: file (601 lines, limit 600)",
    ]


def test_line_length_is_checked_only_when_asked(tmp_path):
    write(tmp_path, "csrc/wide.h", "int x;  // " + "w" * 90 + "\n")  # 101 characters
    assert run_sz(str(tmp_path)).returncode == 0
    result = run_sz("--line-length", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == "csrc/wide.h:1: line (101 characters, limit 100)\n"


def test_cpp_scanner_finds_each_function_body():
    source = textwrap.dedent("""\
        #define BLOCK(x) { x }
        namespace outer {
        namespace {
        struct Widget : Base {
          Widget(int x) : a_{x}, b_(2) {
            log("}");
          }
         public:
          int get() const noexcept override { return '}'; }
          auto list() -> std::vector<int> {
            return {};  /* } */
          }
          int a_{0};
        };
        const int table[] = {1, 2};
        auto twice = [](int x) { return 2 * x; };
        }  // namespace
        template <typename T>
        T identity(T x) {
          return x;
        }
        bool operator==(const A& a, const A& b) { return true; }
        TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
          m.impl("x", [](int) { return 1; });
        }
        }  // namespace outer
        """)
    assert list(sz.c_functions(source)) == [
        ("Widget", 5, 7), ("get", 9, 9), ("list", 10, 12), ("lambda", 16, 16),
        ("identity", 18, 21), ("operator==", 22, 22), ("TORCH_LIBRARY_IMPL", 23, 25),
    ]
