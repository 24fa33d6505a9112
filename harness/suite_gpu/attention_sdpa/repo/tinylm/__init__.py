"""A small decoder-only language model: the prefill step of inference (a batch of prompts in, the next
token's logits out)."""
from __future__ import annotations

import math

import torch
from torch import nn


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then an MLP, each with a residual."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, steps, dim = x.shape
        head_dim = dim // self.heads
        q, k, v = self.qkv(x).split(dim, dim=2)
        q, k, v = (t.view(batch, steps, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        future = torch.triu(torch.ones(steps, steps, device=x.device, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        return self.proj(out.transpose(1, 2).contiguous().view(batch, steps, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyDecoder(nn.Module):
    def __init__(self, vocab: int = 8192, dim: int = 512, heads: int = 8, layers: int = 4,
                 max_steps: int = 2048) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_steps, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Hidden states of every position of `tokens` (batch, steps)."""
        steps = tokens.shape[1]
        x = self.embed(tokens) + self.position(torch.arange(steps, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    @torch.inference_mode()
    def next_token_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """The logits of the token after each prompt of the batch: (batch, vocab)."""
        return self.head(self(tokens)[:, -1])


def build_model(seed: int = 0, device: str = "cuda", **sizes: int) -> TinyDecoder:
    """A model with weights drawn from `seed`, in evaluation mode on `device`."""
    torch.manual_seed(seed)
    return TinyDecoder(**sizes).to(device).eval()
