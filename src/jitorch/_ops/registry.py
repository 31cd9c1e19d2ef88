"""The op registry: each op is declared once, here-shaped, and everything else reads it.

`defop(...)` takes one declaration (name, NumPy implementation, dtype rule, VJP and JVP rules,
Numba scalar template, view-ness, the compiler's type rule `infer` and, for an op the compiler
does not lower, the reason `interpreted`) and produces:
- the public function, generated with the implementation's own signature (so Python does the
  argument binding: no per-call `inspect`), plus an optional `out=` keyword;
- the Tensor method and in-place method (`add`, `add_`) when asked for;
- an `OpDef` that eager dispatch, autograd, forward AD, tracing and the compiler all read.

Conventions for the implementation `impl(...)`: its first parameters are the tensor slots named in
`tensors=` (a slot may also receive a Python number, or a list of tensors when named in
`lists=`); the rest are static attributes. For `kind="elementwise"` ops the arrays arrive already
cast to the compute dtype chosen by the dtype rule; other kinds get the raw arrays and return
arrays of the result dtype.

VJP and JVP rules are plain functions written with jitorch ops, so the same rule runs eagerly
and builds higher-order graphs. Their parameter names say what they need, and so what autograd
saves: the first parameter is the incoming gradient (a tuple for multi-output ops); other names
may be a tensor slot (`input`), `result`, an attribute (`dim`), `<slot>_shape` or `<slot>_dtype`.
A VJP returns one gradient per tensor slot (a list for list slots; None where not differentiable).
A JVP takes `t_<slot>` tangents (zeros when absent) plus the same names and returns the output
tangent(s).

Eager fast path: each generated public function starts with a shortcut (`_fast_block`) for the
common call: plain tensors (`FAST_TYPES`) on the CPU, no `out=`, no profiler, autocast, dispatch
mode or forward-AD level (one switch read: `_profiling.slow`). It does what `dispatch` does (the
same impl call, result wrapping, view marking and autograd recording) without the general
argument handling; an elementwise op also needs one operand dtype (or a tensor and a Python
int/float) that its dtype rule keeps uncast, memoised per op in `OpDef.fast`. Everything else
takes `dispatch`, the one general path.

Devices: once a tensor lives off the CPU, dispatch checks that an op's tensor operands share
one device and runs the op there (`_device/transfer.py`: `common_device`, `dispatch_on`).

Dependency rule: this module never imports the compiler (`jitorch.script`); tracing hooks in by
pushing a dispatch mode (`push_mode`).
"""
from __future__ import annotations

import inspect
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import _autocast, _dtype as dt, _fork, _profiling
from .._code_cache import compile_cached
from .._device import placed as _placed
from .._layout import SparseOperand as _SparseOperand
from .._device.backends import device_array_types as _device_arrays
from .._device.transfer import OnDevice as _OnDevice, common_device as _common_device, \
    dispatch_on as _dispatch_on, tag as _tag
from .._profiling import intercept as _intercept
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.forward_ad import propagate
from ..autograd.graph import positional_recorder, record
from ..autograd.inplace import apply_inplace as _apply_inplace  # (not imported per x.op_() call)
from ..autograd.grad_mode import _fwd_level, _state as _grad_state

_new = object.__new__
_dtype_of = dt.from_numpy_dtype
_dnp = dt._BY_NP  # from_numpy_dtype's table, read without its call

# PyTorch computes IEEE results (inf, nan) silently. NumPy warns instead; silence the floating
# point RuntimeWarnings raised from op implementations (they live in jitorch._ops.*) without
# touching NumPy's global error state, and without the ~1 us of np.errstate on hot ops.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"jitorch\._ops\.")

OPS: dict[str, "OpDef"] = {}
PUBLIC: dict[str, Callable] = {}  # public function name -> function (jitorch.<name>)
class _ModeStack(threading.local):
    """Dispatch modes (tracers) per thread: the innermost handles every op call.

    Reading a thread-local attribute costs ~3 list reads, so dispatch reads `_modes_on[0]`
    first, the number of threads whose stack is not empty, and the ops' fast path reads the
    `_profiling.MODES` bit of its switch; every assignment to `stack` (push_mode, and the callers
    that set it around a region) keeps both. A thread that ends with modes still pushed is
    counted out by its `_Counted` token, which its thread-local state drops then (else the ops
    of every thread would take the slow path for good)."""
    stack: list = []
    token = None  # a _Counted while this thread's stack is not empty

    def __setattr__(self, name, value):
        if name == "stack":
            with _modes_lock:
                was, now = bool(self.stack), bool(value)
                threading.local.__setattr__(self, name, value)
                if was != now:
                    if was:
                        self.token.counted = False  # (counted out here, not by its __del__)
                    threading.local.__setattr__(self, "token", _Counted() if now else None)
                    _count_modes(now - was)
        else:
            threading.local.__setattr__(self, name, value)


class _Counted:
    """Held by a thread's _ModeStack while its stack is not empty; dropped with the thread's
    thread-local state when it ends still counted: the thread is counted out of `_modes_on`."""
    counted = True

    def __del__(self):
        if self.counted:
            with _modes_lock:
                _count_modes(-1)


def _count_modes(delta: int) -> None:
    _modes_on[0] += delta
    _profiling.set_slow(_profiling.MODES, _modes_on[0] > 0)


_modes_on = [0]  # threads with an active dispatch mode (0: the fast path needs no other look)
# re-entrant: a _Counted may be dropped (its thread's state cleared) while this thread holds it
_modes_lock = _fork.rlock()
_mode_state = _ModeStack()


