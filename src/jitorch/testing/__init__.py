"""`jitorch.testing`: `assert_close` and `make_tensor`, with PyTorch's semantics and messages."""
from ._comparison import assert_close  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "make_tensor"]
