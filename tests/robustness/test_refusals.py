"""The dtype refusals of issue #16, each as the issue states it: the CPU's
kernel has no instance for the dtype and raises NotImplementedError at the
call; accinte raises the same, with the same message, at the call (nothing
is left for the next synchronisation), and then keeps working. The generated
corpus over every operator and dtype is ../conformance/test_dtype_refusals.py."""

import pytest

SNIPPETS = {
    "abs_of_bool": "lambda d: torch.abs(torch.ones(3, dtype=torch.bool, device=d))",
    "bool_matmul": "lambda d: torch.ones(2, 2, dtype=torch.bool, device=d) "
                   "@ torch.ones(2, 2, dtype=torch.bool, device=d)",
    "complex32_sum": "lambda d: torch.ones(3, dtype=torch.complex32, device=d).sum()",
    "bool_conv2d": "lambda d: torch.nn.functional.conv2d("
                   "torch.ones(1, 1, 3, 3, dtype=torch.bool, device=d), "
                   "torch.ones(1, 1, 2, 2, dtype=torch.bool, device=d))",
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_refused_at_the_call_like_the_cpu(cases, name):
    cases.check(f"""
        call = {SNIPPETS[name]}
        cpu = raises(NotImplementedError, lambda: call("cpu"))
        # accinte's own abs kernel names itself, as CUDA's names abs_cuda.
        expected = str(cpu).replace("abs_cpu", "abs_accinte")
        for _ in range(2):  # the first call of the signature, and a later one
            got = raises(NotImplementedError, lambda: call("accinte"))
            assert str(got) == expected, f"{{got}} != {{expected}}"
        torch.accinte.synchronize()  # nothing was queued to fail later
    """)