@dataclass(eq=False)
class OpDef:
    name: str
    impl: Callable
    tensors: tuple
    lists: tuple
    attrs: tuple
    kind: str  # "elementwise" | "reduction" | "shape" | "linalg" | "index" | "other"
    dtype_rule: Any
    vjp: Callable | None
    jvp: Callable | None
    scalar: str | None
    view: Any  # False | True | "maybe": output 0 may share storage with input 0
    nondiff: bool  # outputs never require grad (comparisons, argmax, ...)
    # tensor slots read only for their shape/dtype (view_as's `other`): no gradient edge, no
    # tangent, as in PyTorch; `grad_slots` is the rest of `tensors`
    shape_only: tuple = ()
    grad_slots: tuple = ()
    scalar_first: bool = False  # accepts a Python number as its first operand (pow(2, t))
    params: tuple = ()  # every impl parameter name in signature order (the IR's input order)
    vjp_params: tuple = ()
    jvp_params: tuple = ()
    doc: str = ""
    # the compiler's view (script/ reads these; the registry never imports script/):
    infer: Callable | None = None  # type rule (_ops/infer.py); elementwise ops use dtype_rule
    interpreted: str | None = None  # why the compiler has no lowering for this op (None: it has)
    # how `jitorch.func.vmap` runs the op on batched tensors: a rule from `_ops/batching.py`
    # (None: the default of the op's kind, e.g. broadcasting for elementwise ops)
    batch: Any = None
    autocast: tuple = ()  # ((device type, category), ...): its autocast policy (_autocast)
    extra: dict = field(default_factory=dict)
    rule_cache: dict = field(default_factory=dict)
    # elementwise fast path (`_fast_block`): operand dtype -> output dtype when the op runs on
    # that dtype's arrays uncast, False when it must take the general path
    fast: dict = field(default_factory=dict)

    def __repr__(self):
        return f"<op {self.name}>"


def push_mode(mode) -> None:
    """Install a dispatch mode (e.g. a tracer) for this thread: `mode(op, slots, attrs)` then
    handles every op call made by this thread."""
    _mode_state.stack = _mode_state.stack + [mode]


def pop_mode():
    mode = _mode_state.stack[-1]
    _mode_state.stack = _mode_state.stack[:-1]
    return mode


# --- dtype rules -------------------------------------------------------------------------------
def _operand_dtype(slots) -> dt.dtype:
    """PyTorch's three-tier promotion over an op's operands."""
    dims, zeros, cats = [], [], []
    for s in slots:
        if isinstance(s, Tensor):
            (dims if s._data.ndim else zeros).append(s._dtype)
        elif s is not None:
            cats.append(dt.scalar_category(s))
    return dt.promote_tiers(dims, zeros, cats)


def _to_float(d: dt.dtype) -> dt.dtype:
    return d if d.category >= dt.FLOAT else dt.get_default_dtype()


RULES = {
    # rule name: promoted dtype -> (compute dtype, output dtype)
    "promote": lambda d: (d, d),
    "float": lambda d: (_to_float(d), _to_float(d)),
    "bool": lambda d: (d, dt.bool),
    "real": lambda d: (d, d.to_real()),
    "float_real": lambda d: (_to_float(d), _to_float(d).to_real()),
}


def _int_only(name):
    def rule(d):
        if d.category > dt.INT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_pt_name(d)}\'')
        return d, d
    return rule


def _no_complex(name, base="promote"):
    def rule(d):
        if d.category == dt.COMPLEX:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_pt_name(d)}\'')
        return RULES[base](d)
    return rule


