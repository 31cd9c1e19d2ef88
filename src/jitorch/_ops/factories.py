"""Tensor factories as registry ops (`kind="factory"`): what the compiler knows of each.

`zeros(B, H)` in scripted code becomes an IR node named by the factory's public name (an op's
IR name is its public name) whose inputs are the run-time values the factory needs, in the
order of its implementation's parameters (`OpDef.params`):

    zeros(%size: List[int] | Tuple[int, ...], %dtype)        ones, empty: the same
    full(%size, %fill_value, %dtype)
    zeros_like(%input, %dtype)   ones_like, empty_like; full_like(%input, %fill_value, %dtype)
    arange(%start, %end, %step, %dtype)     linspace(%start, %end, %steps, %dtype)
    eye(%n, %m, %dtype)     tensor(%data, %dtype)     scalar_tensor(%s, %dtype)
    new_zeros(%self, %size, %dtype)   new_ones, new_empty; new_full(%self, %size, %fill_value,
    %dtype); new_tensor(%self, %data, %dtype)

Sizes are run-time ints (a new size never recompiles); `%dtype` is always a constant (a dtype
or None). Each declaration holds:
- `impl`: the eager call the interpreter makes (the reference semantics); it takes the IR
  inputs and returns a Tensor. Every parameter is an attribute (no tensor slots): a factory is
  not differentiable and not recorded by tracers, its result is a constant to autograd.
- `infer`: the result type (dtype from `%dtype`, else PyTorch's default for that factory; rank
  from the size list or the data's nesting).
- `extra["stub"]`: a function with PyTorch's public signature, which the frontend binds a call
  with (`script/frontend/factory.py`); `extra["method"]`: a Tensor method (`x.new_zeros`).
The public functions stay `jitorch.zeros` & co. (`_creation.py`, `_ranges.py`, `Tensor.new_*`);
these ops are `function=False, method=False`. Lowering: `script/targets/cpu/lower_factory.py`.
Random factories (randn, rand, randint, ...) are not declared here: their generator state lives
in Python (`jitorch.random`), and a compiled program could only reproduce eager's streams by
calling back into Python, which the `prim::PythonOp` they stay already does.
"""
from __future__ import annotations

from .. import _dtype as dt
from . import infer
from .registry import OPS, defop, dispatch

__all__: list = []  # nothing public: jitorch.zeros & co. are _creation.py's


def is_factory(op: str) -> bool:
    """Whether IR op `op` is a factory (its output never requires grad)."""
    o = OPS.get(op)
    return o is not None and o.kind == "factory"


def zeros(size, dtype):
    """`zeros` as an op call, for rules written with jitorch ops (VJPs): a tracer records the
    node, with the sizes it was given (run-time sizes stay run-time)."""
    return dispatch(OPS["zeros"], (), {"size": tuple(size), "dtype": dtype})


def _jt():
    import jitorch
    return jitorch


# --- type rules -------------------------------------------------------------------------------

def _dtype(a):
    d = a.const("dtype")
    if d is not None and not isinstance(d, dt.dtype):
        raise infer.Unknown("dtype is not a constant")
    return d


_SCALAR_DTYPE = {"bool": lambda: dt.bool, "int": lambda: dt.int64,
                 "float": dt.get_default_dtype}


def scalar_dtype(kind):
    """PyTorch's dtype for a Python number of kind `kind` (full, tensor, arange's rules)."""
    f = _SCALAR_DTYPE.get(kind)
    if f is None:
        raise infer.Unknown("not a number")
    return f()


def _sized(a):
    d = _dtype(a)
    if d is None:
        d = a.tensor("self").dtype if "self" in a.params else dt.get_default_dtype()
    return infer.Tensor(d, a.length("size"))


def _full(a):
    d = _dtype(a)
    if d is None:
        d = a.tensor("self").dtype if "self" in a.params else scalar_dtype(a.scalar("fill_value"))
    return infer.Tensor(d, a.length("size"))


def _like(a):
    t = a.tensor("input")
    return infer.Tensor(_dtype(a) or t.dtype, t.rank)


