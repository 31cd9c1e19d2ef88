"""`jitorch.func.vmap`: map a function over a batch dim by running it once on batched tensors.

Owns the batched tensor (`BatchedTensor`), the vmap dispatch mode and the `vmap` wrapper
(in_dims/out_dims over nests, chunk_size, nesting). How each op runs batched is not here: it is
the op's batching rule (`_ops/batching.py`, named by the op's registry declaration).

Design (no functorch-style wrapper dispatch): a `BatchedTensor` is a Tensor whose *physical*
value `_phys` carries the vmap level's batch dim at position 0 and whose `_data` is a read-only
view of one sample, so shape, dtype and ndim reads (and the autograd metadata built from them)
are the *logical* ones the function expects. While `func` runs, a registry dispatch mode
(`_VmapMode`, one per level) receives every op call; calls that touch a tensor of its level run
through the op's batching rule on the physical tensors (with the mode popped, so an outer vmap
or the eager tape sees them), and the results are wrapped again. The mode then records autograd
and forward-AD for the *logical* op, so transforms applied inside vmap (`vmap(grad(f))`:
per-sample gradients) differentiate per sample, while the physical ops still reach any tape or
dual level outside vmap (`grad(lambda x: vmap(f)(x).sum())`).
"""
from __future__ import annotations

import functools

import numpy as np

from .._ops import batching, registry
from .._tensor import Tensor
from ..autograd import grad_mode, inplace
from ..autograd.forward_ad import propagate
from ..autograd.graph import record
from ._pytree import Spec, tree_flatten, tree_unflatten

__all__ = ["vmap", "BatchedTensor"]


class BatchedTensor(Tensor):
    """A tensor inside vmap: logical shape `self.shape`; `_phys` holds every sample (batch dim
    0) and `_vlevel` is the vmap level it belongs to."""

    def __repr__(self, *, tensor_contents=None):
        return f"BatchedTensor(lvl={self._vlevel}, bdim=0, value=\n{self._phys!r}\n)"

    __str__ = __repr__

    def _refuse(self, what):
        raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor. We don't "
                           f"support vmap over calling {what} on a Tensor, please try to "
                           "rewrite what you're doing with other operations.")

    def item(self):
        self._refuse(".item()")

    def tolist(self):
        self._refuse(".tolist()")

    def numpy(self, *, force=False):
        self._refuse(".numpy()")

    def __array__(self, dtype=None, copy=None):
        self._refuse("__array__")

    def _control_flow(self):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some "
                           "data-dependent control flow. We don't support that yet, please "
                           "rewrite it with tensor ops (e.g. jitorch.where).")

    def __bool__(self):
        self._control_flow()

    def __float__(self):
        self._control_flow()

    def __int__(self):
        self._control_flow()

    def __index__(self):
        self._control_flow()

    __hash__ = Tensor.__hash__

    def detach(self):
        return _make_batched(self._phys.detach(), self._vlevel)

    @property
    def data(self):
        return _make_batched(self._phys.data, self._vlevel)

    # the in-place writes that are not registry ops (Tensor.copy_/fill_ write `_data`): here
    # they write the physical tensor, with the logical history as Tensor.copy_ keeps it
    def copy_(self, src, non_blocking=False):
        from .._ops.conversion import _expand_copy, _mul_zero
        if not isinstance(src, Tensor):
            src = Tensor._make(np.asarray(src))
        inplace.check_inplace_allowed(self)
        r = _expand_copy(src, tuple(self.shape), self._dtype)  # batched when src is
        write_into(self, r, "copy")
        if grad_mode._state.enabled and r._requires_grad:
            inplace.rebase_history(self, r)
        elif grad_mode._state.enabled and self._requires_grad and self._grad_fn is not None:
            inplace.rebase_history(self, _mul_zero(self))  # overwritten by a constant
        return self

    def fill_(self, value):
        if isinstance(value, Tensor) and value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        if not isinstance(value, Tensor):
            from .._creation import full
            value = full((), value, dtype=self._dtype)
        return self.copy_(value)

    def zero_(self):
        return self.fill_(0)


def _make_batched(phys: Tensor, level: int) -> BatchedTensor:
    t = object.__new__(BatchedTensor)
    t._phys = phys
    t._vlevel = level
    d = phys._data
    sample = d[0, ...] if d.shape[0] else np.empty(d.shape[1:], d.dtype)
    sample = sample.view()
    sample.flags.writeable = False  # writes go to `_phys` (write_into), never to one sample
    t._data = sample
    t._dtype = phys._dtype
    t._version = phys._version
    return t


def _level_of(x) -> int:
    return x._vlevel if type(x) is BatchedTensor else 0


