"""Autocast's state and casting policy (the public API is `jitorch.amp`).

PyTorch keeps autocast state per thread and per device type: enabled, the lower-precision dtype
(bfloat16 by default on CPU, float16 on CUDA), whether the weight-cast cache is on, and a
nesting depth. "cpu" always runs; "cuda" runs where this process has CUDA (a GPU or the
simulator), else it warns and disables itself as PyTorch's CPU-only build does; the other
accelerators are valid device types that are never enabled here.

Each registry op (and each composite, `_ops/composite`) declares its autocast policy once, as
`autocast=` (ops) or `policy(...)` (composites): one category for both CPU and CUDA, or a dict
per device type (`{"cpu": "fp32"}`: CPU only; `{"cpu": "fp32", "cuda": "promote"}`), following
PyTorch's lists in aten/src/ATen/autocast_mode.cpp. Categories:
- "lower": floating-point tensor operands other than float64 are cast to the autocast dtype
  (matmul, linear, conv, ...: the `lower_precision_fp` lists);
- "fp32": floating-point operands other than float64 are cast to float32 (losses, reductions,
  softmax, norms, exp/log/pow on CUDA; linear algebra and FFTs on the CPU: the `fp32` lists);
- "promote": floating-point operands other than float64 are cast to the widest of them (cat,
  stack; addcmul, atan2, dot, ... on CUDA);
- "banned": raises inside that device type's autocast (binary_cross_entropy on CUDA).
An op's device type is its first tensor operand's: CUDA autocast casts ops on CUDA tensors,
CPU autocast ops on CPU tensors, as PyTorch's per-device autocast dispatch keys do.

Eager dispatch reaches `dispatch_hook` through the one global check in `registry.dispatch`
(`_profiling.intercept`): the hook is installed while any thread is inside an enabled autocast
region, so code outside autocast pays nothing more than before. Casts are ordinary `_to_dtype`
calls, so autograd sends gradients back through them (a float32 leaf gets a float32 grad).
"""
from __future__ import annotations

import functools
import inspect
import threading

from . import _dtype as dt
from . import _fork, _profiling
from ._tensor import Tensor

# the device types PyTorch's autocast accepts; "cpu" and "cuda" (where available) run here
DEVICE_TYPES = ("cpu", "cuda", "xpu", "hpu", "mps", "mtia", "maia", "xla", "ipu", "privateuseone")
_DEFAULT_DTYPE = {"cpu": dt.bfloat16, "cuda": dt.float16, "mps": dt.float16}
_DEVICE_PREFIXES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, "
                    "xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone")


class _State(threading.local):
    def __init__(self):
        self.enabled = {}  # device type -> bool
        self.dtype = {}  # device type -> dt.dtype
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}  # id(fp32 leaf) -> (leaf, its lower-precision cast)
        self.script_regions = []  # autocast objects entered by scripted code, innermost last


_state = _State()
_lock = _fork.lock()
_active = [0]  # enabled regions entered, all threads together (the hook is installed while > 0)
RUNS = ("cpu", "cuda")  # the device types whose autocast casts ops here
CATEGORIES = ("lower", "fp32", "promote", "banned")


def policies(spec) -> tuple:
    """A declared policy (None, a category for CPU and CUDA, or a dict per device type) as
    ((device type, category), ...): hashable, so it travels in IR attributes."""
    if spec is None:
        return ()
    if isinstance(spec, tuple):
        return spec
    pairs = {d: spec for d in RUNS} if isinstance(spec, str) else dict(spec)
    for d, c in pairs.items():
        if d not in RUNS or c not in CATEGORIES:
            raise ValueError(f"unknown autocast policy {spec!r}")
    return tuple(sorted(pairs.items()))


def policy_on(spec, device_type: str):
    """The category `spec` declares for `device_type` (None: no casts there)."""
    for d, c in policies(spec):
        if d == device_type:
            return c
    return None


def check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    base = device_type.split(":")[0]
    if base not in DEVICE_TYPES and base not in ("mkldnn", "opengl", "opencl", "ideep", "hip",
                                                 "ve", "fpga", "lazy", "vulkan", "meta"):
        raise RuntimeError(f"Expected one of {_DEVICE_PREFIXES} device type at start of device "
                           f"string: {device_type}")
    return base


def is_enabled(device_type: str) -> bool:
    return _state.enabled.get(check_device_type(device_type), False)


def get_dtype(device_type: str) -> dt.dtype:
    d = check_device_type(device_type)
    return _state.dtype.get(d, _DEFAULT_DTYPE.get(d, dt.bfloat16))


def set_enabled(device_type: str, enabled: bool) -> None:
    """Set this thread's state for `device_type`; keeps the dispatch hook's count right."""
    d = check_device_type(device_type)
    was = _state.enabled.get(d, False)
    enabled = bool(enabled) and d in RUNS  # the others never run here (see module doc)
    _state.enabled[d] = enabled
    if was != enabled:
        with _lock:
            _active[0] += 1 if enabled else -1
            _profiling.autocast_hook[0] = dispatch_hook if _active[0] > 0 else None
            _profiling.refresh()


def set_dtype(device_type: str, dtype) -> None:
    _state.dtype[check_device_type(device_type)] = dtype


def clear_cache() -> None:
    _state.cache.clear()


