"""The IR: SSA values, nodes, closed blocks, graphs, and their types.

Owns the data structures every frontend produces and every pass and backend reads.

- A `Value` is defined once (by a node output or a block parameter) and has a `Type`.
- A `Node` has an `op` name, `inputs` (Values), `outputs` (Values), optional sub-`blocks`, a
  `loc` (user's file/line/col) and `attrs` (plain data the op needs that is not a runtime value,
  e.g. the literal of a `prim::Constant` or the op list of a `fused` group).
- Op names: a registry op's public/internal name (`add`, `sum`, `_getitem`, ...) whose inputs are
  ALL of the op implementation's parameters in signature order (tensor slots, then attributes;
  constants come from `prim::Constant` nodes, a list slot from `prim::ListConstruct`); or a
  `prim::*` structural op (see PRIM_OPS).
- A `Block` is closed: it reads nothing from outside except through its `params`; what it gives
  back is `returns`. `prim::If` has two blocks (then, else) with no params, taking its
  condition as input 0 and every value the blocks read as the following inputs, in the order
  of the blocks' params... To keep blocks closed, `prim::If` inputs are
  `(cond, *captured)` and both blocks take `captured` as params; outputs are the blocks' returns.
  `prim::Loop` inputs are `(trip_count, init_cond, *carried_init, *captured)`; its one block
  takes `(i, *carried, *captured)` and returns `(cond, *carried_next)`; outputs are the final
  carried values (TorchScript's prim::Loop, with explicit captures).
- Types: `TensorType(dtype, shape)` where shape is a tuple of ints/None (None = unknown size,
  the rank is always known) or None for unknown rank; scalar and container types below.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ... import _dtype as dt

# --- types -------------------------------------------------------------------------------------


class Type:
    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items(), key=str))))

    def __repr__(self):
        return str(self)


DEVICE_TYPES = ("cpu", "cuda")  # what TensorType.device may name (before an optional ":index")


class TensorType(Type):
    """A tensor of one dtype (None: unknown) and rank; sizes are ints or None (symbolic); the
    device it lives on ("cpu", the default, or "cuda[:index]"), which picks the code generator.
    Printed `f32[?,8]`, and `f32[?,8]@cuda` off the CPU (so CPU IR text never mentions it)."""

    def __init__(self, dtype: dt.dtype | None = None, shape: tuple | None = None,
                 device: str = "cpu", requires_grad: bool | None = None):
        self.dtype = dtype
        self.shape = None if shape is None else tuple(shape)
        self.device = device
        self.requires_grad = requires_grad

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    def __str__(self):
        d = DTYPE_SHORT.get(self.dtype, "Tensor") if self.dtype is not None else "Tensor"
        if self.shape is not None:
            d += "[" + ",".join("?" if s is None else str(s) for s in self.shape) + "]"
        return d if self.device == "cpu" else f"{d}@{self.device}"


class _Scalar(Type):
    name = "?"

    def __str__(self):
        return self.name


class IntType(_Scalar):
    name = "int"


class FloatType(_Scalar):
    name = "float"


class BoolType(_Scalar):
    name = "bool"


class StrType(_Scalar):
    name = "str"


class NoneType(_Scalar):
    name = "None"


class DeviceType(_Scalar):
    name = "Device"


class DTypeType(_Scalar):
    name = "ScalarType"


class AnyType(_Scalar):
    """An opaque Python value (e.g. the result of an @ignore'd function, or a static attr)."""
    name = "Any"


class TupleType(Type):
    def __init__(self, elems):
        self.elems = tuple(elems)

    def __str__(self):
        return "Tuple[" + ", ".join(map(str, self.elems)) + "]"


class ListType(Type):
    def __init__(self, elem):
        self.elem = elem

    def __str__(self):
        return f"List[{self.elem}]"


class DictType(Type):
    def __init__(self, key, value):
        self.key, self.value = key, value

    def __str__(self):
        return f"Dict[{self.key}, {self.value}]"


class OptionalType(Type):
    def __init__(self, elem):
        self.elem = elem

    def __str__(self):
        return f"Optional[{self.elem}]"


class ClassType(Type):
    def __init__(self, name: str):
        self.name = name

    def __str__(self):
        return f"__torch__.{self.name}"


INT, FLOAT, BOOL, STR, NONE, ANY = IntType(), FloatType(), BoolType(), StrType(), NoneType(), \
    AnyType()
DEVICE, DTYPE = DeviceType(), DTypeType()

DTYPE_SHORT = {dt.bool: "b8", dt.uint8: "u8", dt.int8: "i8", dt.int16: "i16", dt.int32: "i32",
               dt.int64: "i64", dt.float16: "f16", dt.bfloat16: "bf16", dt.float32: "f32",
               dt.float64: "f64", dt.complex64: "c64", dt.complex128: "c128"}
SHORT_DTYPE = {v: k for k, v in DTYPE_SHORT.items()}


# --- values, nodes, blocks, graphs -------------------------------------------------------------
@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    col: int
    text: str = ""  # the source line, for carets in errors

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}"