def write_into(self, r, name):
    """`self.op_(...)` under vmap (called by `autograd.inplace.write_result` once the logical
    shapes and dtypes are checked): the write goes to the physical tensor, and a batched result
    cannot be written into a tensor without that batch."""
    if getattr(self, "_vview", False) and grad_mode._state.enabled and (
            r._requires_grad or self._requires_grad):
        # the history of the view's base would have to be rebased through a batched
        # copy_slices (autograd/inplace.py): not there yet, and wrong gradients are worse
        raise NotImplementedError(f"vmap: {name}_ into a view of a batched tensor is not "
                                  "differentiable under vmap in jitorch yet; write out of "
                                  "place (cat, where, index_put) or clone the view first")
    level = max(_level_of(self), _level_of(r))
    if _level_of(self) < level:
        raise RuntimeError(f"vmap: {name}_(self, *extra_args) is not possible because there "
                           "exists a Tensor `other` in extra_args that has more elements than "
                           "`self`. This happened due to `other` being vmapped over but `self` "
                           "not being vmapped over in a vmap. Please try to use out-of-place "
                           f"operators instead of {name}_.")
    src = r._phys if _level_of(r) == level else r.unsqueeze(0).expand(self._phys.shape)
    inplace.write_result(self._phys, src, name)


# ----------------------------------------------------------------------------- the mode
class _VmapMode:
    """The dispatch mode of one vmap level (see the module docstring)."""

    # a @script function called under vmap runs its Python body (compiled code would read the
    # BatchedTensor's one-sample `_data`): script/runtime/functions.py reads this
    eager_calls = True

    def __init__(self, level, size, randomness):
        self.level, self.size, self.randomness = level, size, randomness

    # the interface batching rules use
    def batched(self, x) -> bool:
        return type(x) is BatchedTensor and x._vlevel == self.level

    def phys(self, x):
        return x._phys if self.batched(x) else x

    @staticmethod
    def ldim(x) -> int:
        return x._data.ndim

    def random_op(self, fname):
        if self.randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")

    def _flat_slots(self, op, slots):
        for name, s in zip(op.tensors, slots):
            if name in op.lists:
                yield from s
            else:
                yield s

    def _touches(self, op, slots, attrs) -> bool:
        return (any(self.batched(s) for s in self._flat_slots(op, slots))
                or any(self.batched(v) for v in attrs.values()))

    def _batched_tangent(self, op, slots) -> bool:
        """A dual whose tangent carries this level's batch (jacfwd's basis under vmap): its
        forward AD belongs to this level, whatever its primal."""
        return any(isinstance(s, Tensor) and self.batched(s._tangent)
                   for s in self._flat_slots(op, slots))

    def __call__(self, op, slots, attrs):
        touched = self._touches(op, slots, attrs)
        tangent = grad_mode._fwd_level[0] and self._batched_tangent(op, slots)
        if not touched and not tangent:  # not this level's business
            return self._below(registry.dispatch, op, slots, attrs)
        rule = None
        if touched:
            rule = batching.rule_for(op)
            if rule is None:
                raise NotImplementedError(f"vmap: no batching rule for '{op.name}'")
        level = grad_mode._fwd_level[0]
        if tangent:  # the physical run must not push this level's tangents through eager ops
            grad_mode._fwd_level[0] = 0
        try:
            if rule is not None:
                res = self._below(rule, self, op, slots, attrs)
            else:  # an unbatched primal: computed below, its tangent here
                res = self._below(registry.dispatch, op, slots, attrs)
        finally:
            grad_mode._fwd_level[0] = level
        if rule is not None and rule.unbatched:
            return res
        outs = batching._map_outputs(res, lambda r: _make_batched(r, self.level)) \
            if touched else res
        if touched and op.view:  # a view of a batched tensor (write_into checks in-place use)
            for o in (outs if isinstance(outs, (tuple, list)) else (outs,)):
                if type(o) is BatchedTensor and o._phys._base is not None:
                    o._vview = True
        if not op.nondiff:  # the logical op's autograd and forward AD (see the docstring)
            if touched and grad_mode._state.enabled and op.vjp is not None:
                record(op, slots, attrs, outs)
            if grad_mode._fwd_level[0] and op.jvp is not None:
                propagate(op, slots, attrs, outs)
        return outs

    def _below(self, fn, *args):
        """Run `fn` with this mode (and any inside it) popped: ops reach the enclosing level."""
        stack = registry._mode_state.stack
        registry._mode_state.stack = stack[:stack.index(self)]
        try:
            return fn(*args)
        finally:
            registry._mode_state.stack = stack


def _depth() -> int:
    return sum(1 for m in registry._mode_state.stack if isinstance(m, _VmapMode))


