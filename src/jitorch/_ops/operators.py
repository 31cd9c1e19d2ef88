"""Binds Python operators on Tensor (`+`, `@`, `<`, `~`, `+=`, ...) to registry ops.

Operators bind the registry's public function directly when it is declared (this module is
imported after every op family), else look it up by name at call time. Reflected forms swap
operands; in-place forms call the op's in-place method.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .indexing import _getitem, _setitem
from .registry import OPS, PUBLIC

_jt = None


def _ns():
    global _jt
    if _jt is None:
        _jt = sys.modules["jitorch"]
    return _jt


# Operands an operator accepts; anything else (None, a str, a list, a dtype) gets
# NotImplemented as in PyTorch, so `t == None` is False and `t + None` is Python's TypeError.
_OPERANDS = (Tensor, bool, int, float, complex, np.number, np.bool_, np.ndarray)


def _binary(name):
    f = PUBLIC.get(name)
    if f is not None:
        # `2 - t`: the number comes first, which the public function refuses (PyTorch's
        # torch.sub(2, t) is a TypeError), so reflected forms use the unchecked wrapper
        f_any = OPS[name].fn_any if name in OPS else f

        def fwd(self, other):
            if not isinstance(other, _OPERANDS):
                return NotImplemented
            return f(self, other)

        def rev(self, other):
            if not isinstance(other, _OPERANDS):
                return NotImplemented
            return f_any(other, self)
    else:
        def fwd(self, other):
            return getattr(_ns(), name)(self, other)

        def rev(self, other):
            return getattr(_ns(), name)(other, self)

    def inplace(self, other):
        return getattr(self, name + "_")(other)
    return fwd, rev, inplace


_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "matmul": "matmul",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
for _py, _op in _BINARY.items():
    _f, _r, _i = _binary(_op)
    setattr(Tensor, f"__{_py}__", _f)
    setattr(Tensor, f"__r{_py}__", _r)
    setattr(Tensor, f"__i{_py}__", _i)



def _compare(name):
    def fwd(self, other):
        if not isinstance(other, _OPERANDS):
            return NotImplemented
        return getattr(_ns(), name)(self, other)
    return fwd


_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
for _py, _op in _COMPARE.items():
    setattr(Tensor, f"__{_py}__", _compare(_op))


def _invert(self):
    if self.dtype.category >= dt.FLOAT:  # the operator has its own check and message
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return _ns().bitwise_not(self)


Tensor.__neg__ = lambda self: _ns().neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: _ns().abs(self)
Tensor.__invert__ = _invert
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.__hash__ = lambda self: id(self)

Tensor.T = property(lambda self: self.permute(tuple(range(self.ndim - 1, -1, -1))))
def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1)


Tensor.mT = property(_mT)
Tensor.H = property(lambda self: self.T.conj() if self.is_complex() else self.T)
Tensor.mH = property(lambda self: self.mT.conj() if self.is_complex() else self.mT)
