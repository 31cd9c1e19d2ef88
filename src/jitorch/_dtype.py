"""dtypes: the PyTorch dtype objects, their NumPy storage types and PyTorch's promotion rules.

Owns: `dtype` instances (`jitorch.float32`, aliases), the default dtype, `promote_types`,
`result_type`, `can_cast`, `finfo`, `iinfo`, and the maps dtype <-> NumPy dtype.

Invariants: every Tensor's NumPy array has exactly `dtype.np` as its dtype. bfloat16 is stored
with `ml_dtypes.bfloat16`; float16 with NumPy's float16. Half types compute in float32
(`dtype.compute`), like PyTorch's CPU "opmath".

ml_dtypes is imported on the first use of `bfloat16.np` (its import registers a dozen NumPy
dtypes and their casts: ~0.5 s of CPU, half of `import jitorch`, for a type most programs never
use). No array can hold a bfloat16 before ml_dtypes is imported, so code that only asks "is this
NumPy dtype a half type" uses `is_half_np`, which never imports it.
"""
from __future__ import annotations

import sys

import numpy as np

from . import _settings

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "half", "float", "double", "short", "int",
    "long", "cfloat", "cdouble", "get_default_dtype", "set_default_dtype", "promote_types",
    "result_type", "can_cast", "finfo", "iinfo",
]

_py_bool, _py_int, _py_float = bool, int, float