def _arange(a):
    d = _dtype(a)
    if d is None:
        kinds = {a.scalar(k) for k in ("start", "end", "step")}
        if kinds <= {"int"}:
            d = dt.int64
        elif kinds <= {"int", "float"}:
            d = dt.get_default_dtype()
        else:
            raise infer.Unknown("a start, end or step that is not a number")
    return infer.Tensor(d, 1)


def _default(rank):
    def rule(a):
        return infer.Tensor(_dtype(a) or dt.get_default_dtype(), rank)
    return rule


def data_dtype(kinds) -> dt.dtype:
    """torch.tensor's inferred dtype for data whose leaves are numbers of these kinds."""
    kinds = list(kinds)
    if not kinds or "float" in kinds:
        return dt.get_default_dtype()
    if all(k == "bool" for k in kinds):
        return dt.bool
    if all(k in ("int", "bool") for k in kinds):
        return dt.int64
    raise infer.Unknown("data that is not numbers")


def _tensor(a):
    shape, kinds = a.data("data")
    d = _dtype(a)
    if d is None:
        d = a.tensor("self").dtype if "self" in a.params else data_dtype(kinds)
    return infer.Tensor(d, len(shape))


# --- declarations -----------------------------------------------------------------------------
# The stubs spell PyTorch's signatures; `**kw` on zeros/ones/empty admits `size=`.

def _s_sized(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None, **kw): pass


def _s_full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False): pass


def _s_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
            memory_format=None): pass


def _s_full_like(input, fill_value, *, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None): pass


def _s_arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
              requires_grad=False): pass


def _s_linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
                requires_grad=False): pass


def _s_eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False): pass


def _s_tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False): pass


def _s_scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                     pin_memory=False): pass


def _s_new_sized(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                 pin_memory=False): pass


def _s_new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False,
                layout=None, pin_memory=False): pass


def _s_new_tensor(self, data, dtype=None, device=None, requires_grad=False): pass


def _factory(name, impl, stub, rule, method=False):
    impl.__name__ = name
    defop(name, impl, tensors=(), kind="factory", nondiff=True, method=False, function=False,
          infer=rule, extra={"stub": stub, "method": method},
          doc=f"The compiler's `{name}` node (eager: jitorch.{name}).")


def _declare_sized(name):
    _factory(name, lambda size, dtype: getattr(_jt(), name)(tuple(size), dtype=dtype),
             _s_sized, _sized)
    _factory("new_" + name, lambda self, size, dtype: getattr(self, "new_" + name)(
        tuple(size), dtype=dtype), _s_new_sized, _sized, method=True)
    _factory(name + "_like", lambda input, dtype: getattr(_jt(), name + "_like")(
        input, dtype=dtype), _s_like, _like)


for _n in ("zeros", "ones", "empty"):
    _declare_sized(_n)
del _n
_factory("full", lambda size, fill_value, dtype: _jt().full(tuple(size), fill_value, dtype=dtype),
         _s_full, _full)
_factory("new_full", lambda self, size, fill_value, dtype: self.new_full(
    tuple(size), fill_value, dtype=dtype), _s_new_full, _full, method=True)
_factory("full_like", lambda input, fill_value, dtype: _jt().full_like(
    input, fill_value, dtype=dtype), _s_full_like, _like)
_factory("arange", lambda start, end, step, dtype: _jt().arange(start, end, step, dtype=dtype),
         _s_arange, _arange)
_factory("linspace", lambda start, end, steps, dtype: _jt().linspace(
    start, end, steps, dtype=dtype), _s_linspace, _default(1))
_factory("eye", lambda n, m, dtype: _jt().eye(n, m, dtype=dtype), _s_eye, _default(2))
_factory("tensor", lambda data, dtype: _jt().tensor(data, dtype=dtype), _s_tensor, _tensor)
_factory("new_tensor", lambda self, data, dtype: self.new_tensor(data, dtype=dtype),
         _s_new_tensor, _tensor, method=True)
_factory("scalar_tensor", lambda s, dtype: _jt().scalar_tensor(s, dtype=dtype),
         _s_scalar_tensor, _default(0))
