"""Comparison, logical, bitwise and classification ops: declarations for the registry.

Owns eq/ne/lt/le/gt/ge (and their aliases), isclose/allclose/equal, logical_and/or/xor/not,
bitwise_and/or/xor/not and the shifts, and isnan/isinf/isfinite/isneginf/isposinf/isreal/signbit.

None of these ops is differentiable: every declaration is `nondiff=True` (bool or integer
outputs). The in-place forms (`eq_`, `logical_and_`, `bitwise_and_`, ...) exist where PyTorch has
them; they write the result cast to the tensor's own dtype.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .registry import PUBLIC, _pt_name, defop
from .batching import ELEMENTWISE

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_PY_BOOL = "returns a Python bool: no CPU lowering"
_NO_TEMPLATE = "elementwise without a Numba scalar template yet"

__all__ = [
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "isclose", "allclose", "equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift",
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "signbit",
]

_BIN = ("input", "other")


# --- shared helpers ----------------------------------------------------------------------------
def _broadcast_error(shapes) -> RuntimeError:
    """PyTorch's message for operands that don't broadcast (NumPy raises ValueError)."""
    a, b = (tuple(s) for s in shapes)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for i in range(n - 1, -1, -1):  # PyTorch reports the innermost mismatch
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            return RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor "
                                f"b ({b[i]}) at non-singleton dimension {i}")
    return RuntimeError(f"shapes {list(a)} and {list(b)} are not broadcastable")


def _binary_impl(name):
    """Decorate a two-operand impl: None operands are a TypeError (PyTorch's binding rejects
    them; the registry lets None through for optional slots), and a broadcast failure is
    PyTorch's RuntimeError instead of NumPy's ValueError."""
    def deco(fn):
        @functools.wraps(fn)
        def impl(input, other):
            if input is None or other is None:
                bad = "input" if input is None else "other"
                raise TypeError(f"{name}(): argument '{bad}' must be Tensor or Number, not "
                                "NoneType")
            try:
                return fn(input, other)
            except ValueError:
                shapes = (np.shape(input), np.shape(other))
                try:
                    np.broadcast_shapes(*shapes)
                except ValueError:
                    raise _broadcast_error(shapes) from None
                raise
        return impl
    return deco


def _not_implemented(kernel: str, d: dt.dtype) -> NotImplementedError:
    # PyTorch 2.x raises NotImplementedError (a RuntimeError subclass) for missing kernels
    return NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_pt_name(d)}\'')


def _tensor_only(op_name: str, arg: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op_name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _arrays_only(op_name: str, input, other) -> None:
    """For kind="other" impls: tensors arrive as arrays, Python numbers stay numbers."""
    for arg, pos, x in (("input", 1, input), ("other", 2, other)):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{op_name}(): argument '{arg}' (position {pos}) must be Tensor, "
                            f"not {type(x).__name__}")


def _jt_dtype(a: np.ndarray) -> dt.dtype:
    return dt.from_numpy_dtype(a.dtype)


# --- comparisons -------------------------------------------------------------------------------
def _ordered_rule(kernel: str):
    """Ordering comparisons have no complex kernel; eq/ne do."""
    def rule(d):
        if d.category == dt.COMPLEX:
            raise _not_implemented(kernel, d)
        return d, dt.bool
    return rule


_CMP = {
    # op name: (NumPy ufunc, kernel name in PyTorch's errors, Python operator, has complex)
    "eq": (np.equal, "eq", "==", True),
    "ne": (np.not_equal, "ne", "!=", True),
    "lt": (np.less, "lt", "<", False),
    "le": (np.less_equal, "le", "<=", False),
    "gt": (np.greater, "gt", ">", False),
    "ge": (np.greater_equal, "ge", ">=", False),
}


def _declare_compare(name: str, base: str):
    ufunc, kernel, pyop, complex_ok = _CMP[base]

    @_binary_impl(name)
    def impl(input, other):
        return ufunc(input, other)
    impl.__doc__ = f"Elementwise `input {pyop} other` as a bool tensor (broadcasting)."
    return defop(name, impl, tensors=_BIN, kind="elementwise", nondiff=True, inplace=True,
                 dtype="bool" if complex_ok else _ordered_rule(kernel),
                 scalar=f"{{input}} {pyop} {{other}}")


eq = _declare_compare("eq", "eq")
ne = _declare_compare("ne", "ne")
lt = _declare_compare("lt", "lt")
le = _declare_compare("le", "le")
gt = _declare_compare("gt", "gt")
ge = _declare_compare("ge", "ge")
not_equal = _declare_compare("not_equal", "ne")
less = _declare_compare("less", "lt")
less_equal = _declare_compare("less_equal", "le")
greater = _declare_compare("greater", "gt")
greater_equal = _declare_compare("greater_equal", "ge")


# --- closeness and equality ----------------------------------------------------------------------
def _close_operands(name: str, input, other, rtol, atol):
    """Validate isclose/allclose arguments like PyTorch: tensors of one dtype, tolerances >= 0."""
    _arrays_only(name, input, other)
    da, db = _jt_dtype(input), _jt_dtype(other)
    if da is not db:
        raise RuntimeError(f"{_pt_name(da)} did not match {_pt_name(db)}")
    if not rtol >= 0:  # also rejects NaN
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if not atol >= 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    try:
        np.broadcast_shapes(input.shape, other.shape)
    except ValueError:
        raise _broadcast_error((input.shape, other.shape)) from None
    return da


def _isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """`|input - other| <= atol + rtol * |other|` elementwise, plus exact equality (so equal
    infinities are close); NaNs are close to each other only with `equal_nan`."""
    d = _close_operands("isclose", input, other, rtol, atol)
    inexact = d.category >= dt.FLOAT
    with np.errstate(invalid="ignore"):  # ml_dtypes warns comparing NaNs
        close = np.equal(input, other)
    if equal_nan and inexact:
        close = close | (np.isnan(input) & np.isnan(other))
    if rtol == 0 and atol == 0:
        return np.asarray(close)  # zero tolerances degenerate to equality
    # Integers and bools are compared in the default float dtype (PyTorch's reference does the
    # same, so large integers are compared only to that dtype's precision).
    if not inexact:
        d = dt.get_default_dtype()
    store, comp = d.np, d.compute
    a, b = input.astype(comp), other.astype(comp)

    def rnd(x):
        # each step rounds to the storage dtype, as PyTorch's half-precision kernels do
        return x if store == comp else x.astype(store).astype(comp)
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = rnd(atol + np.abs(rnd(b * rtol)))
        actual = rnd(np.abs(rnd(a - b)))
        finite = np.isfinite(actual) & (actual <= allowed)
    return np.asarray(close | finite)


isclose = defop("isclose", _isclose, tensors=_BIN, kind="other", nondiff=True, interpreted=_NOT_YET,
                batch=ELEMENTWISE)


def _allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of `isclose(input, other, ...)` is; a Python bool."""
    _arrays_only("allclose", input, other)
    return bool(np.all(_isclose(input, other, rtol, atol, equal_nan)))