# Category ranks: PyTorch promotes across categories bool < integral < floating < complex.
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class dtype:
    """A PyTorch dtype. Singletons: compare with `is` or `==`."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_alias", "compute")

    def __init__(self, name, np_dtype, category, is_signed, alias=None):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self._alias = alias
        self.compute = self.np  # replaced for half types below

    @property
    def is_floating_point(self) -> _py_bool:
        return self.category == FLOAT

    @property
    def is_complex(self) -> _py_bool:
        return self.category == COMPLEX

    def to_real(self) -> "dtype":
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "dtype":
        return {float64: complex128, complex128: complex128}.get(self, complex64)

    def __repr__(self):
        return f"jitorch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


class _LazyNpDtype(dtype):
    """A dtype whose NumPy type comes from a module imported on its first use (`loader`)."""

    __slots__ = ("_np", "_loader")

    def __init__(self, name, loader, itemsize, category, is_signed):
        self.name = name
        self._loader = loader
        self.itemsize = itemsize
        self.category = category
        self.is_signed = is_signed
        self._alias = None

    @property
    def np(self):
        try:
            return self._np
        except AttributeError:
            pass
        d = np.dtype(self._loader())
        _BY_NP[d] = self
        self._np = d
        return d


def _ml_dtypes():
    import ml_dtypes
    return ml_dtypes


bool = dtype("bool", np.bool_, BOOL, False)
uint8 = dtype("uint8", np.uint8, INT, False)
int8 = dtype("int8", np.int8, INT, True)
int16 = dtype("int16", np.int16, INT, True)
int32 = dtype("int32", np.int32, INT, True)
int64 = dtype("int64", np.int64, INT, True)
float16 = dtype("float16", np.float16, FLOAT, True)
bfloat16 = _LazyNpDtype("bfloat16", lambda: _ml_dtypes().bfloat16, 2, FLOAT, True)
float32 = dtype("float32", np.float32, FLOAT, True)
float64 = dtype("float64", np.float64, FLOAT, True)
complex64 = dtype("complex64", np.complex64, COMPLEX, True)
complex128 = dtype("complex128", np.complex128, COMPLEX, True)
float16.compute = np.dtype(np.float32)
bfloat16.compute = np.dtype(np.float32)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble, chalf = complex64, complex128, complex64

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
       complex64, complex128)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL if not isinstance(d, _LazyNpDtype)}  # (+ each when loaded)


def is_bfloat16_np(np_dtype) -> _py_bool:
    """Is `np_dtype` ml_dtypes' bfloat16? (Without importing ml_dtypes: no array holds one
    before it is imported.)"""
    return "ml_dtypes" in sys.modules and np_dtype == bfloat16.np


def is_half_np(np_dtype) -> _py_bool:
    """Is `np_dtype` the storage of a half type (float16, bfloat16), which computes in float32?"""
    return np_dtype == float16.np or is_bfloat16_np(np_dtype)


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The jitorch dtype of a NumPy dtype; TypeError for ones PyTorch lacks (e.g. uint16, str)."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        if "ml_dtypes" in sys.modules:
            bfloat16.np  # (registers it in _BY_NP: the caller may hold one of its arrays)
        d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, bfloat16, complex64, complex128, int64, "
            "int32, int16, int8, uint8, and bool.")
    return d


# --- default dtype: process-global, as in PyTorch ------------------------------------------
_default = [float32]


_default_listeners: list = []  # called after set_default_dtype (e.g. to drop memoised rules)


def get_default_dtype() -> dtype:
    return _default[0]


_settings.register("default_dtype", get_default_dtype)  # types factories, scalars, true division


@_settings.setter
def set_default_dtype(d: dtype) -> None:
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d
    for listener in _default_listeners:
        listener()


def default_complex() -> dtype:
    return complex128 if _default[0] is float64 else complex64


# --- promotion ----------------------------------------------------------------------------
_ORDER = {bool: 0, uint8: 1, int8: 1, int16: 2, int32: 3, int64: 4}


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOAT:
            # complex64 + float64 -> complex128, as in PyTorch
            return complex128 if (lo is float64 or hi is complex128) else hi
        return hi
    cat = a.category
    if cat == INT:
        if {a, b} == {uint8, int8}:
            return int16
        if a is uint8:
            return b if _ORDER[b] > 1 else int16
        if b is uint8:
            return a if _ORDER[a] > 1 else int16
        return a if _ORDER[a] >= _ORDER[b] else b
    if cat == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    if cat == COMPLEX:
        return a if a.itemsize >= b.itemsize else b
    return a


_PAIR_CACHE: dict = {}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """`torch.promote_types`: the smallest dtype both can be cast to safely."""
    key = (type1, type2)
    r = _PAIR_CACHE.get(key)
    if r is None:
        for t in key:
            if not isinstance(t, dtype):
                raise TypeError(f"promote_types(): argument must be jitorch.dtype, not "
                                f"{type(t).__name__}")
        r = _PAIR_CACHE[key] = _promote_pair(type1, type2)
    return r


def scalar_category(x) -> int:
    if isinstance(x, _py_bool) or isinstance(x, np.bool_):
        return BOOL
    if isinstance(x, (_py_int, np.integer)):
        return INT
    if isinstance(x, (_py_float, np.floating)):
        return FLOAT
    if isinstance(x, (complex, np.complexfloating)):
        return COMPLEX
    raise TypeError(f"expected a number, got {type(x).__name__}")


def _scalar_default(cat: int) -> dtype:
    return (bool, int64, get_default_dtype(), default_complex())[cat]


def promote_tiers(dim_dtypes, zero_dim_dtypes, scalar_cats) -> dtype:
    """PyTorch's three-tier promotion: dimensioned tensors > 0-dim tensors > Python scalars.

    A lower tier only matters when its category is higher than everything above it.
    """
    result = None
    for d in dim_dtypes:
        result = d if result is None else promote_types(result, d)
    zres = None
    for d in zero_dim_dtypes:
        zres = d if zres is None else promote_types(zres, d)
    if zres is not None:
        if result is None:
            result = zres
        elif zres.category > result.category:
            result = _upgrade(result, zres)
    if scalar_cats:
        cat = max(scalar_cats)
        if result is None:
            result = _scalar_default(cat)
        elif cat > result.category:
            result = _upgrade(result, _scalar_default(cat))
    return result


def _upgrade(current: dtype, higher: dtype) -> dtype:
    """A lower tier of a higher category wins, but a floating tensor meeting a lower-tier complex
    keeps its own width (PyTorch's toComplexType: float64 -> complex128, else complex64)."""
    if higher.category == COMPLEX and current.category == FLOAT:
        return complex128 if current is float64 else complex64
    return higher


def result_type(tensor1, tensor2) -> dtype:
    """`torch.result_type`: the dtype an arithmetic op on the two operands would produce."""
    from ._tensor import Tensor
    dims, zeros, cats = [], [], []
    for x in (tensor1, tensor2):
        if isinstance(x, Tensor):
            (dims if x.ndim else zeros).append(x.dtype)
        else:
            cats.append(scalar_category(x))
    return promote_tiers(dims, zeros, cats)


def can_cast(from_: dtype, to: dtype) -> _py_bool:
    """`torch.can_cast`: casting allowed under PyTorch's same-kind rule (no category demotion)."""
    if not isinstance(from_, dtype) or not isinstance(to, dtype):
        raise TypeError("can_cast(): arguments must be jitorch.dtype")
    if from_.category > to.category:
        return False
    return True


# --- finfo / iinfo -------------------------------------------------------------------------
class finfo:
    """`torch.finfo`: machine limits of a floating point dtype."""

    def __init__(self, type: dtype | None = None):
        type = get_default_dtype() if type is None else type
        if type.category not in (FLOAT, COMPLEX):
            raise TypeError(f"finfo: {type} is not a floating point dtype")
        type = type.to_real()
        info = _ml_dtypes().finfo(type.np) if type is bfloat16 else np.finfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.eps = _py_float(info.eps)
        self.max = _py_float(info.max)
        self.min = _py_float(info.min)
        self.tiny = _py_float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -_py_int(info.precision)  # PyTorch: exactly 10**-precision

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """`torch.iinfo`: limits of an integer dtype."""

    def __init__(self, type: dtype):
        if type.category not in (INT, BOOL) or type is bool:
            raise TypeError(f"iinfo: {type} is not an integer dtype")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = info.bits
        self.max = _py_int(info.max)
        self.min = _py_int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
