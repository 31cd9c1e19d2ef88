"""`jitorch.sparse`: PyTorch's sparse namespace for COO tensors (`mm`, `addmm`, `sum`,
`softmax`, `log_softmax`); the tensor type and the kernels live in `_coo.py`."""
from ._coo import addmm, log_softmax, mm, softmax, sum  # noqa: F401

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax"]