_ids = itertools.count()


class Value:
    """An SSA value. `name` is a readable hint; printing assigns unique names."""

    __slots__ = ("type", "name", "node", "uid")

    def __init__(self, type: Type, name: str | None = None, node: "Node | None" = None):
        self.type = type
        self.name = name
        self.node = node  # the defining node, None for block params
        self.uid = next(_ids)

    def __repr__(self):
        return f"%{self.name or self.uid}: {self.type}"


class Node:
    __slots__ = ("op", "inputs", "outputs", "blocks", "attrs", "loc")

    def __init__(self, op: str, inputs=(), output_types=(), attrs=None, blocks=(), loc=None):
        self.op = op
        self.inputs = list(inputs)
        self.outputs = [Value(t, node=self) for t in output_types]
        self.blocks = list(blocks)
        self.attrs = dict(attrs or {})
        self.loc = loc

    @property
    def output(self) -> Value:
        assert len(self.outputs) == 1, f"{self.op} has {len(self.outputs)} outputs"
        return self.outputs[0]

    def __repr__(self):
        return f"<Node {self.op}>"


class Block:
    __slots__ = ("params", "nodes", "returns")

    def __init__(self, params=(), nodes=(), returns=()):
        self.params = list(params)
        self.nodes = list(nodes)
        self.returns = list(returns)


class Graph:
    """A function: a name and a top-level block whose params are the inputs."""

    def __init__(self, name: str, block: Block | None = None):
        self.name = name
        self.block = block or Block()
        # what the target it is compiled for lowers (passes/capabilities.py): set by the
        # runtime before the pipeline, read by fusion; None for a graph not being compiled
        self.capabilities = None

    @property
    def inputs(self):
        return self.block.params

    @property
    def outputs(self):
        return self.block.returns

    def nodes(self):
        """Every node, depth first (sub-block nodes after their owner)."""
        def walk(block):
            for n in block.nodes:
                yield n
                for b in n.blocks:
                    yield from walk(b)
        return walk(self.block)

    def __str__(self):
        from .printer import print_graph
        return print_graph(self)


PRIM_OPS = {
    "prim::Constant",        # attrs: value (int/float/bool/str/None/dtype/device/tuple)
    "prim::If",              # (cond, *captured) -> outputs; blocks: then, else
    "prim::Loop",            # (trip, cond, *carried, *captured) -> carried; block: body
    "prim::TupleConstruct", "prim::TupleUnpack", "prim::TupleIndex",
    "prim::ListConstruct", "prim::ListUnpack", "prim::DictConstruct",
    "prim::GetAttr",         # (obj) attrs: name
    "prim::CallFunction",    # attrs: fn (a Graph), inputs -> outputs (inlined by the inliner)
    "prim::PythonOp",        # attrs: fn (a Python callable, takes the GIL), inputs -> outputs
    "prim::Raise",           # attrs: exc (type name), message parts as inputs
    "prim::Assert",          # (cond, message)
    "prim::Print",
    "prim::ScalarOp",        # attrs: fn (operator name: add/sub/mul/.../lt/not), on numbers
    "prim::TensorToScalar",  # Tensor -> number (item()), attrs: type
    "prim::Fused",           # attrs: ops (a sub-Block of elementwise nodes), from the fuser
}
