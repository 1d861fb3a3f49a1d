"""Not a test: each rank's input, made on the CPU the same way on every rank, so each rank
(and the test) can compute every rank's and the CPU reduces them as the oracle."""

import torch


def value(rank: int, dtype: torch.dtype, n: int, salt: int = 0, *,
          exact: bool = True) -> torch.Tensor:
    """Rank `rank`'s `n` inputs of `dtype`, seeded by (`salt`, `rank`). With `exact`, floats
    other than float32 hold small integers, so a sum is exact in any order (for engines that
    may add in another order than the CPU); without it they are random normals rounded to
    `dtype`, which only an engine adding in rank order matches bit for bit."""
    g = torch.Generator().manual_seed(977 * salt + rank)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) > 0.5
    if dtype == torch.float32 or (dtype.is_floating_point and not exact):
        return torch.randn(n, generator=g).to(dtype)
    if dtype.is_floating_point:
        return torch.randint(-8, 9, (n,), generator=g).to(dtype)
    return torch.randint(-50, 50, (n,), generator=g).to(dtype)
