"""Operators that do not (yet) give the CPU's answer on accinte, each with its
reason: this list is the conformance backlog. Keys are (OpInfo name with its
variant, dtype); test_opinfo.py fails if an entry stops failing.
"""

# LITERALINCLUDE START: TESTING KNOWN FAILURES
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    # Empty: every sampled (operator, dtype) pair gives the CPU's answer. An
    # entry looks like  ("linalg.lu_solve", "complex64"): "why it differs".
}

# The engine's fidelity checks (fidelity_runner.py): (check, OpInfo name with
# its variant) -> why it fails.
FIDELITY_EXCEPTIONS: dict[tuple[str, str], str] = {
    # Empty: every operator passes every check. An entry looks like
    # ("out", "mode"): "why it differs".
}

# The bar: at least this share of the samples the CPU runs must pass.
MIN_PASS_RATE = 0.995
# LITERALINCLUDE END: TESTING KNOWN FAILURES
