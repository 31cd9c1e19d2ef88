"""`jitorch.utils`: utilities with PyTorch's names (`jitorch.utils.data`)."""
from . import data  # noqa: F401
from . import deterministic  # noqa: F401  (fill_uninitialized_memory)

__all__ = ["data", "deterministic"]
