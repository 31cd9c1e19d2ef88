"""CPU lowering of `List[Tensor]` arguments: the optimizer-step shape
`for i in range(len(params)): params[i].add_(...)`.

A `List[Tensor]` input whose elements share one dtype and rank arrives as a Python tuple of
C-contiguous arrays (runtime.py `_to_numpy`): Numba types it as a UniTuple, which is cheap to
unbox (measured: ~0.65 us per array, against ~9 us per array to build a `numba.typed.List` and a
deprecated reflected list) and which generated code may index with a run-time int (the program copies it into a native list first: `unpack_input`). The program specialises on the tuple's LENGTH (Numba
compiles one machine-code version per length): a param group's size is fixed, so an optimizer
compiles once per group. Lists whose elements differ in rank are not lowered (a tuple indexed
at run time needs one element type); `optim.CompiledStep` splits such groups by rank.

Writes: frontend_alias expresses `params[i].add_(g)` functionally, as
`list_setitem(lst, i, _index_write(lst[i], new))`. Here that becomes a write INTO the
argument's array (`lst[i][...] = new`) and the list value stays the same tuple, so the update
reaches the caller's tensor without any write-back copy (the runtime's write-back sees the same
arrays and skips them; a non-contiguous argument was passed as a copy and is written back).
That is only correct when no value still standing for the element's OLD contents is read after
the write: `check_inplace_lists` proves it (a flow-sensitive walk, loop bodies walked twice)
before anything is emitted, and raises NotLowered otherwise (the interpreter then runs it).
"""
from __future__ import annotations

from .. import ir
from . import NotLowered

# ops whose result may share the input's memory in generated code
_VIEWS = frozenset({"_index_view", "select", "view", "reshape", "transpose", "permute", "t",
                    "expand", "narrow", "unsqueeze", "squeeze", "flatten", "contiguous",
                    "view_as", "reshape_as", "expand_as", "broadcast_to", "ravel", "_index_write"})


def is_tensor_list(t) -> bool:
    return isinstance(t, ir.ListType) and isinstance(t.elem, ir.TensorType)


def is_setitem(n: ir.Node) -> bool:
    return n.op == "prim::PythonOp" and n.attrs.get("name") == "list_setitem" and \
        is_tensor_list(n.inputs[0].type)


def check_input(em, i: int, p: ir.Value) -> None:
    """A List[Tensor] input: one known dtype and rank for every element."""
    from .cpu import SUPPORTED
    el = p.type.elem
    if el.dtype is None or el.ndim is None:
        raise NotLowered(f"input {i} of type {p.type}: elements differ in dtype or rank")
    if el.dtype not in SUPPORTED:
        raise NotLowered(f"dtype {el.dtype} is not lowered on CPU yet")


def unpack_input(em, tup: str, name: str) -> None:
    """The tuple argument as a native (non-reflected) list: indexing a UniTuple with a run-time
    int compiles to a switch over its length at every access (minutes of LLVM time for 50
    elements); a list built once is indexed in O(1), bounds-checked."""
    em.emit(f"{name} = [_e for _e in {tup}]")


def getitem(em, n: ir.Node) -> bool:
    """`lst[i]` of a run-time tensor list (Numba checks the index)."""
    lst, idx = n.inputs
    if not is_tensor_list(lst.type) or lst.uid not in em.names:
        return False
    if not isinstance(idx.type, (ir.IntType, ir.BoolType)) and not em.is_const(idx):
        raise NotLowered(f"list index of type {idx.type}")
    out = em.fresh("e")
    em.emit(f"{out} = {em.name(lst)}[{em.name(idx)}]")
    em.bind(n.output, out)
    return True


def length(em, n: ir.Node) -> bool:
    lst = n.inputs[0]
    if not is_tensor_list(lst.type) or lst.uid not in em.names:
        return False
    out = em.fresh("s")
    em.emit(f"{out} = len({em.name(lst)})")
    em.bind(n.output, out)
    return True


def setitem(em, n: ir.Node) -> None:
    """`lst[i] = x` as a write into the element's array (see the module docstring)."""
    lst, idx, x = n.inputs
    if lst.uid not in em.names or not isinstance(x.type, ir.TensorType):
        raise NotLowered("list_setitem of a list that is not an argument")
    xt, et = em.tensor(x), lst.type.elem
    if xt.dtype is not et.dtype or xt.ndim != et.ndim:
        raise NotLowered(f"list_setitem of {xt} into List[{et}]")
    d = em.fresh("d")
    em.emit(f"{d} = {em.name(lst)}[{em.name(idx)}]")
    xs = em.name(x)
    em.emit(f"if {d}.shape != {xs}.shape:")
    em.indent += 1
    em.raise_("RuntimeError", "list element write: the value's size does not match the element")
    em.indent -= 1
    em.emit(f"if {d}.ctypes.data != {xs}.ctypes.data:")
    em.indent += 1
    em.emit(f"{d}[...] = {xs}")
    em.indent -= 1
    em.bind(n.output, em.name(lst))


