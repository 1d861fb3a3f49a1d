"""OpInfo's sample and error inputs, the same ones PyTorch's harness makes,
without the harness's cost under pytest.

`op.sample_inputs()` and `op.error_inputs()` wrap the OpInfo's generator in
`common_utils.TrackedInputIter`, which serves unittest's test cases: it looks
for the running `TestCase` on the Python stack with `inspect.stack()`, twice per
call, reading the source lines of every frame (pytest's frames are many, and
none holds a `TestCase`), and before each input it calls `set_rng_seed()`,
whose `torch.manual_seed` formats the stack three times on a machine without
CUDA, XPU or MTIA, to queue the seeding of devices that never initialise. On
the three `op_db` files that was over a third of their CPU time.

`sample_inputs` and `error_inputs` here call the OpInfo's generator directly
and, before each input, seed as `set_rng_seed()` does every generator that can
reach these inputs: the CPU's, accinte's, Python's and NumPy's. The inputs are
therefore the harness's own, input for input.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy
import torch
from torch.testing._internal.common_utils import SEED


def seed(value: int) -> None:
    """torch.manual_seed(value) for the generators that exist here (the CPU's and
    every accinte device's), with Python's and NumPy's as set_rng_seed adds."""
    torch.default_generator.manual_seed(value)
    torch.accinte.manual_seed_all(value)
    random.seed(value)
    numpy.random.seed(value)


def _seeded(inputs) -> Iterator:
    """TrackedInputIter's order: seed, then take the next input. A generator
    function's inputs are made at the take; a list's were made before any seed,
    at the call, as in the harness."""
    inputs = iter(inputs)
    while True:
        seed(SEED)
        try:
            yield next(inputs)
        except StopIteration:
            return


def sample_inputs(op, device, dtype, requires_grad: bool = False, **kwargs) -> Iterator:
    """op.sample_inputs(device, dtype, requires_grad, **kwargs), input for input."""
    return _seeded(op.sample_inputs_func(op, device, dtype, requires_grad, **kwargs))


def error_inputs(op, device, **kwargs) -> Iterator:
    """op.error_inputs(device, **kwargs), input for input."""
    return _seeded(op.error_inputs_func(op, device, **kwargs))
