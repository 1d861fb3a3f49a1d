"""Operators that do not (yet) give the CPU's answer on accinte, each with its
reason: this list is the conformance backlog. Keys are (OpInfo name with its
variant, dtype); test_opinfo.py fails if an entry stops failing.
"""

# LITERALINCLUDE START: TESTING KNOWN FAILURES
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("linalg.lu_solve", "complex64"): (
        "the sample with adjoint=True, left=False differs from the CPU beyond 1e-3; not yet "
        "investigated (the same LAPACK routine runs on both sides)"),
}

# The bar: at least this share of the samples the CPU runs must pass.
MIN_PASS_RATE = 0.995
# LITERALINCLUDE END: TESTING KNOWN FAILURES