def _pt_name(d: dt.dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


# --- declaration -------------------------------------------------------------------------------
_VJP_SPECIAL = ("result",)


def _rule_params(fn, op_tensors, op_attrs, skip_first: bool):
    """Classify a VJP/JVP rule's parameters: what autograd must save and pass."""
    if fn is None:
        return ()
    names = list(inspect.signature(fn).parameters)
    if skip_first:
        names = names[1:]
    out = []
    for n in names:
        if n in op_tensors:
            out.append(("slot", n))
        elif n == "result":
            out.append(("result", n))
        elif n in op_attrs:
            out.append(("attr", n))
        elif n.startswith("t_") and n[2:] in op_tensors:
            out.append(("tangent", n[2:]))
        elif n.endswith("_shape") and n[:-6] in op_tensors:
            out.append(("shape", n[:-6]))
        elif n.endswith("_dtype") and n[:-6] in op_tensors:
            out.append(("dtype", n[:-6]))
        elif n == "needs_input_grad" and skip_first:
            # a VJP may skip the gradients no input takes: eager autograd passes one flag per
            # tensor slot (Node.apply, from its edges); callers that pass none (compiled
            # backwards) leave the rule's default, every gradient
            out.append(("needs", n))
        else:
            raise TypeError(f"rule {fn.__name__}: unknown parameter '{n}'")
    if any(kind == "needs" for kind, _ in out[:-1]):
        raise TypeError(f"rule {fn.__name__}: needs_input_grad must be its last parameter")
    return tuple(out)


def defop(name: str, impl: Callable, *, tensors=("input",), lists=(), kind="other",
          dtype="promote", vjp=None, jvp=None, scalar=None, view=False, nondiff=False,
          method=True, function=True, inplace=False, export_as=None, extra=None,
          varargs=None, scalar_first=False, doc=None, infer=None, interpreted=None,
          batch=None, autocast=None, shape_only=()) -> Callable:
    """Declare an op once; returns its public function (also bound as method/in-place).

    `infer`: the compiler's type rule (`_ops/infer.py`; elementwise ops need none).
    `interpreted`: the reason the compiler runs this op in the interpreter (no lowering in
    `script/codegen/lowering.py`'s table and no scalar template); tests/test_registry_coverage.py
    requires one of the three for every op.
    `batch`: the vmap batching rule (`_ops/batching.py`), when the kind's default does not fit.
    `shape_only`: the tensor slots the op reads only for their shape or dtype (`view_as`'s
    `other`): autograd and forward AD never flow through them (tests/test_shape_only_args.py
    checks every op whose impl reads a slot's metadata alone declares it).
    `autocast`: the op's policy inside `jitorch.autocast` ("lower", "fp32", "promote" on CPU and
    CUDA, or a dict per device type; PyTorch's lists, see `_autocast.py`)."""
    if name in OPS:
        raise ValueError(f"op '{name}' declared twice")
    try:
        autocast = _autocast.policies(autocast)
    except ValueError as e:
        raise ValueError(f"op '{name}': {e}") from None
    sig = inspect.signature(impl)
    params = list(sig.parameters.values())
    tensor_names = tuple(tensors) + tuple(lists)
    slot_names = [p.name for p in params if p.name in tensor_names]
    attrs = tuple(p.name for p in params if p.name not in tensor_names)
    rule = RULES[dtype] if isinstance(dtype, str) else dtype
    extra = dict(extra or {})
    if varargs:
        extra["varargs"] = varargs
    op = OpDef(name=name, impl=impl, tensors=tuple(slot_names), lists=tuple(lists),
               attrs=attrs, kind=kind, dtype_rule=rule, vjp=vjp, jvp=jvp, scalar=scalar,
               view=view, nondiff=nondiff, doc=doc or impl.__doc__ or "", extra=extra,
               scalar_first=scalar_first, infer=infer, interpreted=interpreted, batch=batch,
               autocast=autocast)
    op.params = tuple(p.name for p in params)
    if set(shape_only) - set(slot_names) or set(shape_only) & set(lists):
        raise ValueError(f"op '{name}': shape_only names a slot that is not a tensor slot")
    op.shape_only = tuple(shape_only)
    op.grad_slots = tuple(s for s in slot_names if s not in shape_only)
    op.vjp_params = _rule_params(vjp, slot_names, attrs, skip_first=True)
    op.jvp_params = _rule_params(jvp, slot_names, attrs, skip_first=False)
    OPS[name] = op
    fn = _make_wrapper(op, sig, export_as or name)
    op.fn = fn
    if function and not name.startswith("_"):
        PUBLIC[export_as or name] = fn
    if method:
        setattr(Tensor, name if method is True else method, fn)
    if inplace:
        ip = _make_inplace(op, sig, name + "_")
        setattr(Tensor, name + "_", ip)
        op.inplace_fn = ip
    return fn


def _signature_parts(op: OpDef, sig: inspect.Signature):
    """The public parameter list; the attribute named by `varargs=` becomes `*name`."""
    ns = {"_norm_varargs": _norm_varargs}
    parts = []
    varargs = op.extra.get("varargs")
    for i, p in enumerate(sig.parameters.values()):
        text = p.name
        if p.name == varargs:
            parts.append("*" + p.name)
            continue
        if p.default is not inspect.Parameter.empty:
            ns[f"_d{i}"] = p.default
            text += f"=_d{i}"
        if p.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parts and not any(
                q.startswith("*") for q in parts):
            parts.append("*")
        parts.append(text)
    return parts, ns


def _varargs_line(op: OpDef) -> str:
    """Normalise the `*varargs` attribute; the common call (plain ints, `x.view(-1)`,
    `x.reshape(2, 8)`) is checked inline, as `_norm_varargs` would pass it, without its call.
    An op may declare its own normaliser (`extra["varargs_norm"]`, called with the first tensor
    slot too), which may also answer a call itself by returning anything but a tuple (so
    `Tensor.view(dtype)` is the generated `view`, with no wrapper in front of `x.view(-1)`)."""
    v = op.extra.get("varargs")
    if not v:
        return ""
    if op.extra.get("varargs_norm") is None:
        call, answer = f"_norm_varargs({v}, _kw, '{v}')", ""
    else:
        call = f"_op.extra['varargs_norm']({op.tensors[0]}, {v}, _kw, '{v}')"
        answer = f"{{0}}if type({v}) is not tuple:\n{{0}}    return {v}\n"
    return (f"    for _s in {v}:\n"
            f"        if type(_s) is not int:\n"
            f"            {v} = {call}\n" + answer.format(" " * 12) +
            f"            break\n"
            f"    else:\n"
            f"        if _kw:\n"
            f"            {v} = {call}\n" + answer.format(" " * 12))


def _norm_varargs(args: tuple, kw=None, name=None):
    """`x.view(2, 3)`, `x.view((2, 3))` and `x.view([2, 3])` all mean the tuple (2, 3); so does
    the keyword form `x.view(size=(2, 3))`, as in PyTorch (`kw` holds it)."""
    if not kw:
        seq = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        for a in seq:  # the common calls, `x.view(-1)`, `x.reshape(shape)`: plain ints already
            if type(a) is not int:
                break
        else:
            return seq if type(seq) is tuple else tuple(seq)
    if kw:
        bad = [k for k in kw if k != name]
        if bad:
            raise TypeError(f"got an unexpected keyword argument '{bad[0]}'")
        if args:
            raise TypeError(f"got multiple values for argument '{name}'")
        args = (kw[name],)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = a.__index__()
        elif not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"expected a sequence of ints, but got an element of type "
                            f"{type(a).__name__}")
        # int subclasses stay as given: autodiff's size stand-ins must reach the recorded op
        out.append(a if isinstance(a, int) else int(a))
    return tuple(out)


def _check_first(op: OpDef, x) -> None:
    """PyTorch's functions take a Tensor first (`torch.exp(1.0)` is a TypeError), except the
    few with a Scalar-first overload (`torch.pow(2, t)`), flagged `scalar_first`."""
    if op.scalar_first and isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        return
    raise TypeError(f"{op.name}(): argument '{op.tensors[0]}' (position 1) must be Tensor, not "
                    f"{type(x).__name__}")


