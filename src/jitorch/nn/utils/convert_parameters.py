"""`parameters_to_vector` / `vector_to_parameters`: parameters as one flat vector and back."""
from __future__ import annotations

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """Concatenate the flattened parameters into one 1-D tensor."""
    return _jt.cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Set each parameter's data to its consecutive slice of `vec` (shaped like it)."""
    if not isinstance(vec, Tensor):
        from ..modules._support import typename
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
