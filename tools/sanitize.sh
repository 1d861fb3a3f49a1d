#!/usr/bin/env bash
# `make sanitize`: builds the four libraries with AddressSanitizer and
# UndefinedBehaviorSanitizer into build-asan/ (the regular build/ and the
# libraries in torch_accinte/ are not touched), then runs pytest in a Python
# process with libasan preloaded. Arguments go to pytest; without any it runs
# the robustness suite and the runtime tests, and any argument replaces that
# default (options alone run the whole suite, pytest's testpaths); `tests` is
# the whole suite (see docs/chapters/testing.md). It builds file by file with
# no precompiled header, so it is also the build that shows a file that does not
# include what it uses.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SAN=$ROOT/build-asan
PKG=$SAN/pkg/torch_accinte
PY=$ROOT/.venv/bin/python

# A staged package: the Python sources are symlinks to the real ones, the
# native libraries are the instrumented ones CMake writes here.
mkdir -p "$PKG"
for entry in "$ROOT"/torch_accinte/*; do
  name=$(basename "$entry")
  case $name in lib | _C*.so | __pycache__) continue ;; esac
  ln -sfn "$entry" "$PKG/$name"
done

FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
if [ ! -f "$SAN/CMakeCache.txt" ]; then
  "$ROOT/.venv/bin/cmake" -S "$ROOT" -B "$SAN" -G Ninja \
    -DCMAKE_MAKE_PROGRAM="$ROOT/.venv/bin/ninja" \
    -DPython_EXECUTABLE="$PY" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD=OFF -DACCINTE_PRECOMPILED_HEADERS=OFF \
    -DACCINTE_PACKAGE_DIR="$PKG" \
    -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined"
fi
"$ROOT/.venv/bin/cmake" --build "$SAN" -j "${MAX_JOBS:-$(nproc)}"

# LITERALINCLUDE START: TESTING SANITIZER ENVIRONMENT
# Python and torch are not instrumented: libasan must be loaded first, and
# libstdc++ with it (the interpreter does not link it, and ASan's __cxa_throw
# interceptor must find it at start-up). Every process the tests start
# inherits both (child interpreters, spawned workers, torchrun's ranks, the
# compilers Inductor runs, Chromium).
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libstdc++.so.6)"
# detect_leaks=0: the interpreter keeps memory until exit by design.
# allocator_may_return_null=1: an allocation that cannot be served returns
#   null, as glibc's does (the runtime tests ask for 2^62 bytes on purpose).
# handle_segv=0, allow_user_segv_handler=1: SIGSEGV is left to the process.
#   Strict-mode tests make the host fault on purpose and expect it to die of
#   SIGSEGV; ASan's handler would turn that into a report and SIGABRT. A real
#   memory error in the instrumented code is caught before it faults.
# abort_on_error=1, halt_on_error=1: a finding stops the process, so the test
#   that caused it fails (a child's finding fails the test that started it).
# detect_odr_violation=0: from the first version of this script; the default
#   run and tests/test_ops.py with detect_odr_violation=2 reported nothing.
# Options already in the environment come last and so win:
#   ASAN_OPTIONS=handle_segv=1 prints the native stack of any SIGSEGV.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:allow_user_segv_handler=1:handle_segv=0:detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export PYTHONPATH="$SAN/pkg${PYTHONPATH:+:$PYTHONPATH}"
# `python -m pytest` (and `python -c` in the tests' child interpreters) puts
# the current directory first on sys.path, where the repository's own
# torch_accinte/ with the regular libraries would win over the staged
# package: PYTHONSAFEPATH (Python 3.11) leaves it out, in every interpreter.
export PYTHONSAFEPATH=1
# The runtime's own tests load libaccinte through ctypes, by this path.
export ACCINTE_LIBRARY="$PKG/lib/libaccinte.so"
# Tests marked not_under_sanitizer skip, each with its reason (tests/conftest.py).
export ACCINTE_SANITIZER=1
# LITERALINCLUDE END: TESTING SANITIZER ENVIRONMENT
cd "$ROOT"
# Refuse to report a clean run of libraries that were not instrumented.
"$PY" -c "
import torch, torch_accinte
torch.ones(1, device='accinte')
loaded = {l.split()[-1] for l in open('/proc/self/maps') if 'accinte' in l and l.rstrip().endswith('.so')}
assert loaded and all(p.startswith('$SAN/pkg/') for p in loaded), f'sanitize: loaded {sorted(loaded)}'
"
if [ $# -eq 0 ]; then
  set -- tests/robustness tests/accinte_runtime
fi
exec "$PY" -m pytest "$@"
