"""C = A @ B for float32 matrices on the GPU, by the CUDA kernel in mm.cu (built to _mm.so)."""
from __future__ import annotations

import ctypes
import os

import torch

_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_mm.so"))
_lib.launch_matmul.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int]
_lib.launch_matmul.restype = ctypes.c_int


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The product of two 2-D float32 CUDA tensors (m x k and k x n)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {tuple(a.shape)} by {tuple(b.shape)}")
    if not (a.is_cuda and b.is_cuda and a.dtype == b.dtype == torch.float32):
        raise TypeError("matmul takes float32 CUDA tensors")
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=torch.float32)
    torch.cuda.synchronize(a.device)  # the kernel runs on the legacy default stream
    error = _lib.launch_matmul(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k)
    if error:
        raise RuntimeError(f"the CUDA kernel failed to launch (cudaError {error})")
    return c
