"""Binds Python operators on Tensor (`+`, `@`, `<`, `~`, `+=`, ...) to registry ops.

Operators bind the registry's public function directly when it is declared (this module is
imported after every op family), else look it up by name at call time. Reflected forms swap
operands; in-place forms call the op's in-place method.
"""
from __future__ import annotations

import sys

from .._tensor import Tensor
from .registry import PUBLIC

_jt = None


def _ns():
    global _jt
    if _jt is None:
        _jt = sys.modules["jitorch"]
    return _jt


def _binary(name):
    f = PUBLIC.get(name)
    if f is not None:
        def fwd(self, other):
            return f(self, other)

        def rev(self, other):
            return f(other, self)
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

_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
for _py, _op in _COMPARE.items():
    setattr(Tensor, f"__{_py}__", _binary(_op)[0])

Tensor.__neg__ = lambda self: _ns().neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: _ns().abs(self)
Tensor.__invert__ = lambda self: _ns().bitwise_not(self)
Tensor.__getitem__ = lambda self, idx: _ns()._getitem(self, idx)
Tensor.__setitem__ = lambda self, idx, value: _ns()._setitem(self, idx, value)
Tensor.__hash__ = lambda self: id(self)

Tensor.T = property(lambda self: self.permute(tuple(range(self.ndim - 1, -1, -1))))
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.H = property(lambda self: self.T.conj() if self.is_complex() else self.T)
Tensor.mH = property(lambda self: self.mT.conj() if self.is_complex() else self.mT)