def _make_wrapper(op: OpDef, sig: inspect.Signature, pyname: str, guard=None) -> Callable:
    """Generate `def name(<impl signature>, out=None)` that calls dispatch without inspect.

    `guard`: a check of the call's arguments (PyTorch's errors the impl can't word) run after
    the fast path, before the general one (`checked_function`)."""
    parts, ns = _signature_parts(op, sig)
    # __name__: NumPy's warnings raised in the generated code belong to this module, so the
    # RuntimeWarning filter above applies to them as to `dispatch`'s calls
    ns.update({"_dispatch": dispatch, "_op": op, "_out": _write_out, "__name__": __name__})
    if "*" not in parts and not any(p.startswith("*") for p in parts):
        parts.append("*")
    parts.append("out=None")
    if op.extra.get("varargs"):
        parts.append("**_kw")
    slots = "(" + "".join(f"{n}, " for n in op.tensors) + ")"
    attrs = "{" + ", ".join(f"'{a}': {a}" for a in op.attrs) + "}"
    first = op.tensors[0] if op.tensors else None
    check = (f"    if not isinstance({first}, _Tensor):\n"
             f"        _check_first(_op, {first})\n") if first and first not in op.lists else ""
    ns.update({"_Tensor": Tensor, "_check_first": _check_first})
    # a sparse operand raises SparseOperand when its dense array is read: the `try` costs the
    # dense path nothing (Python 3.11), the handler runs the op's sparse form (_layout.py)
    ns.update({"_SparseOperand": _SparseOperand, "_sparse": _sparse_call})
    guard_src = ""
    if guard is not None:
        ns["_guard"] = guard
        args = [p.name if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else
                f"{p.name}={p.name}" for p in sig.parameters.values()]
        guard_src = f"    _guard({', '.join(args + ['out=out'])})\n"
    src = (f"def {pyname}({', '.join(parts)}):\n"
           + _varargs_line(op) + _fast_block(op, sig, ns) + guard_src + check +
           f"    try:\n"
           f"        r = _dispatch(_op, {slots}, {attrs})\n"
           f"    except _SparseOperand:\n"
           f"        r = _sparse(_op, {slots}, {attrs})\n"
           f"    return r if out is None else _out(out, r)\n")
    exec(compile_cached(src, f"<jitorch op {op.name}>"), ns)
    if check:  # the same function without the Tensor-first check, for reflected operators
        exec(compile_cached(src.replace(check, "").replace(f"def {pyname}(", f"def {pyname}_any("),
                            f"<jitorch op {op.name}>"), ns)
        op.fn_any = ns[pyname + "_any"]
    fn = ns[pyname]
    op.fn_any = getattr(op, "fn_any", fn)
    fn.__doc__ = op.doc
    fn.__qualname__ = pyname
    fn.__module__ = "jitorch"
    return fn


def checked_function(op: OpDef, guard, refuses: tuple) -> Callable:
    """`op`'s public function made again with `guard(*args, **kwargs)` run on the calls its fast
    path leaves (`_make_wrapper`), for a guard that rejects only operands of the dtypes in
    `refuses` (and Python numbers the fast path never takes, such as bools): the fast path
    takes no operand of those dtypes (`_fast_entry`), so every call it takes is one the guard
    passes and the common call pays no guard's call. Sets `op.fn_any` to its
    unchecked-first-operand form; `op.fn` stays the function without the guard."""
    if op.kind != "elementwise" or op.extra.get("varargs"):
        raise ValueError(f"op '{op.name}': a dtype guard needs an elementwise op")
    op.extra["fast_refuses"] = tuple(refuses)
    op.fast.clear()
    fn = op.fn
    checked = _make_wrapper(op, inspect.signature(op.impl), fn.__qualname__, guard)
    op.fn = fn
    return checked


def _sparse_call(op: OpDef, slots: tuple, attrs: dict):
    """An op called with a sparse COO operand: its sparse form, or PyTorch's error."""
    from ..sparse._coo import call_sparse
    return call_sparse(op.name, slots, attrs)


# --- the elementwise fast path ------------------------------------------------------------------
# Types whose instances the fast path takes (exact types: a subclass such as vmap's BatchedTensor
# may change dispatch); nn/parameter.py adds Parameter.
FAST_TYPES = {Tensor}


def _ft(name: str) -> str:
    """Fast-path source: `name` is a tensor of `FAST_TYPES` (a Tensor's own type tested first:
    cheaper than the set's lookup)."""
    return f"(type({name}) is _Tensor or type({name}) in _FT)"