def python_op(em, n: ir.Node) -> None:
    if is_setitem(n):
        setitem(em, n)
        return
    raise NotLowered(f"prim::PythonOp {n.attrs.get('name')!r} (a Python call)")


# --- the in-place safety proof -------------------------------------------------------------------

class _Walk:
    """Tracks, along program order, which values hold a tensor-list element (and of which root
    list argument), and which became stale: values standing for an element's contents before
    a write to that list. Reading a stale value means the in-place lowering would be wrong."""

    def __init__(self):
        self.roots: dict = {}   # uid -> frozenset of root list uids (lists and their elements)
        self.elems: set = set()  # uids of element values (not the list values themselves)
        self.stale: set = set()
        self.ok = True

    def r(self, v) -> frozenset:
        return self.roots.get(v.uid, frozenset())

    def use(self, v) -> None:
        if v.uid in self.stale:
            self.ok = False

    def block(self, b: ir.Block, args) -> None:
        for p, a in zip(b.params, args):
            if a is not None and a.uid in self.roots:
                self.roots[p.uid] = self.roots[a.uid]
                if a.uid in self.elems:
                    self.elems.add(p.uid)
            if a is not None:  # a param stands for what it is bound to, this time round
                if a.uid in self.stale:
                    self.stale.add(p.uid)
                else:
                    self.stale.discard(p.uid)
        for n in b.nodes:
            self.node(n)
        for v in b.returns:
            self.use(v)

    def _merge_out(self, o, rets) -> None:
        rs = frozenset().union(*[self.r(v) for v in rets]) if rets else frozenset()
        if rs:
            self.roots[o.uid] = rs
            if any(v.uid in self.elems for v in rets):
                self.elems.add(o.uid)

    def node(self, n: ir.Node) -> None:
        op = n.op
        if op == "prim::If":
            self.use(n.inputs[0])
            before = set(self.stale)
            ends = []
            for b in n.blocks:
                self.stale = set(before)
                self.block(b, n.inputs[1:])
                ends.append((set(self.stale), b.returns))
            self.stale = set().union(*[s for s, _ in ends]) if ends else before
            for k, o in enumerate(n.outputs):
                self.stale.discard(o.uid)
                self._merge_out(o, [rets[k] for _, rets in ends])
                if any(rets[k].uid in s for s, rets in ends):
                    self.stale.add(o.uid)
            return
        if op == "prim::Loop":
            nc = len(n.outputs)
            for v in n.inputs[:2]:
                self.use(v)
            body = n.blocks[0]
            init = list(n.inputs[2:2 + nc])
            captured = list(n.inputs[2 + nc:])
            for v in init + captured:
                self.use(v)
            carried = init
            for _ in range(2):  # the second pass sees what the first iteration made stale
                self.block(body, [None] + carried + captured)
                carried = list(body.returns[1:])
            for o, i0, rv in zip(n.outputs, init, body.returns[1:]):
                self.stale.discard(o.uid)
                self._merge_out(o, [i0, rv])
                if rv.uid in self.stale:
                    self.stale.add(o.uid)
            return
        for v in n.inputs:  # (prim::Fused and the like read only their inputs)
            self.use(v)
        for o in n.outputs:  # a fresh definition (a loop body's second pass redefines)
            self.stale.discard(o.uid)
        if op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem" and \
                is_tensor_list(n.inputs[0].type) and n.inputs[0].uid in self.roots:
            self.roots[n.output.uid] = self.roots[n.inputs[0].uid]
            self.elems.add(n.output.uid)
        elif is_setitem(n):
            written = self.r(n.inputs[0])
            # every element value and old list value of the written root is now stale
            for uid, rs in self.roots.items():
                if rs & written:
                    self.stale.add(uid)
            self.roots[n.output.uid] = written
            self.stale.discard(n.output.uid)
        elif op in _VIEWS or op == "prim::Fused":
            rs = frozenset().union(*[self.r(v) for v in n.inputs if v.uid in self.elems])
            if rs and op in _VIEWS:
                for o in n.outputs:
                    self.roots[o.uid] = rs
                    self.elems.add(o.uid)


def check_inplace_lists(graph: ir.Graph) -> None:
    """Raise NotLowered unless every list element write may be done in place (see _Walk)."""
    def has_setitem(b):
        for n in b.nodes:
            if is_setitem(n) or any(has_setitem(x) for x in n.blocks):
                return True
        return False
    if not has_setitem(graph.block):
        return
    w = _Walk()
    for p in graph.inputs:
        if is_tensor_list(p.type):
            w.roots[p.uid] = frozenset([p.uid])
    w.block(graph.block, [None] * len(graph.inputs))
    if not w.ok:
        raise NotLowered("a list element's old value is read after a write to the list")
