#!/usr/bin/env python3
"""Runs PyTorch's device-generic test files on a PrivateUse1 device, next to
their CPU twins in the same process, and compares each device test with its twin.

    tools/run_pytorch_tests.py PYTORCH_TEST_DIR [FILE ...] [--device accinte]
        [--disabled-tests JSON] [--budget SECONDS] [--baseline JSON]
        [--write-baseline JSON] [--junit-xml PATH] [--out DIR]

PYTORCH_TEST_DIR is a PyTorch source tree's test/ folder; its files are run
where they are, never copied. Prints a markdown table with a row per file and
the disagreements, writes JUnit XML, and exits with 1 when a disagreement is
not in the baseline or a file did not run to its end. The code is in
tools/pytorch_tests/ (its README says what each file does);
docs/chapters/testing.md shows a run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytorch_tests.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