def _fast_block(op: OpDef, sig: inspect.Signature, ns: dict) -> str:
    """Source of the public function's fast path, or "" (an op whose one list slot is not its
    last, or that has several tensor slots before it, takes none).

    It covers the common call exactly as `dispatch` would run it: every tensor slot given a
    tensor of `FAST_TYPES`, no `out=`, on the CPU, with no profiler, autocast, dispatch mode or
    forward-AD level active; an elementwise op further needs operands of one dtype that its
    dtype rule keeps uncast (memoised per op in `op.fast` by `_fast_entry`) and the attributes
    its dtype rule reads at their defaults. Anything else (and an elementwise NumPy error,
    which the general path turns into PyTorch's) runs `dispatch`, whose semantics this only
    shortcuts: the same impl call, result wrapping, view marking and autograd recording."""
    # list slots: one, last, after at most one tensor (cat's `tensors`, `_index`'s `indices`)
    if not op.tensors or op.lists and (op.tensors[-1:] != op.lists or len(op.tensors) > 2
                                       or op.kind == "elementwise"):
        return ""
    elementwise = op.kind == "elementwise"
    cond = []
    if elementwise and op.extra.get("dtype_attrs"):  # the rule reads attrs: defaults memoised
        for i, p in enumerate(sig.parameters.values()):
            if p.name in op.attrs:
                if p.default is inspect.Parameter.empty:
                    return ""
                cond.append(f"{p.name} is _d{i}")
    ts = op.tensors
    grad_cond = None
    ns.update({"_fast_scalar_entry": _fast_scalar_entry, "_asarray": np.asarray,
               "_SEQ": (list, tuple)})
    ns.update({"_fast": op.fast, "_fast_entry": _fast_entry, "_FT": FAST_TYPES,
               "_slow": _profiling.slow, "_gst": _grad_state,
               "_impl": op.impl, "_finish": _finish_elementwise, "_nd": np.ndarray,
               "_new": _new, "_dtype_of": _dtype_of, "_wrap": _wrap,
               "_dnp": dt._BY_NP,  # from_numpy_dtype's table, read without its call
               "_mark_views": _mark_views,
               "_fattrs": {p.name: p.default for p in sig.parameters.values()
                           if p.name in op.attrs}})
    tcond = " and ".join([_ft(t) for t in ts]
                         + [f"{t}._dtype is {ts[0]}._dtype" for t in ts[1:] if elementwise])
    arrays = ", ".join(f"{t}._data" for t in ts)
    slots = "(" + "".join(t + ", " for t in ts) + ")"
    attrs = "{" + ", ".join(f"'{a}': {a}" for a in op.attrs) + "}"
    # attributes by position when the impl takes them there, after its tensor slots (a keyword
    # costs its name's lookup on every call)
    ps = list(sig.parameters.values())
    positional = [p.name for p in ps] == list(ts) + list(op.attrs) and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in ps)
    kw = "".join(f", {a}" if positional else f", {a}={a}" for a in op.attrs)
    # `_slow[0]`: no profiler, autocast, device tensor, forward-AD level or dispatch mode
    src = (f"    if (out is None{''.join(' and ' + c for c in cond)} and not _slow[0]\n"
           f"            and {tcond}):\n")
    if op.lists:  # one list of tensors (cat, stack): every item a FAST_TYPES tensor
        *lead, lst = ts
        src = src.replace(tcond, "".join(f"{_ft(t)} and " for t in lead)
                          + f"type({lst}) in _SEQ")
        src += (f"        _al = []\n"
                f"        _gr = {''.join(f'{t}._requires_grad' for t in lead) or False}\n"
                f"        for _x in {lst}:\n"
                f"            if not {_ft('_x')}:\n"
                f"                break\n"
                f"            _al.append(_x._data)\n"
                f"            _gr = _gr or _x._requires_grad\n"
                f"        else:\n"
                + _wrap_impl_src(f"_impl({''.join(f'{t}._data, ' for t in lead)}_al{kw})"))
        if op.view:
            src += f"            _mark_views(_op, {slots}, {attrs}, _o)\n"
        grad_cond = "_gr"
    elif elementwise and len(ts) == 2:  # a binary op: the second operand may be a number
        a, b = ts
        src = src.replace(tcond, _ft(a))
        src += (f"        _t1 = type({b})\n"
                f"        if _t1 is _Tensor or _t1 in _FT:\n"
                f"            _e = _fast.get({a}._dtype) if {b}._dtype is {a}._dtype else False\n"
                f"            if _e is None:\n"
                f"                _e = _fast_entry(_op, {a}._dtype, _fattrs)\n"
                f"            _a1 = {b}._data\n"
                f"        elif _t1 is float or _t1 is int:\n"
                f"            _e = _fast.get(({a}._dtype, _t1))\n"
                f"            if _e is None:\n"
                f"                _e = _fast_scalar_entry(_op, {a}._dtype, _t1, _fattrs)\n"
                f"            if _e is not False:\n"
                f"                try:\n"
                f"                    _a1 = _asarray({b}, {a}._data.dtype)\n"
                f"                except OverflowError:  # PyTorch wraps it: the general path\n"
                f"                    _e = False\n"
                f"        else:\n"
                f"            _e = False\n"
                f"        if _e is not False:\n"
                f"            try:\n"
                f"                _r = _impl({a}._data, _a1{kw})\n"
                f"            except ValueError:  # e.g. shapes that do not broadcast\n"
                f"                _e = False\n"
                f"        if _e is not False:\n"
                f"            if (type(_r) is not _nd or _r.dtype is not _e.np or _r is {a}._data\n"
                f"                    or _r is _a1):\n"
                f"                _r = _finish(_r, _e, ({a}._data, _a1))\n"
                f"            _o = _new(_Tensor)\n"
                f"            _o._data = _r\n"
                f"            _o._dtype = _e\n"
                f"            _o._version = [0]\n")
        # (here `_t1` is a FAST_TYPES type, float or int)
        grad_cond = (f"{a}._requires_grad or _t1 is not float and _t1 is not int "
                     f"and {b}._requires_grad")
    elif elementwise:
        alias = " or ".join(f"_r is {t}._data" for t in ts)
        src += (f"        _e = _fast.get({ts[0]}._dtype)\n"
                f"        if _e is None:\n"
                f"            _e = _fast_entry(_op, {ts[0]}._dtype, _fattrs)\n"
                f"        if _e is not False:\n"
                f"            try:\n"
                f"                _r = _impl({arrays}{kw})\n"
                f"            except ValueError:  # e.g. shapes that do not broadcast\n"
                f"                _e = False\n"
                f"        if _e is not False:\n"
                f"            if type(_r) is not _nd or _r.dtype is not _e.np or {alias}:\n"
                f"                _r = _finish(_r, _e, ({arrays},))\n"
                f"            _o = _new(_Tensor)\n"
                f"            _o._data = _r\n"
                f"            _o._dtype = _e\n"
                f"            _o._version = [0]\n")
    if op.lists:
        pass
    elif not elementwise and op.view and len(ts) == 1:
        # _mark_views' single-output case, inline (a "maybe" view: `_is_view_of`, inline): a
        # view shares the version counter, so it gets none of its own
        t = ts[0]
        ns["_msm"] = np.may_share_memory
        vals = "(" + "".join(f"{a}, " for a in op.attrs) + ")"  # _ViewFn makes the dict
        ind = "    " if op.view == "maybe" else ""
        src += (f"        if True:\n"
                f"            _r = _impl({arrays}{kw})\n"
                f"            if type(_r) is _nd:\n"
                f"                _o = _new(_Tensor)\n"
                f"                _o._data = _r\n"
                + _dtype_src)
        if ind:
            src += (f"                _a = {t}._data\n"
                    f"                _b = _r.base\n"
                    f"                if (_b is not None and (_b is _a or _b is _a.base or "
                    f"_msm(_r, _a))\n"
                    f"                        or _r is _a):\n")
        src += (f"{ind}                _o._base = {t} if {t}._base is None else {t}._base\n"
                f"{ind}                _o._version = {t}._version\n"
                f"{ind}                _o._view_spec = (_op, (), {vals}, -1, {t}._view_spec)\n")
        if ind:
            src += (f"                else:\n"
                    f"                    _o._version = [0]\n")
        src += (f"            else:\n"
                f"                _o = _wrap(_r)\n"
                f"                _mark_views(_op, {slots}, {attrs}, _o)\n")
    elif not elementwise:
        src += "        if True:\n" + _wrap_impl_src(f"_impl({arrays}{kw})")
        if op.view:
            src += f"            _mark_views(_op, {slots}, {attrs}, _o)\n"
    if op.vjp is not None and not op.nondiff:
        grad = grad_cond or " or ".join(f"{t}._requires_grad" for t in ts)
        # the op's positional recorder, called directly (`_recorder_stub` puts it in `ns` on
        # first use): no slots tuple, attrs dict or `record` call per node
        ns["_rec"] = _recorder_stub(op, ns)
        _FAST_NS.append((op, ns))
        args = "".join(t + ", " for t in ts) + "".join(a + ", " for a in op.attrs)
        # the tensors' flags first: `_gst` is thread-local, ~3x dearer to read
        src += (f"            if ({grad}) and _gst.enabled:\n"
                f"                _rec({args}_o)\n")
    return src + "            return _o\n"


