"""`jitorch.backends.openmp`: jitorch's threads are Numba's, not PyTorch's OpenMP runtime."""


def is_available() -> bool:
    return False