allclose = defop("allclose", _allclose, tensors=_BIN, kind="other", nondiff=True,
                 interpreted=_PY_BOOL)


def _equal(input, other):
    """True when both have the same shape and equal elements (dtypes may differ); Python bool."""
    _arrays_only("equal", input, other)
    if input.shape != other.shape:
        return False
    common = dt.promote_types(_jt_dtype(input), _jt_dtype(other)).compute
    return bool(np.all(np.equal(input.astype(common), other.astype(common))))


equal = defop("equal", _equal, tensors=_BIN, kind="other", nondiff=True, interpreted=_PY_BOOL)


# --- logical ops -------------------------------------------------------------------------------
def _tensors_only_binary(name: str):
    """PyTorch's logical ops take tensors only (`logical_and(t, 1)` is a TypeError), which the
    registry's generated signature can't express: wrap the function, method and in-place form."""
    fn, method, inplace = PUBLIC[name], getattr(Tensor, name), getattr(Tensor, name + "_")

    def public(input, other, *, out=None):
        _tensor_only(name, "input", 1, input)
        _tensor_only(name, "other", 2, other)
        return fn(input, other, out=out)

    def as_method(self, other, *, out=None):
        _tensor_only(name, "other", 1, other)
        return method(self, other, out=out)

    def as_inplace(self, other):
        _tensor_only(name + "_", "other", 1, other)
        return inplace(self, other)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = fn.__doc__
    public.__module__ = "jitorch"
    as_method.__name__, as_method.__qualname__ = name, "Tensor." + name
    as_inplace.__name__, as_inplace.__qualname__ = name + "_", "Tensor." + name + "_"
    PUBLIC[name] = public
    setattr(Tensor, name, as_method)
    setattr(Tensor, name + "_", as_inplace)
    return public