_FAST_NS: list = []  # (op, the namespace of a public function's fast path: its `_rec`)


def _recorder_stub(op: OpDef, ns: dict):
    """The fast path's `_rec` until its first call: it puts `op`'s positional recorder in `ns`
    (made on first use, as `record` makes its recorders), or for an op without one a function
    calling `record` with the slots and attrs rebuilt, then runs it."""

    def stub(*args):
        rec = positional_recorder(op)
        if rec is None:
            n = len(op.tensors)

            def rec(*a):
                return record(op, a[:n], dict(zip(op.attrs, a[n:-1])), a[-1])
        ns["_rec"] = rec
        return rec(*args)
    return stub


def reset_fast_recorders() -> None:
    """Every fast path's `_rec` back to its stub (`graph.clear_recorders`)."""
    for op, ns in _FAST_NS:
        ns["_rec"] = _recorder_stub(op, ns)


# `_o._dtype` of the array `_r` (16 spaces in): the table read by subscript (a `.get` call costs
# ~20 ns more), `from_numpy_dtype` for the rest (a non-native byte order, an unsupported dtype)
_dtype_src = ("                try:\n"
              "                    _o._dtype = _dnp[_r.dtype]\n"
              "                except KeyError:\n"
              "                    _o._dtype = _dtype_of(_r.dtype)\n")


def _wrap_impl_src(call: str) -> str:
    """Fast-path source (12 spaces in): `_o`, the Tensor of `call`'s result (an array wrapped
    directly, anything else by `_wrap`)."""
    return (f"            _r = {call}\n"
            f"            if type(_r) is _nd:\n"
            f"                _o = _new(_Tensor)\n"
            f"                _o._data = _r\n"
            + _dtype_src +
            f"                _o._version = [0]\n"
            f"            else:\n"
            f"                _o = _wrap(_r)\n")


def _fast_entry(op: OpDef, d: dt.dtype, default_attrs: dict):
    """`op.fast[d]`: the output dtype when the dtype rule (at default attributes) computes in `d`
    itself on `d`'s own arrays, else False (a cast, or the rule's error: the general path)."""
    entry = False
    try:
        compute, out = _apply_rule(op, d, default_attrs)
    except Exception:  # noqa: BLE001  (the general path raises it, in PyTorch's words)
        pass
    else:
        if compute is d and d.compute is d.np and d not in op.extra.get("fast_refuses", ()):
            entry = out
    op.fast[d] = entry
    return entry


def _fast_scalar_entry(op: OpDef, d: dt.dtype, number_type: type, default_attrs: dict):
    """`op.fast[(d, number_type)]` for `op(tensor of d, Python number)`: the output dtype when
    the operands promote to `d` itself (the number's category is no higher: no error to raise,
    no cast of the tensor) and the rule computes in `d`, else False. Promotion reads only the
    number's category, so its type stands for every value (an int out of `d`'s range raises
    OverflowError on conversion: the general path wraps it)."""
    entry = False
    try:
        p = dt.promote_tiers([d], [], [dt.scalar_category(number_type())])
        compute, out = _apply_rule(op, d, default_attrs)
    except Exception:  # noqa: BLE001  (the general path raises it, in PyTorch's words)
        pass
    else:
        if p is d and compute is d and d.compute is d.np and \
                d not in op.extra.get("fast_refuses", ()):
            entry = out
    op.fast[(d, number_type)] = entry
    return entry


def _make_inplace(op: OpDef, sig: inspect.Signature, pyname: str) -> Callable:
    parts, ns = _signature_parts(op, sig)
    ns.update({"_inplace": inplace_dispatch, "_op": op})
    first = op.tensors[0]
    if op.extra.get("varargs"):
        parts.append("**_kw")
    slots = "(" + "".join(f"{n}, " for n in op.tensors) + ")"
    attrs = "{" + ", ".join(f"'{a}': {a}" for a in op.attrs) + "}"
    src = (f"def {pyname}({', '.join(parts)}):\n"
           + _varargs_line(op) +
           f"    return _inplace(_op, {first}, {slots}, {attrs})\n")
    exec(compile_cached(src, f"<jitorch op {op.name}_>"), ns)
    fn = ns[pyname]
    fn.__qualname__ = "Tensor." + pyname
    return fn