# --- casting ------------------------------------------------------------------------------------
def _eligible(x) -> bool:
    """PyTorch's `is_eligible`: a floating-point tensor that is not float64."""
    return isinstance(x, Tensor) and x._dtype.category == dt.FLOAT and x._dtype is not dt.float64


def _cast(x, to: dt.dtype):
    if not _eligible(x) or x._dtype is to:
        return x
    from ._ops.conversion import _to_dtype
    # PyTorch's weight cache: lower-precision casts of float32 leaves that require grad (the
    # parameters) are reused within the outermost autocast region
    if to is not dt.float32 and _state.cache_enabled and x._requires_grad \
            and x._grad_fn is None and x._dtype is dt.float32:
        hit = _state.cache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        r = _to_dtype(x, to)
        _state.cache[id(x)] = (x, r)
        return r
    return _to_dtype(x, to)


def _flat(slots):
    for s in slots:
        if isinstance(s, (list, tuple)):
            yield from s
        else:
            yield s


def target_dtype(category: str, slots, device_type: str = "cpu") -> dt.dtype | None:
    """The dtype `category` casts these operands to, on this thread (None: no casts)."""
    if category == "lower":
        return get_dtype(device_type)
    if category == "fp32":
        return dt.float32
    if category == "promote":
        to = get_dtype(device_type)
        for s in _flat(slots):
            if _eligible(s) and s._dtype is dt.float32:
                return dt.float32
        return to
    raise ValueError(f"unknown autocast category {category!r}")


def cast_slots(category: str, slots, device_type: str = "cpu") -> tuple:
    to = target_dtype(category, slots, device_type)
    return tuple([_cast_slot(s, to) for s in slots])


_BANNED = {
    "binary_cross_entropy": (
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
        "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
        "In this case, combine the two layers using "
        "torch.nn.functional.binary_cross_entropy_with_logits\n"
        "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
        "safe to autocast."),
}


def _device_type(slots) -> str:
    """The device type of an op call: its first tensor operand's (the CPU without one)."""
    for s in _flat(slots):
        if isinstance(s, Tensor):
            return s._device.type
    return "cpu"


def cast_for(spec, slots, name: str = "") -> tuple:
    """`slots` cast as the policy `spec` says for their device type, when that device type's
    autocast is enabled on this thread (else unchanged)."""
    d = _device_type(slots)
    if not _state.enabled.get(d, False):
        return slots
    cat = policy_on(spec, d)
    if cat is None:
        return slots
    if cat == "banned":
        raise RuntimeError(_BANNED.get(name, f"{name} is unsafe to autocast on {d}"))
    return cast_slots(cat, slots, d)


def _cast_slot(s, to):
    if isinstance(s, (list, tuple)):
        return type(s)(_cast(x, to) for x in s)
    return _cast(s, to)


def dispatch_hook(op, slots, attrs):
    """registry.dispatch's first step while some thread has autocast enabled."""
    if op.autocast:
        slots = cast_for(op.autocast, slots, op.name)
    c = _profiling.collector[0]
    if c is not None:
        return c.op(op, slots, attrs)
    from ._ops.registry import dispatch
    return dispatch(op, slots, attrs, False)


def run_composite(category: tuple, fn, args: tuple, kwargs: dict):
    """A composite declared with `autocast=`: its tensor arguments cast once, as PyTorch's
    autocast casts the arguments of the ATen op the composite stands for."""
    if active_on_thread():
        vals = cast_for(category, tuple(args) + tuple(kwargs.values()), fn.__name__)
        args, kwargs = vals[:len(args)], dict(zip(kwargs, vals[len(args):]))
    return fn(*args, **kwargs)


def active_on_thread() -> bool:
    return any(_state.enabled.get(d, False) for d in RUNS)


def policy(category):
    """Declare the autocast policy of a public function that is not one registry op (a
    composite such as `F.linear`, a loss written with several ops): a category, or a dict per
    device type (as `defop`'s `autocast=`). Inside autocast its tensor arguments are cast
    once, as PyTorch casts the arguments of the ATen op it stands for. Outside autocast the
    cost is one global check."""
    category = policies(category)  # validated; hashable (IR attributes carry it)
    hook = _profiling.autocast_hook

    def deco(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if hook[0] is None:
                return fn(*args, **kwargs)
            return run_composite(category, fn, args, kwargs)
        run.autocast = category
        run.__signature__ = inspect.signature(fn)  # what binders see (frontend/composite.py)
        return run
    return deco


def cast_call(category, vals: list) -> list:
    """The interpreter's casts for a composite's call node (`script/ir/interpreter.py`)."""
    if not active_on_thread():
        return vals
    return list(cast_for(category, tuple(vals)))


# --- regions inside scripted code (script/frontend/autocast_region.py) ---------------------------
def script_enter(device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled=None) -> None:
    from .amp.autocast_mode import autocast
    ac = autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
    ac.__enter__()
    _state.script_regions.append(ac)


def script_exit() -> None:
    _state.script_regions.pop().__exit__(None, None, None)


script_enter._jitorch_ignore = script_exit._jitorch_ignore = True


def script_depth() -> int:
    return len(_state.script_regions)


def unwind_script_regions(depth: int) -> None:
    """Close the regions a failed interpreted graph left open (innermost first)."""
    regions = _state.script_regions
    while len(regions) > depth:
        regions.pop().__exit__(None, None, None)
