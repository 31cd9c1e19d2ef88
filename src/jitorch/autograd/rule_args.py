"""The arguments a VJP/JVP rule asked for by its parameter names (see `_ops/registry.py`).

Shared by reverse mode (what a node saves) and forward mode (what a JVP receives), so both read
a rule's parameters the same way: a tensor slot, `result`, an attribute, `<slot>_shape`,
`<slot>_dtype`, and (forward mode only) `t_<slot>` tangents.
"""
from __future__ import annotations

from .._tensor import Tensor


def rule_kwargs(op, params, slots, attrs, outs, tangent=None) -> dict:
    kwargs = {}
    slot_of = None
    for kind, name in params:
        if kind == "attr":  # the common case first (add's alpha): no slot map needed
            kwargs[name] = attrs[name]
            continue
        if slot_of is None:
            slot_of = dict(zip(op.tensors, slots))
        if kind == "slot":
            kwargs[name] = slot_of[name]
        elif kind == "result":
            kwargs[name] = outs
        elif kind == "shape":
            v = slot_of[name]
            # a list slot (cat's `tensors`) gives one shape per tensor; a number has shape ()
            kwargs[name + "_shape"] = (tuple(t._data.shape for t in v) if name in op.lists
                                       else v._data.shape if isinstance(v, Tensor) else ())
        elif kind == "dtype":
            kwargs[name + "_dtype"] = slot_of[name]._dtype
        elif kind == "tangent":
            s = slot_of[name]
            if name in op.lists:
                kwargs["t_" + name] = [tangent(x) for x in s]
            else:
                # a Python number operand is a constant: tangent 0; an absent optional one: None
                kwargs["t_" + name] = (tangent(s) if isinstance(s, Tensor)
                                       else None if s is None else 0.0)
    return kwargs
