"""Tensors across devices: moving a tensor (`Tensor.to/cuda/cpu`, differentiable), making a
factory's result on its `device=`, and the device step of op dispatch (every tensor operand on
one device, results made and accounted there).

Imported after `_tensor` (it needs the Tensor type); `_device/__init__.py` does not import it.
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
from . import CPU, as_device, backend_of, cuda_backend, get_default_device, mark_placed, \
    placed


def place(t: Tensor, dev) -> Tensor:
    """Tag a freshly made tensor (owned by the caller) with `dev`, moving its data there."""
    if dev is CPU:
        return t
    t._data = backend_of(dev).from_host(t._data, dev.index)
    t._device = dev
    mark_placed()
    return t


def host(t: Tensor):
    """`t`'s values as a host NumPy array (a copy off the CPU; for tools such as gradcheck)."""
    return t._data if t._device is CPU else backend_of(t._device).to_host(t._data)


def move(t: Tensor, dev) -> Tensor:
    """`t` on `dev` (a normalised device): `t` itself when already there, else a copy there
    that autograd tracks (its VJP moves the gradient back)."""
    src = t._device
    if src is dev:
        return t
    from .._ops.conversion import _to_device
    r = _to_device(t, src, dev)
    r._device = dev
    if dev is not CPU:
        mark_placed()
        backend_of(dev).adopt(r._data, dev.index)
    return r


def move_array(arr, src, dst):
    """The `_to_device` op's implementation: an array of device `src` as an array of `dst`."""
    if src is CPU:
        return backend_of(dst).from_host(arr, dst.index)
    if dst is CPU:
        return backend_of(src).to_host(arr)
    return backend_of(dst).copy(arr, dst.index)


def same_device(t: Tensor, like) -> Tensor:
    """Tag `t` (made from data of `like`, a tensor or a device: a detach, a view, a gradient's
    copy) with that device, accounting for its memory there."""
    dev = like if not isinstance(like, Tensor) else like._device
    if dev is not CPU:
        t._device = dev
        backend_of(dev).adopt(t._data, dev.index)
    return t


def constant(arr, dtype=None, dev=None) -> Tensor:
    """A constant tensor (no history) from a host array, on `dev` (None: the default device,
    which is the device an autograd rule runs for): the masks and identities rules build."""
    t = Tensor._make(arr, dtype)
    dev = get_default_device() if dev is None else dev
    return t if dev is CPU else place(t, dev)


def data_copy(t: Tensor, order: str = "K") -> Tensor:
    """A new tensor (no history) holding a copy of `t`'s data on `t`'s device (a fresh .grad)."""
    arr = backend_of(t._device).xp.array(t._data, order=order)
    return same_device(Tensor._make(arr, t._dtype), t)


def grads_device(grads):
    """The device of the first gradient present (autograd nodes: where their rule runs)."""
    return next((g._device for g in grads if g is not None), CPU)


def full(shape, value, dtype, dev) -> Tensor:
    """A new tensor of `value`s made directly on `dev` (autograd's seeds and zero gradients)."""
    xp = backend_of(dev).xp
    if dev is CPU:
        return Tensor._make(xp.full(shape, value, dtype.np), dtype)
    with backend_of(dev).on(dev.index):
        arr = xp.full(shape, value, dtype.np)
    return same_device(Tensor._make(arr, dtype), dev)


def pin(t: Tensor) -> Tensor:
    """`Tensor.pin_memory()`: a copy of a CPU tensor in page-locked host memory (the simulator:
    an ordinary copy, flagged pinned); PyTorch's errors without CUDA or off the CPU."""
    be = cuda_backend()
    if be is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if t._device is not CPU:
        raise RuntimeError(f"cannot pin '{t.type()}' only dense CPU tensors can be pinned")
    if t._pinned:
        return t
    r = t.clone()
    r._data = be.pinned(r._data)
    r._pinned = True
    return r


# --- factories ---------------------------------------------------------------------------------
def check_out_device(out: Tensor, dev) -> None:
    """A factory's `out=` must already live where the result is made."""
    if out._device is not dev:
        raise RuntimeError(f"Expected out tensor to have device {dev}, but got out.device = "
                           f"{out._device} instead")


