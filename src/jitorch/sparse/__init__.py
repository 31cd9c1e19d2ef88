"""`jitorch.sparse`: PyTorch's sparse namespace for COO tensors (`mm`, `sum`, `softmax`,
`log_softmax`); the tensor type and the kernels live in `_coo.py`."""
from ._coo import log_softmax, mm, softmax, sum  # noqa: F401

__all__ = ["mm", "sum", "softmax", "log_softmax"]