def _declare_logical(name: str, ufunc, scalar: str, doc: str):
    @_binary_impl(name)
    def impl(input, other):
        return ufunc(input, other)
    impl.__doc__ = doc
    defop(name, impl, tensors=_BIN, kind="elementwise", dtype="bool", nondiff=True,
          inplace=True, scalar=scalar)
    return _tensors_only_binary(name)


logical_and = _declare_logical("logical_and", np.logical_and,
                               "({input} != 0) and ({other} != 0)",
                               "Elementwise logical AND of any-dtype tensors (nonzero is True).")
logical_or = _declare_logical("logical_or", np.logical_or,
                              "({input} != 0) or ({other} != 0)",
                              "Elementwise logical OR of any-dtype tensors (nonzero is True).")
logical_xor = _declare_logical("logical_xor", np.logical_xor,
                               "({input} != 0) != ({other} != 0)",
                               "Elementwise logical XOR of any-dtype tensors (nonzero is True).")


def _logical_not(input):
    """Elementwise logical NOT of any-dtype tensor (zero is True)."""
    return np.logical_not(input)


logical_not = defop("logical_not", _logical_not, kind="elementwise", dtype="bool",
                    nondiff=True, inplace=True, scalar="{input} == 0")


# --- bitwise ops -------------------------------------------------------------------------------
def _integral_rule(kernel: str, allow_bool: bool = True):
    def rule(d):
        if d.category > dt.INT or (d is dt.bool and not allow_bool):
            raise _not_implemented(kernel, d)
        return d, d
    return rule


def _declare_bitwise(name: str, ufunc, pyop: str):
    @_binary_impl(name)
    def impl(input, other):
        return ufunc(input, other)
    impl.__doc__ = (f"Elementwise bitwise `input {pyop} other` of integer or bool tensors "
                    f"(logical on bool).")
    return defop(name, impl, tensors=_BIN, kind="elementwise", nondiff=True, inplace=True,
                 dtype=_integral_rule(name), scalar=f"{{input}} {pyop} {{other}}")


bitwise_and = _declare_bitwise("bitwise_and", np.bitwise_and, "&")
bitwise_or = _declare_bitwise("bitwise_or", np.bitwise_or, "|")
bitwise_xor = _declare_bitwise("bitwise_xor", np.bitwise_xor, "^")


def _bitwise_not(input):
    """Elementwise bitwise NOT of an integer tensor; logical NOT of a bool tensor."""
    return np.invert(input)


bitwise_not = defop("bitwise_not", _bitwise_not, kind="elementwise", nondiff=True,
                    inplace=True, dtype=_integral_rule("bitwise_not"),
                    scalar="np.invert({input})")


@_binary_impl("bitwise_left_shift")
def _left_shift(input, other):
    """Elementwise `input << other` on integer tensors; shifts that are negative or not below
    the bit width give 0 (PyTorch defines what C leaves undefined)."""
    bits = input.dtype.itemsize * 8
    other = np.broadcast_to(other, np.broadcast_shapes(np.shape(input), np.shape(other)))
    ok = (other >= 0) & (other < bits)
    r = np.left_shift(input, np.where(ok, other, 0).astype(input.dtype))
    return np.where(ok, r, np.zeros((), input.dtype))