# ----------------------------------------------------------------------------- vmap
def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _broadcast_prefix(dims, spec: Spec):
    """`dims` (an int/None, or a nest that is a prefix of `spec`) -> one entry per leaf, or None
    when the structures do not match."""
    if dims is None or isinstance(dims, int):
        return [dims] * spec.num_leaves
    if spec.kind == "leaf":
        return [dims]  # a non-int entry for a leaf: reported by the caller
    if isinstance(dims, dict) and spec.kind == "dict":
        if set(dims) != set(spec.meta):
            return None
        parts = [_broadcast_prefix(dims[k], c) for k, c in zip(spec.meta, spec.children)]
    elif isinstance(dims, (tuple, list)) and spec.kind in ("tuple", "list", "namedtuple"):
        if len(dims) != len(spec.children):
            return None
        parts = [_broadcast_prefix(d, c) for d, c in zip(dims, spec.children)]
    else:
        return None
    if any(p is None for p in parts):
        return None
    return [x for p in parts for x in p]


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`torch.func.vmap`: `vmap(f)(x)` is `stack([f(x_i) for x_i in x.unbind(in_dim)],
    out_dim)`, computed by running `f` once on batched tensors. Supported: in_dims/out_dims as
    ints, None or nests matching the arguments/outputs, nesting, chunk_size, composition with
    grad/vjp/jacrev/jvp, randomness='error'."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if randomness != "error":
        raise NotImplementedError(f"jitorch.func.vmap: randomness='{randomness}' is not "
                                  "implemented (only 'error'); draw the random values outside "
                                  "vmap and pass them in")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        name = _name(func)
        if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected "
                             "`in_dims` to be int or a (potentially nested) tuple matching the "
                             f"structure of inputs, got: {type(in_dims)}.")
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no "
                             "inputs. The latter is unsupported.")
        flat, spec = tree_flatten(args)
        dims = _broadcast_prefix(in_dims, spec)
        if dims is None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             "compatible with the structure of `inputs`. in_dims has structure "
                             f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
        sizes = []
        for x, d in zip(flat, dims):
            if d is None:
                continue
            if isinstance(d, bool) or not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but in_dim must be either an "
                                 "integer dimension or None.")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 "use None as the respective in_dim")
            if not -x.dim() <= d < x.dim():
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                 f"-{x.dim()} <= in_dim < {x.dim()}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(set(sizes)) != 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        size = sizes[0]
        if chunk_size is None or chunk_size >= size:
            return _run(func, name, flat, dims, spec, size, kwargs, out_dims, randomness)
        parts = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            chunk = [x.narrow(d, start, n) if d is not None else x for x, d in zip(flat, dims)]
            parts.append(_run(func, name, chunk, dims, spec, n, kwargs, out_dims, randomness))
        return _concat_chunks(parts, out_dims)

    return wrapped


def _run(func, name, flat, dims, spec, size, kwargs, out_dims, randomness):
    level = _depth() + 1
    mode = _VmapMode(level, size, randomness)
    inputs = [x if d is None else _make_batched(x.movedim(d, 0), level)
              for x, d in zip(flat, dims)]
    registry.push_mode(mode)
    try:
        out = func(*tree_unflatten(inputs, spec), **kwargs)
    finally:
        registry.pop_mode()
    return _unbatch(out, out_dims, mode, name)


def _unbatch(out, out_dims, mode, name):
    flat, spec = tree_flatten(out)
    if out_dims is not None and not isinstance(out_dims, (int, tuple, list, dict)):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         "None or a python collection of ints representing where in the "
                         "outputs the vmapped dimension should appear.")
    dims = _broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    res = []
    for o, d in zip(flat, dims):
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(o)}. Did you mean to set out_dims= to None for output?")
        if d is None:
            if mode.batched(o):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            res.append(o)
            continue
        p = o._phys if mode.batched(o) else o.unsqueeze(0).expand((mode.size,) + tuple(o.shape))
        nd = p.dim()
        if isinstance(d, bool) or not isinstance(d, int) or not -nd <= d < nd:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an "
                             "int, None or a python collection of ints representing where in "
                             "the outputs the vmapped dimension should appear.")
        res.append(p.movedim(0, d) if d % nd else p)
    return tree_unflatten(res, spec)


def _concat_chunks(parts, out_dims):
    from .._ops import cat
    flats = [tree_flatten(p)[0] for p in parts]
    spec = tree_flatten(parts[0])[1]
    dims = _broadcast_prefix(out_dims, spec)
    res = [f[0] if d is None else cat(list(f), dim=d) for d, f in zip(dims, zip(*flats))]
    return tree_unflatten(res, spec)
