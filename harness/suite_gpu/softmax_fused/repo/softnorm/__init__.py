"""Row-wise normalization of activation matrices: the softmax of a classifier head over a large vocabulary."""
from __future__ import annotations

import torch


def row_softmax(x: torch.Tensor) -> torch.Tensor:
    """The softmax of each row of a 2-D float32 tensor (numerically stable: the row's maximum is taken out)."""
    if x.dim() != 2:
        raise ValueError(f"row_softmax takes a 2-D tensor, got {x.dim()} dimensions")
    row_max = x.max(dim=1, keepdim=True).values
    shifted = x - row_max
    numerator = torch.exp(shifted)
    denominator = numerator.sum(dim=1, keepdim=True)
    return numerator / denominator
