"""Tensor factories as registry ops (`kind="factory"`): what the compiler knows of each.

`zeros(B, H)` in scripted code becomes an IR node named by the factory's public name (an op's
IR name is its public name) whose inputs are the run-time values the factory needs, in the
order of its implementation's parameters (`OpDef.params`):

    zeros(%size: List[int] | Tuple[int, ...], %dtype, %device)        ones, empty: the same
    full(%size, %fill_value, %dtype, %device)
    zeros_like(%input, %dtype, %device)   ones_like, empty_like;
    full_like(%input, %fill_value, %dtype, %device)
    arange(%start, %end, %step, %dtype, %device)
    linspace(%start, %end, %steps, %dtype, %device)
    eye(%n, %m, %dtype, %device)   tensor(%data, %dtype, %device)   scalar_tensor(%s, %dtype,
    %device)
    new_zeros(%self, %size, %dtype, %device)   new_ones, new_empty; new_full(%self, %size,
    %fill_value, %dtype, %device); new_tensor(%self, %data, %dtype, %device)

Sizes are run-time ints (a new size never recompiles); `%dtype` is a constant (a dtype or None)
or `x.dtype` of a tensor (a `prim::GetAttr` the type pass folds: programs are specialised on
dtypes); `%device`, always last, is a constant (a `jitorch.device` or None) or `x.device` (which
passes/types.py `stamp_device` folds once the program's devices are known). Each declaration
holds:
- `impl`: the eager call the interpreter makes (the reference semantics); it takes the IR
  inputs and returns a Tensor. Every parameter is an attribute (no tensor slots): a factory is
  not differentiable, its result is a constant to autograd. A trace records the node when the
  eager factory's sizes (or `like` tensor) come from traced tensors (`_creation.trace_hook`).
- `infer`: the result type (dtype from `%dtype`, else PyTorch's default for that factory; rank
  from the size list or the data's nesting). The result's device is eager's rule too
  (`placement`: `%device`, else the `extra["like"]` tensor's device, else the default device),
  which the type pass applies (rules know dtypes and ranks, not devices).
- `extra["stub"]`: a function with PyTorch's public signature, which the frontend binds a call
  with (`script/frontend/factory.py`); `extra["method"]`: a Tensor method (`x.new_zeros`);
  `extra["like"]`: the tensor parameter whose device the result follows when `%device` is None
  (`self` of `new_*`, `input` of `*_like`; None: the default device).
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
    node, with the sizes it was given (run-time sizes stay run-time). No device: eager runs a
    rule with its device as the default one, and autodiff places the traced backward's
    factories on the program's device (passes/types.py `place_traced_factories`)."""
    return dispatch(OPS["zeros"], (), {"size": tuple(size), "dtype": dtype, "device": None})


def placement(device, like: str | None = None) -> str:
    """Where a factory makes its result, spelt as `TensorType.device` ("cpu", "cuda:0"): eager's
    rule (`_device.transfer.target`): `device` when given (normalised as eager does: "cuda" is
    the current CUDA device), else `like` (the device of the tensor the factory follows), else
    the default device. A device eager cannot place on here (no CUDA, a device type jitorch
    has no storage for) comes back as written: no target lowers a factory there, so the
    interpreter's eager call raises eager's error."""
    from .._device import as_device, get_default_device
    if device is None:
        return like if like is not None else str(get_default_device())
    try:
        return str(as_device(device))
    except Exception:
        return str(device)


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


def _factory(name, impl, stub, rule, method=False, like=None):
    impl.__name__ = name
    defop(name, impl, tensors=(), kind="factory", nondiff=True, method=False, function=False,
          infer=rule, extra={"stub": stub, "method": method, "like": like},
          doc=f"The compiler's `{name}` node (eager: jitorch.{name}).")


def _declare_sized(name):
    _factory(name, lambda size, dtype, device: getattr(_jt(), name)(
        tuple(size), dtype=dtype, device=device), _s_sized, _sized)
    _factory("new_" + name, lambda self, size, dtype, device: getattr(self, "new_" + name)(
        tuple(size), dtype=dtype, device=device), _s_new_sized, _sized, method=True, like="self")
    _factory(name + "_like", lambda input, dtype, device: getattr(_jt(), name + "_like")(
        input, dtype=dtype, device=device), _s_like, _like, like="input")


for _n in ("zeros", "ones", "empty"):
    _declare_sized(_n)
del _n
_factory("full", lambda size, fill_value, dtype, device: _jt().full(
    tuple(size), fill_value, dtype=dtype, device=device), _s_full, _full)
_factory("new_full", lambda self, size, fill_value, dtype, device: self.new_full(
    tuple(size), fill_value, dtype=dtype, device=device), _s_new_full, _full, method=True,
    like="self")
_factory("full_like", lambda input, fill_value, dtype, device: _jt().full_like(
    input, fill_value, dtype=dtype, device=device), _s_full_like, _like, like="input")
_factory("arange", lambda start, end, step, dtype, device: _jt().arange(
    start, end, step, dtype=dtype, device=device), _s_arange, _arange)
_factory("linspace", lambda start, end, steps, dtype, device: _jt().linspace(
    start, end, steps, dtype=dtype, device=device), _s_linspace, _default(1))
_factory("eye", lambda n, m, dtype, device: _jt().eye(n, m, dtype=dtype, device=device),
         _s_eye, _default(2))
_factory("tensor", lambda data, dtype, device: _jt().tensor(data, dtype=dtype, device=device),
         _s_tensor, _tensor)
_factory("new_tensor", lambda self, data, dtype, device: self.new_tensor(
    data, dtype=dtype, device=device), _s_new_tensor, _tensor, method=True, like="self")
_factory("scalar_tensor", lambda s, dtype, device: _jt().scalar_tensor(
    s, dtype=dtype, device=device), _s_scalar_tensor, _default(0))
