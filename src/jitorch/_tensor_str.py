"""Tensor repr (placeholder until the PyTorch-format printer lands)."""


def tensor_repr(t) -> str:
    return f"tensor({t._data!r}, dtype={t.dtype})"
