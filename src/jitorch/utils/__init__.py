"""`jitorch.utils`: utilities with PyTorch's names (`jitorch.utils.data`)."""
from . import data  # noqa: F401

__all__ = ["data"]
