"""Tensor layouts (`jitorch.layout`, `jitorch.strided`, `jitorch.sparse_coo`) and the signal a
sparse operand gives dense code.

A dense Tensor's layout is `strided`. A sparse COO tensor (`sparse/_coo.py`) has no dense array:
reading its `_data` raises `SparseOperand`, which the op wrappers (`_ops/registry.py`) turn into
a call of the sparse implementation of that op, or into PyTorch's NotImplementedError naming the
op and the 'SparseCPU' backend. The dense path pays nothing for this (no check, only a `try`).
"""
from __future__ import annotations


class layout:
    """`torch.layout`: compared by identity, printed as `jitorch.<name>`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"jitorch.{self.name}"

    def __reduce__(self):
        return self.name  # a module-level singleton: pickles by name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class SparseOperand(NotImplementedError):
    """Dense code touched a sparse COO tensor's (absent) dense array."""

    def __init__(self):
        super().__init__(_message("this operation"))


def unsupported(op: str) -> str:
    """PyTorch's message for an op without a sparse form, naming it ('aten::exp')."""
    return _message(f"'{op}'")


def _message(what: str) -> str:
    return (f"Could not run {what} with arguments from the 'SparseCPU' backend. This could be "
            "because the operator doesn't exist for this backend (jitorch runs a subset of "
            "operations on sparse COO tensors; convert with to_dense() first).")