# --- eager dispatch ----------------------------------------------------------------------------
def _as_tensor_arg(x, op: OpDef, name: str):
    if isinstance(x, Tensor) or x is None:
        return x
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    if isinstance(x, (list, tuple)) and name in op.lists:
        return x
    raise TypeError(f"{op.name}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def dispatch(op: OpDef, slots: tuple, attrs: dict, _profile=True):
    """Run one op call eagerly (or hand it to the active mode) and record autograd.

    This is the hot path of eager mode: the common elementwise case (tensor operands of one
    dtype, no autograd) is kept to a handful of attribute reads around the NumPy call. An
    active profiler (jitorch.profiler) or autocast (jitorch.amp) sees the call first through the
    one check of `_intercept` and runs it here with _profile=False."""
    if _intercept[0] is not None and _profile:
        return _intercept[0](op, slots, attrs)
    if _modes_on[0]:
        modes = _mode_state.stack
        if modes:
            return modes[-1](op, slots, attrs)
    if _placed[0] and type(_profile) is not _OnDevice:  # some tensor lives off the CPU
        dev = _common_device(slots)
        if dev is not None:
            return _dispatch_on(dispatch, op, slots, attrs, dev)
    if op.kind == "elementwise":
        out_dtype, arrays = _elementwise_args(op, slots, attrs)
        try:
            res = op.impl(*arrays, **attrs)
        except ValueError:
            _check_broadcast(arrays)
            raise
        res = _finish_elementwise(res, out_dtype, arrays)
        outs = _new(Tensor)
        outs._data = res
        outs._dtype = out_dtype
        outs._version = [0]
    else:
        arrays = []
        for i, s in enumerate(slots):
            if isinstance(s, Tensor):
                arrays.append(s._data)
            elif op.tensors[i] in op.lists:
                arrays.append([_list_item(op, x)._data for x in s])
            else:
                s = _as_tensor_arg(s, op, op.tensors[i])
                arrays.append(s._data if isinstance(s, Tensor) else s)
        res = op.impl(*arrays, **attrs)
        outs = _wrap(res)
        if op.view:
            _mark_views(op, slots, attrs, outs)
    if _placed[0] and type(_profile) is _OnDevice and _profile.dev is not None:
        _tag(outs, _profile.dev)  # made on the device, before autograd saves or reads them
    if op.nondiff:
        return outs
    if _grad_state.enabled and op.vjp is not None:
        record(op, slots, attrs, outs)
    if _fwd_level[0]:
        if op.jvp is not None:
            propagate(op, slots, attrs, outs)
        elif op.vjp is not None:  # differentiable, but not in forward mode: never a zero tangent
            _no_forward_ad(op, slots)
    return outs


def _no_forward_ad(op: OpDef, slots) -> None:
    """PyTorch's error for forward AD through an op that has no forward-mode rule, raised only
    when a tangent reaches it."""
    for n, s in zip(op.tensors, slots):
        if n in op.shape_only:
            continue
        for x in (s if isinstance(s, (list, tuple)) else (s,)):
            if isinstance(x, Tensor) and x._tangent is not None:
                raise NotImplementedError(f"Trying to use forward AD with {op.name} that does "
                                          "not support it because it has not been implemented "
                                          "yet.")


def _finish_elementwise(res, out_dtype: dt.dtype, arrays):
    """An elementwise impl's result as an array of `out_dtype` that aliases no operand."""
    if type(res) is not np.ndarray and not isinstance(res, _device_arrays[0]):
        res = np.asarray(res)
    if res.dtype is not out_dtype.np and res.dtype != out_dtype.np:
        if out_dtype.itemsize == 2:  # float32 -> half overflows to inf silently, as PyTorch
            with np.errstate(over="ignore"):
                res = res.astype(out_dtype.np)
        else:
            res = res.astype(out_dtype.np)
    elif res is arrays[0] or (len(arrays) > 1 and res is arrays[1]):
        res = res.copy()  # an impl returned its operand: the result must not alias it
    return res


def _check_broadcast(arrays) -> None:
    """Turn NumPy's broadcast ValueError into PyTorch's RuntimeError naming both sizes."""
    shapes = [a.shape for a in arrays if isinstance(a, np.ndarray)]
    nd = max((len(sh) for sh in shapes), default=0)
    padded = [(1,) * (nd - len(sh)) + sh for sh in shapes]
    for i in range(nd):
        sizes = {p[i] for p in padded} - {1}
        if len(sizes) > 1:
            a, b = [p[i] for p in padded if p[i] != 1][:2]
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {i}")


def _list_item(op, x):
    if isinstance(x, Tensor):
        return x
    raise TypeError(f"{op.name}(): expected a sequence of Tensors, but got an element of type "
                    f"{type(x).__name__}")


def _elementwise_args(op: OpDef, slots: tuple, attrs: dict):
    """Promote operands, apply the dtype rule and cast arrays to the compute dtype."""
    t0 = slots[0]
    n = len(slots)
    if type(t0) is Tensor and (n == 1 or (n == 2 and type(slots[1]) is Tensor
                                          and slots[1]._dtype is t0._dtype)):
        d = t0._dtype  # fast path: one operand, or two of one dtype
        same = True
    else:
        for i, s in enumerate(slots):
            if not isinstance(s, Tensor):
                slots = slots[:i] + (_as_tensor_arg(s, op, op.tensors[i]),) + slots[i + 1:]
        d = _operand_dtype(slots)
        same = False
    compute, out = _apply_rule(op, d, attrs)
    if same and compute is d and d.compute is d.np:
        return out, [s._data for s in slots]
    cnp = compute.compute
    arrays = []
    for s in slots:
        if isinstance(s, Tensor):
            a = s._data
            arrays.append(a if a.dtype is cnp or a.dtype == cnp else a.astype(cnp))
        elif s is None:
            arrays.append(None)
        else:
            if compute.category < dt.scalar_category(s):
                raise RuntimeError(f"{op.name}: result type {_pt_name(compute)} can't hold "
                                   f"scalar {s!r}")
            try:
                arrays.append(np.asarray(s, dtype=cnp))
            except OverflowError:  # PyTorch wraps out-of-range ints (uint8 == -1 is 255)
                arrays.append(np.asarray(s).astype(cnp))
    return out, arrays


def _clear_rule_caches() -> None:
    for op in OPS.values():
        op.rule_cache.clear()
        op.fast.clear()


dt._default_listeners.append(_clear_rule_caches)  # "float" rules read the default dtype


def _apply_rule(op: OpDef, d: dt.dtype, attrs: dict):
    """The op's dtype rule, memoised: rules are pure functions of (dtype, attrs)."""
    if op.extra.get("dtype_attrs"):
        try:
            vals = tuple(attrs.values())
            key = (d,) + vals + tuple(map(type, vals))  # True == 1, but not as an alpha
            r = op.rule_cache.get(key)
        except TypeError:  # an unhashable attr (e.g. a tensor alpha): no memo
            return op.dtype_rule(d, **attrs)
        if r is None:
            r = op.rule_cache[key] = op.dtype_rule(d, **attrs)
        return r
    r = op.rule_cache.get(d)
    if r is None:
        r = op.rule_cache[d] = op.dtype_rule(d)
    return r


def _wrap(res):
    if type(res) is np.ndarray:  # the common case first: one array out
        t = _new(Tensor)
        t._data = res
        t._dtype = _dtype_of(res.dtype)
        t._version = [0]
        return t
    if type(res) is tuple:  # (values, indices) of max(dim), sort, ...: arrays wrapped here
        out = []
        for r in res:
            if type(r) is np.ndarray:
                t = _new(Tensor)
                t._data = r
                try:
                    t._dtype = _dnp[r.dtype]
                except KeyError:
                    t._dtype = _dtype_of(r.dtype)
                t._version = [0]
                out.append(t)
            else:
                out.append(_wrap(r))
        return tuple(out)
    if isinstance(res, tuple):
        return tuple(_wrap(r) for r in res)
    if isinstance(res, list):
        return [_wrap(r) for r in res]
    if isinstance(res, Tensor):
        return res
    if type(res) is not np.ndarray and not isinstance(res, _device_arrays[0]):
        if res is None or isinstance(res, (bool, int, float)) and not isinstance(res, np.generic):
            return res
        res = np.asarray(res)
    return Tensor._make(res)


class _ViewFn:
    """Replays a view op on a new base: `view_fn(base) -> view` (for writes through views).

    Views store only a cheap spec tuple (`_view_spec`: op, other slots, attrs, output index,
    parent spec); `Tensor._view_fn` builds this callable when an in-place write needs it. The
    fast path stores the attrs as the tuple of their values in `op.attrs` order (no dict per
    view made); `dispatch`'s `_mark_views` stores the dict it was given."""

    __slots__ = ("op", "rest", "attrs", "k", "parent")

    def __init__(self, op, rest, attrs, k, parent):
        if type(attrs) is tuple:
            attrs = dict(zip(op.attrs, attrs))
        self.op, self.rest, self.attrs, self.k, self.parent = op, rest, attrs, k, parent

    def __call__(self, b):
        v = b if self.parent is None else _ViewFn(*self.parent)(b)
        # dispatch, not op.fn: attrs can't be passed by keyword to a `*varargs` wrapper
        r = dispatch(self.op, (v,) + self.rest, self.attrs)
        return r if self.k < 0 else r[self.k]


Tensor._view_fn = property(
    lambda self: None if self._view_spec is None else _ViewFn(*self._view_spec))


def _mark_views(op, slots, attrs, outs):
    """Outputs of view ops share the base's storage and version counter."""
    src = slots[0]
    base = src._base if src._base is not None else src
    if type(outs) is Tensor:  # the common single-output case, kept short
        if op.view == "maybe" and not _is_view_of(outs._data, src._data):
            return
        outs._base = base
        outs._version = src._version
        outs._view_spec = (op, slots[1:], attrs, -1, src._view_spec)
        return
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            continue
        # a copy never overlaps its source, so the cheap bounds test is exact here
        if op.view == "maybe" and not _is_view_of(o._data, src._data):
            continue
        o._base = base
        o._version = src._version
        o._view_spec = (op, slots[1:], attrs, k, src._view_spec)


def _is_view_of(r, a) -> bool:
    """Whether a "maybe"-view op's result `r` shares `a`'s memory. NumPy gives a view the
    array that owns the memory as its `base` (`a` itself, or `a`'s own base), and an array it
    allocated no base: both cheap to read; anything else asks `np.may_share_memory` (a copy
    never overlaps its source, so its bounds test is exact here)."""
    b = r.base
    if r is a or b is not None and (b is a or b is a.base):
        return True
    return b is not None and np.may_share_memory(r, a)


def _write_out(out: Tensor, r):
    """`out=`: resize-and-copy semantics, with PyTorch's cast check."""
    if isinstance(r, tuple):
        for o, x in zip(out, r):
            _write_out(o, x)
        return out
    if getattr(r, "_vlevel", 0) or getattr(out, "_vlevel", 0):
        from ..func._vmap import write_into  # vmap: the batch must fit in `out`
        write_into(out, r, "out")
        return out
    if out._device is not r._device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {r._device} and {out._device}!")
    if not dt.can_cast(r._dtype, out._dtype):
        raise RuntimeError(f"result type {_pt_name(r._dtype)} can't be cast to the desired "
                           f"output type {_pt_name(out._dtype)}")
    if out._requires_grad and grad_mode._state.enabled:
        raise RuntimeError("out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if out._data.shape != r._data.shape:
        out._data = np.empty(r._data.shape, out._dtype.np)
    out._data[...] = r._data
    out._version[0] += 1
    return out


def inplace_dispatch(op: OpDef, self: Tensor, slots: tuple, attrs: dict):
    """`x.op_(...)`: compute out of place, check the cast, write into x, rebase x's history."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op.name}_(): self must be a Tensor")
    try:
        return _apply_inplace(op, self, slots, attrs)
    except _SparseOperand:  # no in-place op has a sparse form
        from .._layout import unsupported
        raise NotImplementedError(unsupported(f"aten::{op.name}_")) from None


