"""CPU lowering of `List[Tensor]` arguments: the optimizer-step shape
`for i in range(len(params)): params[i].add_(...)`.

A `List[Tensor]` input whose elements share one dtype and rank arrives as a Python tuple of the
elements' arrays as they are (runtime/functions.py `_boundary`; typed 'C' when every element is
C-contiguous, else 'A'): Numba types it as a UniTuple, which is cheap to
unbox (measured: ~0.65 us per array, against ~9 us per array to build a `numba.typed.List` and a
deprecated reflected list) and which generated code may index with a run-time int (the program
copies it into a native list first: `unpack_input`). The program specialises on the tuple's
LENGTH (Numba compiles one machine-code version per length, and the unpacking's compile time
grows with it): `optim.CompiledStep` always passes chunks of one fixed length of flattened
tensors. Lists whose elements differ in rank are not lowered (a tuple indexed at run time needs
one element type).

Writes: frontend_alias expresses `params[i].add_(g)` functionally, as
`list_setitem(lst, i, _index_write(lst[i], new))`. Here that becomes a write INTO the
argument's array (`lst[i][...] = new`) and the list value stays the same tuple, so the update
reaches the caller's tensor without any write-back copy (the runtime's write-back sees the same
arrays and skips them), through the element's strides. An element that shares memory with
another argument or element, or with itself, never gets here: the program's entry check sends
that call to the in-place interpreter (script/runtime/alias.py).
That is only correct when no value still standing for the element's OLD contents is read after
the write: `check_inplace_lists` proves it (a flow-sensitive walk, loop bodies walked twice)
before anything is emitted, and raises NotLowered otherwise (the interpreter then runs it).
Where the new value is computed by a fused elementwise group, the group's loop stores it
straight into the element (`_plan_block` / `lower_fused_into`, below): no temporary, no copy,
each array read and written once per loop.
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered
from ...codegen import elementwise as ew
from ...codegen.emitter import np_type

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
    el = p.type.elem
    if el.dtype is None or el.ndim is None:
        raise NotLowered(f"input {i} of type {p.type}: elements differ in dtype or rank")
    if el.dtype not in em.capabilities.dtypes:
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
    copy_into(em, d, xs, et.ndim)
    em.indent -= 1
    em.bind(n.output, em.name(lst))


def copy_into(em, dst: str, src: str, rank: int) -> None:
    """`dst[...] = src` for arrays of one shape, as a loop nest: Numba's array-to-array
    `setitem` compiles a generic broadcasting path (measured: ~4 s of compile time each)."""
    if rank == 0:
        em.emit(f"{dst}[()] = {src}[()]")
        return
    idx = [em.fresh("i") for _ in range(rank)]
    for d, i in enumerate(idx):
        em.emit(f"for {i} in range({dst}.shape[{d}]):")
        em.indent += 1
    em.emit(f"{dst}[{', '.join(idx)}] = {src}[{', '.join(idx)}]")
    em.indent -= rank


def copy_into_slice(em, out: str, dim: int, start: str, src: str, rank: int) -> None:
    """`out[..., start:start + src.shape[dim], ...] = src` (the slice along `dim`) by
    `copy_into`: cat's parts and narrow's backward."""
    at = [":"] * rank
    at[dim] = f"{start}:{start} + {src}.shape[{dim}]"
    dst = em.fresh("part")
    em.emit(f"{dst} = {out}[{', '.join(at)}]")
    copy_into(em, dst, src, rank)


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


def check_inplace_lists(graph: ir.Graph, caps) -> bool:
    """Raise NotLowered unless every list element write may be done in place (see _Walk);
    True when the program writes list elements in place (into the caller's arrays)."""
    def has_setitem(b):
        for n in b.nodes:
            if is_setitem(n) or any(has_setitem(x) for x in n.blocks):
                return True
        return False
    if not has_setitem(graph.block):
        return False
    w = _Walk()
    for p in graph.inputs:
        if is_tensor_list(p.type):
            w.roots[p.uid] = frozenset([p.uid])
    w.block(graph.block, [None] * len(graph.inputs))
    if not w.ok:
        raise NotLowered("a list element's old value is read after a write to the list")
    _plan_block(graph.block, w.roots, caps)
    return True


# --- fused loops writing straight into list elements ---------------------------------------------
#
# `exp_avg.copy_(m)` with m computed by a fused group F is, after the frontend,
#     %o = prim::Fused(..., %x, ...)          (%x = lst[i], the element's current value)
#     %w = _index_write(%x, %o, (), check)
#     %l = list_setitem(lst, i, %w)
# Lowered one by one that is a loop into a fresh array, then a copy into the element. When %o
# has %x's dtype and rank, is read by nothing else, and F reads %x itself (so its loop shape is
# the element's shape or an error), F's loop stores %o straight into the element's array and the
# write and setitem become names. Moving the write up to F is safe when nothing between F and
# the setitem reads the list's elements (checked with the walk's roots); inside F each element
# is read before it is written at the same index, and an operand that overlaps the destination
# in any other way is copied first (a run-time check).

class _Direct:
    """One fused group's plan: output index -> (list value, index value, element value)."""

    def __init__(self, fused: ir.Node):
        self.fused = fused
        self.outs: dict = {}      # output position -> (lst, idx, x)
        self.dest: dict = {}      # output position -> destination array name (set when lowered)


def _plan_block(block: ir.Block, roots: dict, caps) -> None:
    for n in block.nodes:
        for b in n.blocks:
            if n.op != "prim::Fused":
                _plan_block(b, roots, caps)
    uses: dict = {}
    for n in block.nodes:
        for v in n.inputs:
            uses.setdefault(v.uid, []).append(n)
    for v in block.returns:
        uses.setdefault(v.uid, []).append(None)
    pos = {id(n): k for k, n in enumerate(block.nodes)}
    from ...passes.fuse import fusible
    for f in block.nodes:
        if "lower" in f.attrs:
            continue
        if f.op == "prim::Fused":
            body = f.blocks[0]
            if f.attrs.get("kind") == "rows" or not body.nodes or \
                    body.nodes[-1].op in ("sum", "mean", "amax", "amin"):
                continue
        elif not fusible(f, caps):  # a lone elementwise op is a group of one (`x.mul_(a)`)
            continue
        plan = _Direct(f)
        seen_roots: set = set()
        pairs = []
        for j, o in enumerate(f.outputs):
            u = uses.get(o.uid, [])
            if len(u) != 1 or u[0] is None or u[0].op != "_index_write" or \
                    u[0].inputs[1] is not o:
                continue
            wn = u[0]
            x = wn.inputs[0]
            basic = wn.inputs[2].node
            if basic is None or basic.op != "prim::Constant" or basic.attrs.get("value") != ():
                continue
            su = uses.get(wn.outputs[0].uid, [])
            if len(su) != 1 or su[0] is None or not is_setitem(su[0]) or \
                    su[0].inputs[2] is not wn.outputs[0]:
                continue
            sn = su[0]
            lst, idx = sn.inputs[0], sn.inputs[1]
            xn = x.node
            if xn is None or xn.op != "prim::ScalarOp" or xn.attrs.get("fn") != "getitem" or \
                    xn.inputs[0] is not lst or xn.inputs[1] is not idx:
                continue
            if not any(v is x for v in f.inputs):
                continue
            ot, xt = o.type, x.type
            if not isinstance(ot, ir.TensorType) or not isinstance(xt, ir.TensorType) or \
                    ot.dtype is None or ot.dtype is not xt.dtype or ot.ndim != xt.ndim:
                continue
            r = roots.get(lst.uid, frozenset())
            if not r or r & seen_roots:
                continue
            seen_roots |= r
            pairs.append((j, wn, sn, lst, idx, x, r))
        if not pairs:
            continue
        mine = {id(wn) for _, wn, _, _, _, _, _ in pairs} | \
            {id(sn) for _, _, sn, _, _, _, _ in pairs}
        for j, wn, sn, lst, idx, x, r in pairs:
            if pos.get(id(wn), -1) < pos[id(f)] or pos.get(id(sn), -1) < pos[id(wn)]:
                continue
            between = block.nodes[pos[id(f)] + 1:pos[id(sn)]]
            if any(id(n) not in mine and any(roots.get(v.uid, frozenset()) & r
                                             for v in n.inputs) for n in between):
                continue
            plan.outs[j] = (lst, idx, x)
            wn.attrs["lower"] = _lower_write_of(plan, j)
            sn.attrs["lower"] = _lower_setitem_of(plan, j)
        if plan.outs:
            f.attrs["lower"] = _lower_fused_of(plan)


def _lower_fused_of(plan: _Direct):
    def lower(em, n):
        if n.op != "prim::Fused":
            n = _as_group(n)
        lower_fused_into(em, n, plan)
    return lower


def _as_group(n: ir.Node) -> ir.Node:
    """A lone elementwise op as a prim::Fused node of one member (as lower_single sees it)."""
    block, ext = ew.one_member_block(n)
    g = ir.Node("prim::Fused", (), (), blocks=[block])
    g.inputs, g.outputs = ext, list(n.outputs)
    return g


def _lower_write_of(plan: _Direct, j: int):
    def lower(em, n):
        if j in plan.dest:
            em.bind(n.outputs[0], plan.dest[j])
        else:
            from .lower_write import lower_index_write
            lower_index_write(em, n)
    return lower


def _lower_setitem_of(plan: _Direct, j: int):
    def lower(em, n):
        if j in plan.dest:
            em.bind(n.output, em.name(n.inputs[0]))
        else:
            setitem(em, n)
    return lower


_CLASH = '''
@numba.njit(nogil=True, cache=False)
def _jt_clash(x, d):
    """Does x share bytes with the C-contiguous d, other than as d itself?"""
    if x.size == 0 or d.size == 0:
        return False
    lo = x.ctypes.data
    hi = lo + x.itemsize
    for j in range(x.ndim):
        ext = (x.shape[j] - 1) * x.strides[j]
        if ext < 0:
            lo += ext
        else:
            hi += ext
    dlo = d.ctypes.data
    dhi = dlo + d.nbytes
    if hi <= dlo or dhi <= lo:
        return False
    return not (x.flags.c_contiguous and lo == dlo and hi == dhi)
'''


def lower_fused_into(em, n: ir.Node, plan: _Direct) -> None:
    """prim::Fused whose planned outputs are stored into their list elements (see above).
    The loop of lower_elementwise.py, except that a planned output's array is the element
    itself when the loop runs over exactly the element's shape (else a temporary copied in
    after the loop: a broadcast loop may read an element position after writing it)."""
    from . import lower_elementwise as le
    block, inputs, outputs = n.blocks[0], list(n.inputs), list(n.outputs)
    rank = None
    for r in block.returns:
        t = em.tensor(r)
        rank = t.ndim if rank is None else rank
        if t.ndim != rank:
            raise NotLowered("fused group outputs of different ranks")
    tensor_in, local = ew.group_inputs(em, block, inputs, rank)
    deps = ew.dependencies(block)
    all_t = {p.uid for p, _, _ in tensor_in}
    param_of = {v.uid: p for p, v in zip(block.params, inputs)}
    dests = {}
    for j, (lst, idx, x) in sorted(plan.outs.items()):
        px = param_of.get(x.uid)
        if px is None or px.uid not in deps.get(block.returns[j].uid, set()) or \
                em.tensor(outputs[j]).ndim != rank:
            continue
        d = em.fresh("dst")
        em.emit(f"{d} = {em.name(lst)}[{em.name(idx)}]")
        dests[j] = (d, em.name(x))
    # operands overlapping a destination other than as the destination itself are copied
    renamed, renamed_from = [], {}
    for p, xs, r in tensor_in:
        orig = xs
        tests = [f"_jt_clash({xs}, {d})" for d, xname in dests.values()
                 if xs != xname and r > 0]  # the element itself is read before it is written
        if tests:
            em.global_line(_CLASH)
            safe = em.fresh("op")
            em.emit(f"{safe} = {xs}.copy() if {' or '.join(tests)} else {xs}")
            xs = safe
        renamed.append((p, xs, r))
        renamed_from[p.uid] = (orig, xs)
    tensor_in = renamed
    sizes, mult = ew.loop_shape(em, tensor_in, rank)
    out_names, after = [], []
    for j, r in enumerate(block.returns):
        t = em.tensor(r)
        dep = deps.get(r.uid, set()) & all_t
        o = em.fresh("out")
        if dep == all_t:
            shape_parts, om = list(sizes), None
        else:
            shape_parts, om = [], []
            for dd in range(rank):
                sd = ew.broadcast_size(em, [f"{xs}.shape[{dd - (rank - rr)}]"
                                            for p, xs, rr in tensor_in
                                            if p.uid in dep and dd - (rank - rr) >= 0])
                shape_parts.append(sd)
                mm = em.fresh("m")
                em.emit(f"{mm} = int({sd} != 1)")
                om.append(mm)
        alloc = f"np.empty(({''.join(s + ', ' for s in shape_parts)}), {np_type(t.dtype)})"
        if j not in dests:
            em.emit(f"{o} = {alloc}")
            out_names.append((o, om))
            continue
        d = dests[j][0]
        bad = " or ".join(f"{d}.shape[{k}] != {shape_parts[k]}" for k in range(rank))
        if bad:  # the value is larger than the element (PyTorch's in-place error)
            em.emit(f"if {bad}:")
            em.indent += 1
            em.raise_("RuntimeError", "shape mismatch: value tensor of shape [",
                      *sum((((shape_parts[k],), ", ") for k in range(rank)), ())[:-1],
                      "] cannot be broadcast to indexing result of shape [",
                      *sum((((f"{d}.shape[{k}]",), ", ") for k in range(rank)), ())[:-1],
                      "]")
            em.indent -= 1
        if om is None or not rank:  # the value has the loop's shape: the element's, checked
            em.emit(f"{o} = {d}")
        else:
            same = " and ".join(f"{d}.shape[{k}] == {sizes[k]}" for k in range(rank))
            em.emit(f"{o} = {d} if {same} else {alloc}")
            after.append((o, d))
        out_names.append((o, om))
    base = em.indent
    fast = le._fast_condition(tensor_in, out_names, sizes, rank)
    if fast is not None:
        stores = {}  # output position -> the block param whose flat view it is stored through
        for j in dests:
            o, d = out_names[j][0], dests[j][0]
            p, xs = next((p, renamed_from[p.uid][1]) for p, _, _ in tensor_in
                         if renamed_from[p.uid][0] == dests[j][1])
            # the output is the element, and the operand read for it was not copied
            fast += [f"{o}.ctypes.data == {d}.ctypes.data",
                     f"{xs}.ctypes.data == {d}.ctypes.data"]
            stores[j] = p
        le._flat_loop(em, block, tensor_in, dict(local), out_names, sizes, fast, stores)
        em.emit("else:")
        em.indent += 1
    idx = [em.fresh("i") for _ in range(rank)]
    for d in range(rank):
        em.emit(f"for {idx[d]} in range({sizes[d]}):")
        em.indent += 1
    ew.loads(em, tensor_in, local, mult, idx, rank)
    ew.members(em, block.nodes, local)
    for (o, om), r in zip(out_names, block.returns):
        if om is None:
            ix = ", ".join(idx) if rank else "()"
        else:
            ix = ", ".join(f"{i} * {m}" for i, m in zip(idx, om)) if rank else "()"
        if r.uid not in local:
            raise NotLowered("fused group returns a value it does not compute")
        em.emit(f"{o}[{ix}] = {local[r.uid][0]}")
    em.indent = base
    for o, d in after:  # a temporary (the loop was larger than the element): copy it in
        em.emit(f"if {o}.ctypes.data != {d}.ctypes.data:")
        em.indent += 1
        copy_into(em, d, o, rank)
        em.indent -= 1
    for j, ((o, _), v) in enumerate(zip(out_names, outputs)):
        em.bind(v, o)
        if j in dests:
            plan.dest[j] = dests[j][0]
