"""`jitorch.backends`: PyTorch's backend flags and availability queries.

jitorch computes on the CPU with NumPy and Numba, so the GPU backends (cudnn, cuda, mps) answer
"not available / not built" as a CPU-only PyTorch build does, and the CPU libraries PyTorch links
(oneDNN, MKL, OpenMP) answer False: jitorch does not use them. The flags programs set
(`cudnn.deterministic`, `cudnn.benchmark`, `cuda.matmul.allow_tf32`, ...) are plain settable
values with PyTorch's defaults; with no GPU backend they select nothing.
"""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]
