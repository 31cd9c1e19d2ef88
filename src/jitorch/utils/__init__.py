"""`jitorch.utils`: utilities with PyTorch's names (`jitorch.utils.data`, `checkpoint`)."""
from . import data  # noqa: F401
from . import deterministic  # noqa: F401  (fill_uninitialized_memory)
from . import dlpack  # noqa: F401  (from_dlpack, to_dlpack)
from . import checkpoint  # noqa: F401  (activation checkpointing, issue 19)

__all__ = ["data", "deterministic", "dlpack", "checkpoint"]