@_binary_impl("bitwise_right_shift")
def _right_shift(input, other):
    """Elementwise arithmetic `input >> other` on integer tensors; out-of-range shifts fill
    with the sign bit (0 or -1)."""
    bits = input.dtype.itemsize * 8
    other = np.broadcast_to(other, np.broadcast_shapes(np.shape(input), np.shape(other)))
    ok = (other >= 0) & (other < bits)
    r = np.right_shift(input, np.where(ok, other, bits - 1).astype(input.dtype))
    if input.dtype.kind == "u":
        r = np.where(ok, r, np.zeros((), input.dtype))
    return r


# No scalar template for the shifts: C leaves out-of-range shifts undefined, and a one-line
# expression can't express PyTorch's definition for every width.
bitwise_left_shift = defop("bitwise_left_shift", _left_shift, tensors=_BIN, kind="elementwise",
                           nondiff=True, inplace=True,
                           dtype=_integral_rule("lshift", allow_bool=False),
                           interpreted=_NO_TEMPLATE)
bitwise_right_shift = defop("bitwise_right_shift", _right_shift, tensors=_BIN,
                            kind="elementwise", nondiff=True, inplace=True,
                            dtype=_integral_rule("rshift", allow_bool=False),
                            interpreted=_NO_TEMPLATE)


# --- classification ----------------------------------------------------------------------------
def _real_only_rule(name: str, message: str, error=RuntimeError):
    def rule(d):
        if d.category == dt.COMPLEX:
            raise error(f"{name} {message}")
        return d, dt.bool
    return rule


def _isnan(input):
    """True where the element is NaN (for complex: either part)."""
    return np.isnan(input)


def _isinf(input):
    """True where the element is +/-inf (for complex: either part)."""
    return np.isinf(input)


def _isfinite(input):
    """True where the element is neither inf nor NaN (for complex: both parts)."""
    return np.isfinite(input)


def _isposinf(input):
    """True where the element is +inf."""
    return np.isposinf(input) if input.dtype.kind == "f" else np.zeros(input.shape, np.bool_)


def _isneginf(input):
    """True where the element is -inf."""
    return np.isneginf(input) if input.dtype.kind == "f" else np.zeros(input.shape, np.bool_)


def _isreal(input):
    """True where the element has a zero imaginary part (always True for real dtypes)."""
    return np.isreal(input) if input.dtype.kind == "c" else np.ones(input.shape, np.bool_)


def _signbit(input):
    """True where the sign bit is set (so -0.0 counts as negative)."""
    return np.signbit(input)


def _signbit_rule(d):
    if d.category == dt.COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    # integers compute in float64: same sign, and np.signbit has no integer loops
    return (d if d.category == dt.FLOAT else dt.float64), dt.bool


_CLS = dict(kind="elementwise", nondiff=True)
isnan = defop("isnan", _isnan, dtype="bool", scalar="np.isnan({input})", **_CLS)
isinf = defop("isinf", _isinf, dtype="bool", scalar="np.isinf({input})", **_CLS)
isfinite = defop("isfinite", _isfinite, dtype="bool", scalar="np.isfinite({input})", **_CLS)
isposinf = defop("isposinf", _isposinf,
                 dtype=_real_only_rule("isposinf", "does not support complex inputs."),
                 scalar="np.isinf({input}) and {input} > 0", **_CLS)
isneginf = defop("isneginf", _isneginf,
                 dtype=_real_only_rule("isneginf", "does not support complex inputs."),
                 scalar="np.isinf({input}) and {input} < 0", **_CLS)
isreal = defop("isreal", _isreal, dtype="bool", scalar="{input}.imag == 0", **_CLS)
signbit = defop("signbit", _signbit, dtype=_signbit_rule, scalar="np.signbit({input})", **_CLS)