def target(device, like=None):
    """Where a factory makes its result: `device=` when given, else the tensor `like`'s device
    (the `*_like` factories), else the default device."""
    if device is not None:
        return as_device(device)
    if like is not None:
        return like._device if isinstance(like, Tensor) else CPU
    return get_default_device()


def factory(like: str | None = None, random: bool = False):
    """Decorate a CPU factory to honour `device=`: the result is made on the host and placed on
    the device (the requested one, else `like`'s tensor argument's, else the default device).
    Random factories with no `generator=` draw from the device's default generator."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not placed[0] and kwargs.get("device") is None:
                return fn(*args, **kwargs)  # nothing ever lived off the CPU: no device step
            dev = target(kwargs.pop("device", None),
                         (args[0] if args else kwargs.get(like)) if like else None)
            if dev is CPU:
                return fn(*args, **kwargs)
            if random and kwargs.get("generator") is None:
                from ..cuda.random import default_generator
                kwargs["generator"] = default_generator(dev.index)
            out = kwargs.get("out")
            if out is not None:
                check_out_device(out, dev)
            t = fn(*args, **kwargs)
            if t is out:
                return t
            if any(t is a for a in args):  # as_tensor/asarray returned their argument
                return move(t, dev)
            return place(t, dev)
        return wrapper
    return deco


# --- the device step of dispatch -------------------------------------------------------------------
def common_device(slots):
    """The one device of an op's tensor operands (None: the CPU). As PyTorch's TensorIterator:
    the common device is the first one off the CPU, 0-dim CPU tensors mix with it, and any other
    tensor elsewhere raises PyTorch's RuntimeError naming the common device first."""
    common = None
    tensors = []
    for s in slots:
        for t in (s if isinstance(s, (list, tuple)) else (s,)):
            if isinstance(t, Tensor):
                tensors.append(t)
                if common is None and t._device is not CPU:
                    common = t._device
    if common is None:
        return None
    for t in tensors:
        d = t._device
        if d is not common and not (d is CPU and t._data.ndim == 0):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {common} and {d}!")
    return common


def lift_scalars(slots, dev):
    """`slots` with each 0-dim CPU tensor moved to `dev` (differentiably: a gradient flows back
    to the CPU scalar), so the op's implementation sees arrays of one device."""
    out = []
    for s in slots:
        if isinstance(s, Tensor) and s._device is CPU:
            s = move(s, dev)
        elif isinstance(s, (list, tuple)) and any(
                isinstance(t, Tensor) and t._device is CPU for t in s):
            s = type(s)(move(t, dev) if isinstance(t, Tensor) else t for t in s)
        out.append(s)
    return tuple(out)


class OnDevice:
    """dispatch's `_profile` value for a call past the device step: falsy (the profiler and
    autocast have seen the call already), carrying the device its results are made on (None:
    an op that places its own result, `_to_device`)."""

    __slots__ = ("dev",)

    def __init__(self, dev):
        self.dev = dev

    def __bool__(self):
        return False


_MOVING = OnDevice(None)


def dispatch_on(dispatch, op, slots: tuple, attrs: dict, dev):
    """Run an op whose operands live on `dev` (not the CPU) through `dispatch`: its
    implementation runs on the device's arrays (its backend's namespace), and its results are
    made there (dispatch tags them before autograd records them)."""
    if op.extra.get("transfer"):
        return dispatch(op, slots, attrs, _MOVING)
    cant = op.extra.get("no_device")
    if cant:
        raise NotImplementedError(f"{op.name}: not implemented on device '{dev}' ({cant})")
    return dispatch(op, lift_scalars(slots, dev), attrs, OnDevice(dev))


def tag(outs, dev):
    """Mark an op's results as living on `dev` and account for their memory there."""
    if isinstance(outs, Tensor):
        outs._device = dev
        backend_of(dev).adopt(outs._data, dev.index)
    elif isinstance(outs, (tuple, list)):
        for o in outs:
            tag(o, dev)
    return outs
