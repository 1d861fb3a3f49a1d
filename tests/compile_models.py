"""Tiny models the compile tests share (tests/test_compile.py and its child
interpreters): small enough that Inductor's C++ compile stays cheap."""

from __future__ import annotations

import torch
from torch import nn


class GPTBlock(nn.Module):
    """A GPT-style pre-norm block: LayerNorm, causal self-attention, GELU MLP, residuals."""

    def __init__(self, dim: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.ln2(x))


def gpt_block() -> GPTBlock:
    """The block with seeded weights, on the CPU."""
    torch.manual_seed(0)
    return GPTBlock()


def gpt_inputs(length: int = 8, batch: int = 2) -> torch.Tensor:
    """Seeded CPU inputs of shape (batch, length, 32)."""
    generator = torch.Generator().manual_seed(length)
    return torch.randn(batch, length, 32, generator=generator)
