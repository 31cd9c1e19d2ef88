"""`jitorch.backends.mkl`: jitorch does not link MKL itself (NumPy's BLAS is NumPy's)."""


def is_available() -> bool:
    return False
