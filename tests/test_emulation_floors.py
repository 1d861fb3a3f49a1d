"""csrc/emulation/ has two floors (its README): the substrate every CPU-computed
kernel runs on, and the boxed fallback engine in fallback/ above it. Nothing on
the substrate, and none of the hand-written kernels, the collectives or the
bindings, includes the engine; only operator registration (csrc/aten/*.cpp)
and the shims do."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE_INCLUDE = re.compile(r'#include\s+<csrc/emulation/fallback/')


def includers_of_the_engine(folder: str, pattern: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).glob(pattern)
                  if ENGINE_INCLUDE.search(p.read_text()))


def test_the_substrate_kernels_collectives_and_bindings_do_not_include_the_engine():
    for folder in ("csrc/emulation", "csrc/aten/native", "csrc/distributed",
                   "csrc/runtime", "torch_accinte/csrc"):
        assert includers_of_the_engine(folder, "*.[ch]*") == [], folder


def test_registration_reaches_the_engine_through_its_public_headers():
    users = includers_of_the_engine("csrc/aten", "*.cpp")
    assert "csrc/aten/AccInteMinimal.cpp" in users
    public = {"Fallback.h", "LayoutFallback.h"}
    for path in users + includers_of_the_engine("csrc/emulation/shims", "*.cpp"):
        for header in re.findall(r'#include\s+<csrc/emulation/fallback/([^>]+)>',
                                 (ROOT / path).read_text()):
            assert header in public, (path, header)
