"""Tensor layouts (`jitorch.layout`, `jitorch.strided`, `jitorch.sparse_coo`) and the signal a
sparse operand gives dense code.

A dense Tensor's layout is `strided`. A sparse COO tensor (`sparse/_coo.py`) has no dense array:
reading its `_data` raises `SparseOperand`, which the op wrappers (`_ops/registry.py`) turn into
a call of the sparse implementation of that op, or into PyTorch's NotImplementedError naming the
op and the 'SparseCPU' backend. The dense path pays nothing for this (no check, only a `try`).

It also owns what each factory does with `layout=` (`factory_layout`): `strided` (or None) is
the dense tensor; `sparse_coo` makes an all-zero sparse COO tensor where PyTorch does (`zeros`,
`empty`, `zeros_like`, `new_zeros`, `new_empty`, `empty_like` of a sparse tensor) and raises
PyTorch's error elsewhere, as PyTorch does, rather than being ignored.
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

# factory -> what `layout=sparse_coo` does, as PyTorch 2.13: None makes sparse zeros; else the
# error, an 'aten::op' (PyTorch's NotImplementedError for the SparseCPU backend) or a message
# (RuntimeError). A `*_like` of a sparse input (no `layout=`) fails at its fill (second column).
# Factories absent here ignore `layout` (scalar_tensor, as PyTorch).
_FULL = "full(...) is not implemented for sparse layout"
_FILL, _ESTRIDED = "aten::fill_.Scalar", "aten::empty_strided"
_SPARSE_FACTORY = {
    "zeros": (None, None), "empty": (None, None),
    "zeros_like": (None, None), "empty_like": (_ESTRIDED, None),
    "ones": (_FULL, None), "full": (_FULL, None),
    "ones_like": (_ESTRIDED, _FILL), "full_like": (_ESTRIDED, _FILL),
    "rand_like": (_ESTRIDED, "aten::uniform_"), "randn_like": (_ESTRIDED, "aten::normal_"),
    "randint_like": (_ESTRIDED, "aten::random_.from"), "empty_strided": (_ESTRIDED, None),
    "arange": ("aten::arange.start_out", None), "eye": ("aten::eye.m_out", None),
    "linspace": ("aten::linspace.out", None), "logspace": ("aten::logspace.out", None),
    "rand": ("aten::uniform_", None), "randn": ("aten::normal_", None),
    "randint": ("aten::random_.from", None), "randperm": ("aten::randperm.generator_out", None),
    "tril_indices": ("aten::tril_indices", None), "triu_indices": ("aten::triu_indices", None),
    "new_ones": (_FILL, None), "new_full": (_FILL, None),
}


def factory_layout(fname: str, lay, of_input: bool = False) -> bool:
    """Whether factory `fname` given `layout=lay` makes a sparse COO tensor (False: dense);
    raises PyTorch's error for a layout it cannot make. `of_input`: `lay` is a `*_like`
    input's own layout (no `layout=` given)."""
    if lay is None or lay is strided:
        return False
    if not isinstance(lay, layout):
        raise TypeError(f"{fname}(): argument 'layout' must be torch.layout, not "
                        f"{type(lay).__name__}")
    err = _SPARSE_FACTORY[fname][1 if of_input else 0]
    if err is None:
        return True
    if err.startswith("aten::"):
        raise NotImplementedError(unsupported(err))
    raise RuntimeError(err)


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
