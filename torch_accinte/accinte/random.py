"""Random number generation on accinte (cf. torch.cuda.random).

Each device has its own default generator (AccInteGeneratorImpl), independent
of the CPU's and of the other devices'. Like CUDA's, it is a counter: its state
is 16 bytes, the seed and the offset, and each random kernel takes the next
offset when it is launched (see Note [accinte random numbers]).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch_accinte import _C

from ._lazy import _lazy_call, _lazy_init
from ._utils import _device_t, _get_device_index

__all__ = [
    "get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed", "manual_seed_all",
    "seed", "seed_all", "set_rng_state", "set_rng_state_all",
]


def _default_generator(device: _device_t = None) -> torch.Generator:
    _lazy_init()
    return _C._get_default_generator(_get_device_index(device, optional=True))


def _device_indices() -> range:
    return range(_C._get_device_count())


def get_rng_state(device: _device_t = "accinte") -> torch.Tensor:
    """The state of ``device``'s default generator, as a ByteTensor
    (AccInteGeneratorImpl::get_state: 16 bytes, the seed then the offset).
    Initialises accinte."""
    return _default_generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """The states of every device's default generator. Initialises accinte."""
    return [get_rng_state(i) for i in _device_indices()]


# LITERALINCLUDE START: GENERATOR PYTHON SEEDING
# Seeding and setting a state do not initialise accinte: before the first
# device use they are queued and run at initialisation (torch.cuda's
# _lazy_call), so `torch.manual_seed` leaves a process that can still fork
# children which use the device.
def set_rng_state(new_state: torch.Tensor, device: _device_t = "accinte") -> None:
    """Restores ``device``'s default generator from a state from get_rng_state
    (AccInteGeneratorImpl::set_state). torch.random.fork_rng and
    torch.utils.checkpoint call this with a device index."""
    new_state = new_state.clone(memory_format=torch.contiguous_format)
    _lazy_call(lambda: _default_generator(device).set_state(new_state))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Restores every device's default generator."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def manual_seed(seed: int) -> None:
    """Seeds the current device's default generator (AccInteGeneratorImpl::set_current_seed)."""
    seed = int(seed)
    _lazy_call(lambda: _default_generator().manual_seed(seed), seed=True)


def manual_seed_all(seed: int) -> None:
    """Seeds every device's default generator (torch.manual_seed calls this)."""
    seed = int(seed)

    def seed_every_device() -> None:
        for index in _device_indices():
            _default_generator(index).manual_seed(seed)

    _lazy_call(seed_every_device, seed_all=True)
# LITERALINCLUDE END: GENERATOR PYTHON SEEDING


def seed() -> None:
    """Seeds the current device's default generator with a random number."""
    _lazy_call(lambda: _default_generator().seed())


def seed_all() -> None:
    """Seeds every device's default generator with one random number."""

    def seed_every_device() -> None:
        random_seed = _default_generator(0).seed()
        for index in range(1, _C._get_device_count()):
            _default_generator(index).manual_seed(random_seed)

    _lazy_call(seed_every_device)


def initial_seed() -> int:
    """The seed of the current device's default generator. Initialises accinte."""
    return _default_generator().initial_seed()
