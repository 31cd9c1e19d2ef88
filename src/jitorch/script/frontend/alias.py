"""In-place writes in the scripting frontend: `WriteBuilder` (`st.writes`, frontend/state.py).

Values in the IR are immutable; PyTorch tensors are not. This builder gives scripted code
PyTorch's in-place semantics on top of SSA rebinding:

- Every tensor belongs to at most one *storage*, named by a hidden environment entry (a token):
  `$root:<arg>` for each tensor argument, `$local<k>` for a computed tensor once a view of it
  is taken. `env[token]` is the storage's current value. `st.alias[uid] = (token, chain)`
  says that a value is the storage viewed through `chain`, a tuple of view nodes (registry ops
  declared `view=True`/"maybe", and the frontend's `getitem` PythonOp) used as recipes.
- A write (`x.add_(y)`, `x[i] = v`, `x += y`, `copy_`/`fill_`/`zero_`) computes the written
  value's new contents, then pushes them up the chain (`_index_write`, `reshape_as`, the inverse
  transpose/permute, or a PythonOp that writes through the eager view), rebinds the token, and
  re-derives every variable of that storage from the new root by replaying its chain. Variables
  bound to a value that is not a view of anything are rebound together (`y = x; y.add_(1)`).
- Writes to arguments: every exit returns, after the function's results, the current value of
  each argument's storage; `FunctionCompiler.compile` keeps those that differ from the argument
  and records `graph.mutated_inputs` (input indices) for the runtime, which copies them back into
  the caller's tensors and bumps their version counters (runtime/functions.py).
- Loops carry every token (a marker statement makes them "assigned" names: `enter_loop` and
  `leave_loop`, which LoopBuilder.loop calls around each loop); `if` merges keep the alias of a
  variable only when both branches agree. Every emitted node passes `note_view` (FrontendState.
  emit); in-place methods and calls of functions that write their arguments reach this builder
  from the call builders (`inplace_call`, `call_writes`).
- What cannot be followed is refused with a ScriptError naming the construct: writing to a
  tensor taken from a list/tuple/attribute (its storage is unknown here), or to a variable whose
  storage differs between the paths that reach the write.
- A write inside `with no_grad():` (frontend/grad_blocks.py `grad_off`) records no history, as
  eager's: it writes through `_no_grad_target(x)` and each tensor it changes becomes
  `_no_grad_write(old, new)` (new values, old autograd identity). An argument written only so
  is listed in `graph.no_grad_writes`: the runtime lets it be a leaf that requires grad and
  gives it no history when it copies it back.
"""
from __future__ import annotations

import ast

from . import types as ft
from .grad_blocks import grad_off
from .. import ir

UNKNOWN = "unknown"
_WHOLE = (None, None, None)
_RESHAPES = frozenset({"view", "reshape", "flatten", "ravel", "view_as", "reshape_as",
                       "unsqueeze", "squeeze", "unflatten", "contiguous"})
_SELF_INVERSE = frozenset({"transpose", "swapaxes", "swapdims", "t"})
# producers of tensors whose storage is not tracked here (they may alias an argument)
_OPAQUE = {"prim::ListUnpack": "an element of a list", "prim::TupleIndex": "a tuple element",
           "prim::TupleUnpack": "a tuple element", "prim::GetAttr": "an attribute"}


class LoopEntry(ast.Assign):
    """A statement put first in a loop body: its targets (the tokens) make the loop carry every
    storage, and compiling it maps the carried aliases onto the body's parameters."""
    outer_env: dict = {}


class ViewWrite:
    """`base` with `op(base, *rest)` (a view) overwritten by `new`, through eager ops (the
    inverse of a view the compiler has no direct write for; holds the GIL)."""

    def __init__(self, op: str):
        self.op = op
        self.__qualname__ = f"write_through_{op}"

    def __call__(self, base, new, *rest):
        from ..._ops.registry import OPS
        c = base.clone()
        OPS[self.op].fn(c, *rest).copy_(new)
        return c


class CloneCall:
    """`x.<name>_(*args)` for an in-place method without a registry op: applied to a copy, so
    the IR value x stays immutable; the result is written back like any other write."""

    def __init__(self, name: str, kwnames: tuple):
        self.name, self.kwnames = name, kwnames
        self.__qualname__ = f"Tensor.{name}"

    def __call__(self, x, *args):
        k = len(self.kwnames)
        pos, kw = (args[:-k], args[-k:]) if k else (args, ())
        c = x.clone()
        getattr(c, self.name)(*pos, **dict(zip(self.kwnames, kw)))
        return c


class ListSet:
    """`lst` with element i replaced (a write to an element of a List[Tensor] argument)."""
    __qualname__ = "list_setitem"

    def __call__(self, lst, i, v):
        out = list(lst)
        out[i] = v
        return out


def _tensor_list(t) -> bool:
    t = ft.base(t)
    return isinstance(t, ir.ListType) and isinstance(ft.base(t.elem), ir.TensorType)


class WriteBuilder:
    """In-place writes and storage tracking for one function (`st.writes`); the storages live
    in the shared state (`st.alias`, `st.arg_tokens`, the `$root:`/`$local` tokens in
    `st.env`), this builder's own fields are the counters below."""

    __slots__ = ("st", "_n_local", "_internal", "_written")

    def __init__(self, st):
        self.st = st
        self._n_local = 0   # `$local<k>` tokens handed out
        self._internal = 0  # > 0 while emitting the write machinery's own view nodes
        self._written: dict = {}  # token -> True once written with grad on (else no_grad only)

    # -- set up ------------------------------------------------------------------------------
    def init_aliases(self):
        """Every tensor (or List[Tensor]) argument is a storage of its own."""
        st = self.st
        for i, v in enumerate(st.block.params):
            if isinstance(v.type, ir.TensorType) or _tensor_list(v.type):
                tok = f"$root:{v.name}"
                st.env[tok] = v
                st.alias[v.uid] = (tok, ())
                st.arg_tokens.append((tok, i))

    def alias_of(self, v):
        """(token, chain), None (an untracked value of its own) or UNKNOWN."""
        st = self.st
        a = st.alias.get(v.uid)
        if a is not None:
            return a
        n = v.node
        if n is not None and isinstance(v.type, ir.TensorType) and (
                n.op in _OPAQUE or n.op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem"):
            return UNKNOWN
        if n is not None and n.op == "prim::If" and v in n.outputs and \
                len(n.blocks[0].returns) == len(n.outputs):  # `a if c else b`
            k = n.outputs.index(v)
            a, b = (self.alias_of(blk.returns[k]) for blk in n.blocks)
            return a if a == b else UNKNOWN if a is not None or b is not None else None
        return None

    def _opaque_what(self, v) -> str:
        n = v.node
        if n is None:
            return "a value"
        return _OPAQUE.get(n.op, {"prim::ScalarOp": "an element of a list",
                                  "prim::CallFunction": "a view returned by a called function",
                                  "prim::If": "a tensor chosen by a condition",
                                  "prim::Loop": "a tensor whose storage changes across loop "
                                                "iterations"}.get(n.op, "a value"))

    def note_view(self, n: ir.Node) -> None:
        """Called for every emitted node: a view op's output aliases its input 0."""
        st = self.st
        if self._internal or len(n.outputs) != 1 or not n.inputs:
            return
        if n.op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem" and \
                _tensor_list(n.inputs[0].type) and ft.is_tensor(n.outputs[0].type):
            # an element of a List[Tensor] argument: written back through ListSet; elements
            # of other lists (built here from tensors that may alias) are refused
            a = self.alias_of(n.inputs[0])
            if a is not None and a is not UNKNOWN and not a[1] and a[0].startswith("$root:"):
                st.alias[n.outputs[0].uid] = (a[0], (n,))
            else:
                st.alias[n.outputs[0].uid] = UNKNOWN
            return
        from ..._ops.registry import OPS
        op = OPS.get(n.op)
        if op is None or not op.view or not isinstance(n.outputs[0].type, ir.TensorType):
            return
        self.note_alias(n.outputs[0], n.inputs[0], n)

    def note_alias(self, out: ir.Value, src: ir.Value, step: ir.Node) -> None:
        st = self.st
        info = self.alias_of(src)
        if info is UNKNOWN:
            st.alias[out.uid] = UNKNOWN
            return
        if info is None:  # the first view of a computed tensor: it becomes a storage
            self._n_local += 1
            tok = f"$local{self._n_local}"
            st.env[tok] = src
            info = (tok, ())
            st.alias[src.uid] = info
        st.alias[out.uid] = (info[0], info[1] + (step,))

    # -- writes ------------------------------------------------------------------------------
    def write_op(self, x, values, basic=(), cast_check=False) -> ir.Value:
        """`_index_write(x, values, basic, cast_check)`: x's new contents after the write."""
        st = self.st
        self._internal += 1
        try:
            return st.calls.call_op("_index_write", [self.target(x), values, st.const(basic),
                                                     st.const(cast_check)])
        finally:
            self._internal -= 1

    def target(self, x: ir.Value, off: bool | None = None) -> ir.Value:
        """The tensor a write goes through: x, or inside `with no_grad():` (`off`; None: the
        current statement's) `_no_grad_target(x)` (the write records no history)."""
        if off is None:
            off = grad_off(self.st.cur)
        if not off or not isinstance(ft.base(x.type), ir.TensorType):
            return x
        self._internal += 1
        try:
            return self.st.calls.call_op("_no_grad_target", [x])
        finally:
            self._internal -= 1

    def _kept(self, old: ir.Value, new: ir.Value, off: bool) -> ir.Value:
        """A tensor's value after a write: `new`, or after a no_grad write `new` with old's
        autograd identity."""
        if not off or not isinstance(ft.base(old.type), ir.TensorType):
            return new
        return self.st.calls.call_op("_no_grad_write", [old, new])

    def mutate(self, v: ir.Value, new: ir.Value, node=None) -> ir.Value:
        """`v`'s storage now holds `new` where v is: rebind everything that shares it. Returns
        the value `v`'s variable has after the write."""
        st = self.st
        info = self.alias_of(v)
        if info is UNKNOWN:
            st.fail("in-place modification of a tensor whose storage the compiler cannot "
                    f"follow ({self._opaque_what(v)}, or a view of one) is not supported in "
                    "scripted code; modify the tensor it came from, or use an out-of-place "
                    "op", node)
        if info is None:
            new = self._kept(v, new, grad_off(node))
            for n, val in list(st.env.items()):
                if val is v:
                    st.env[n] = new
            return new
        tok, chain = info
        root = st.env.get(tok)
        if root is None:  # the storage's token went out of scope (made inside a branch)
            if chain:
                st.fail("in-place modification of a view whose base was first viewed inside "
                        "an if/loop branch is not supported in scripted code", node)
            root = st.env[tok] = v
        off = grad_off(node)
        self._written[tok] = self._written.get(tok, False) or not off
        self._internal += 1
        try:
            bases = [root]
            for step in chain[:-1]:
                bases.append(self._replay(step, bases[-1]))
            cur = self._kept(v, new, off)
            for step, b in zip(reversed(chain), reversed(bases)):
                cur = self._kept(b, self._unview(step, self.target(b, off), cur, node), off)
            st.env[tok] = cur
            st.alias[cur.uid] = (tok, ())
            for n, val in list(st.env.items()):
                if n == tok or not isinstance(val, ir.Value):
                    continue
                a = st.alias.get(val.uid)
                if a is not None and a is not UNKNOWN and a[0] == tok:
                    st.env[n] = self._derive(cur, a[1], tok)
            return self._derive(cur, chain, tok)
        finally:
            self._internal -= 1

    def _derive(self, root, chain, tok):
        st = self.st
        cur = root
        for i, step in enumerate(chain):
            cur = self._replay(step, cur)
            st.alias[cur.uid] = (tok, chain[:i + 1])
        return cur

    def _replay(self, step: ir.Node, x: ir.Value) -> ir.Value:
        st = self.st
        return st.emit(step.op, [x] + self._local(step.inputs[1:]),
                       [o.type for o in step.outputs], dict(step.attrs)).outputs[0]

    def _local(self, values) -> list:
        """Constants re-made in the current block (a block's constants must be its own for the
        type pass to read them; captured ones become block parameters)."""
        st = self.st
        out = []
        for v in values:
            n = v.node
            if n is not None and n.op == "prim::Constant" and n not in st.block.nodes:
                v = st.emit("prim::Constant", (), (v.type,), dict(n.attrs)).output
            out.append(v)
        return out

    def _unview(self, step: ir.Node, base: ir.Value, new: ir.Value, node) -> ir.Value:
        """base with the view `step` of it replaced by `new`."""
        from .index import _const_of, GetItem, SetItem
        st = self.st
        op, rest = step.op, self._local(step.inputs[1:])
        consts = [_const_of(r) for r in rest]
        if op == "_index_view":
            return self.write_op(base, new, consts[0][1])
        if op == "select" and consts[0][0] and consts[1][0] and isinstance(consts[1][1], int) \
                and consts[0][1] >= 0:
            return self.write_op(base, new, (_WHOLE,) * consts[0][1] + (consts[1][1],))
        if op == "select" and consts[0][0] and isinstance(ft.base(rest[1].type), ir.IntType):
            self._internal += 1
            try:
                return st.calls.call_op("_select_write", [base, new] + rest)
            finally:
                self._internal -= 1
        if op in _RESHAPES:
            return st.calls.call_op("reshape_as", [new, base])
        if op in _SELF_INVERSE:
            return st.calls.call_op(op, [new] + rest)
        if op == "permute" and consts[0][0]:
            dims = list(consts[0][1])
            inv = [0] * len(dims)
            for i, d in enumerate(dims):
                inv[d % len(dims)] = i
            return st.calls.call_op("permute", [new, st.const(tuple(inv))])
        if op == "prim::ScalarOp":  # an element of a list argument
            return st.python_op(ListSet(), [base] + rest + [new], (base.type,),
                                name="list_setitem").output
        if op == "prim::PythonOp" and isinstance(step.attrs.get("fn"), GetItem):
            fn = SetItem(step.attrs["fn"].spec)
            fn.single = step.attrs["fn"].single
            return st.python_op(fn, [base] + rest + [new], (base.type,),
                                name="setitem").output
        fn = ViewWrite(op)
        return st.python_op(fn, [base, new] + rest, (base.type,), name=fn.__qualname__).output

    # -- statements and calls that write ----------------------------------------------------
    def inplace_method(self, v: ir.Value, name: str, node):
        """`v.<name>(...)` where name ends in `_`: the write, or None when not a write."""
        from ..._tensor import Tensor
        from .call import op_of
        st = self.st
        base = name[:-1]
        if not hasattr(Tensor, name):
            return None
        args, kwargs = st.calls.eval_args(node)
        st.cur = node
        if base == "zero" and not args and not kwargs:
            new = self.write_op(v, st.const(0))
        elif base == "fill" and len(args) == 1 and not kwargs:
            new = self.write_op(v, st.exprs.to_value(args[0]))
        elif base == "copy" and len(args) == 1 and set(kwargs) <= {"non_blocking"}:
            new = self.write_op(v, st.exprs.to_value(args[0]))
        else:
            op = op_of(getattr(Tensor, base, None))
            # a guarded op (`sub`: an eager argument check first) is the op, as for `x.sub(y)`
            r = st.calls.op_call(op, [v] + args, kwargs, node) if op is not None else \
                st.calls.overload_op(getattr(Tensor, base, None), base, node, recv=v,
                                     evaluated=(args, kwargs))
            if r is None:
                fn = CloneCall(name, tuple(kwargs))
                ins = [v] + [st.exprs.to_value(a) for a in args] + \
                    [st.exprs.to_value(a) for a in kwargs.values()]
                r = st.python_op(fn, ins, (v.type,), name=fn.__qualname__).output
            st.cur = node
            new = self.write_op(v, r, cast_check=True)
        return self.mutate(v, new, node)

    def inplace_call(self, bm, node):
        """`x.<name>_(...)` on a tensor (CallBuilder.method_call asks first): the write, or
        None when the method is not an in-place tensor method."""
        name = bm.name
        if name.endswith("_") and not name.endswith("__") and \
                isinstance(ft.base(bm.value.type), ir.TensorType):
            return self.inplace_method(bm.value, name, node)
        return None

    def call_writes(self, start: int, r, node):
        """After CallBuilder.function_call emitted (from node index `start` of the block) the
        call of a scripted function that writes to its arguments: its extra outputs are the
        arguments' new values, written here like any other write. Returns the call's value."""
        st = self.st
        call = next((n for n in reversed(st.block.nodes[start:])
                     if n.op == "prim::CallFunction"), None)
        g = call.attrs.get("fn") if call is not None else None
        for j in getattr(g, "returns_views", ()):
            st.alias[call.outputs[j].uid] = UNKNOWN
        mut = tuple(getattr(g, "mutated_inputs", ()) or ())
        if not mut:
            return r
        k = len(mut)
        nres = len(call.outputs) - k
        tup = r.node if r.node is not None and r.node.op == "prim::TupleConstruct" and \
            r.node.inputs == call.outputs else None
        if tup is not None:  # the callee returns a tuple: it holds the results only
            tup.inputs = list(call.outputs[:nres])
            r.type = ir.TupleType([o.type for o in tup.inputs])
        aliases = getattr(call.attrs["fn"], "return_aliases", {}) or {}
        written = self.call_targets(call, mut, node)
        for i, new in zip(mut, call.outputs[nres:]):
            cur = self.mutate(written[i], new, node)
            for j, src in aliases.items():  # a result that IS the argument: the caller's
                if src == i:
                    if tup is not None:
                        tup.inputs[j] = cur
                    elif j == 0:
                        r = cur
        return r

    def call_targets(self, call: ir.Node, mut, node) -> list:
        """A call (already emitted) of a function that writes its arguments `mut`: inside
        `with no_grad():` it writes them through `_no_grad_target`s (made just before the call),
        as any write there does. Returns the call's original inputs."""
        orig = list(call.inputs)
        if grad_off(node):
            block = self.st.block
            for i in mut:
                n0 = len(block.nodes)
                call.inputs[i] = self.target(call.inputs[i], True)
                made = block.nodes[n0:]  # (the target and its constant) go before the call
                del block.nodes[n0:]
                k = block.nodes.index(call)
                block.nodes[k:k] = made
        return orig

    # -- control flow --------------------------------------------------------------------------
    def enter_loop(self, s, body):
        """Before LoopBuilder.loop compiles a loop: a body that may write gets a LoopEntry
        marker first (the loop then carries every storage). Returns (body, env before)."""
        st = self.st
        toks = [n for n in st.env if n.startswith("$root:") or n.startswith("$local")]
        if toks and _may_write(body):
            mark = LoopEntry(targets=[ast.Name(t, ast.Store()) for t in toks],
                             value=ast.Constant(None), lineno=s.lineno, col_offset=s.col_offset)
            mark.outer_env = dict(st.env)
            body = [mark] + list(body)
        return body, dict(st.env)

    def leave_loop(self, before: dict) -> None:
        """After LoopBuilder.loop emitted the prim::Loop: its outputs keep the aliases the
        loop preserves, and views of storages it wrote are re-derived."""
        st = self.st
        node = st.block.nodes[-1] if st.block.nodes else None
        if node is not None and node.op == "prim::Loop":
            blk = node.blocks[0]
            for o, init, ret in zip(node.outputs, node.inputs[2:], blk.returns[1:]):
                a, b = self.alias_of(init), self.alias_of(ret)
                if a is not None and a == b:
                    st.alias[o.uid] = a
                elif a is not None or b is not None:
                    st.alias[o.uid] = UNKNOWN
        self.rederive_after(before)

    def loop_entry(self, s: LoopEntry) -> None:
        """At the top of a loop body: carried variables keep their aliases; variables that are
        not carried but view a carried storage are re-derived from the storage's parameter
        (else they would read the value from before the loop)."""
        st = self.st
        self._internal += 1
        try:
            for n, outer in s.outer_env.items():
                inner = st.env.get(n)
                if n.startswith("$") and isinstance(inner, ir.Value):
                    st.alias[inner.uid] = (n, ())  # a storage's parameter is its root
            for n, outer in s.outer_env.items():
                inner = st.env.get(n)
                if not isinstance(outer, ir.Value) or inner is None or n.startswith("$"):
                    continue
                a = self.alias_of(outer)
                if a is None or a is UNKNOWN:
                    continue
                if inner is not outer:
                    st.alias[inner.uid] = a
                elif st.env.get(a[0]) is not s.outer_env.get(a[0]):
                    st.env[n] = self._derive(st.env[a[0]], a[1], a[0])
        finally:
            self._internal -= 1

    def rederive_after(self, before: dict) -> None:
        """After a loop: variables the loop did not carry but whose storage it wrote are
        re-derived from the storage's new value."""
        st = self.st
        self._internal += 1
        try:
            for n, val in list(st.env.items()):
                if n.startswith("$") or not isinstance(val, ir.Value) or \
                        before.get(n) is not val:
                    continue
                a = st.alias.get(val.uid)
                if a is None or a is UNKNOWN or a[0] not in st.env:
                    continue
                if st.env[a[0]] is not before.get(a[0]):
                    st.env[n] = self._derive(st.env[a[0]], a[1], a[0])
        finally:
            self._internal -= 1

    def merge_alias(self, out: ir.Value, a: ir.Value | None, b: ir.Value | None) -> None:
        """An `if` output: it keeps the alias both branches agree on."""
        st = self.st
        x = self.alias_of(a) if a is not None else None
        y = self.alias_of(b) if b is not None else None
        if a is None:
            x = y
        if b is None:
            y = x
        if x is not None and x == y:
            st.alias[out.uid] = x
        elif x is not None or y is not None:
            st.alias[out.uid] = UNKNOWN

    # -- exits -------------------------------------------------------------------------------
    def exit_values(self) -> list:
        """What every function exit returns after its results: each argument storage's value."""
        st = self.st
        # a storage first touched on another path (a parameter read only inside an `if` that
        # returned) is still its graph input on this one
        return [st.env.get(t, st.graph.block.params[i]) for t, i in st.arg_tokens]

    def finish_mutations(self, rets: list, extras: list) -> list:
        """Keep the argument storages some path modified; set graph.mutated_inputs and
        graph.return_aliases (result index -> argument index, when a result IS the argument's
        final value: the runtime returns the caller's tensor, as PyTorch does)."""
        st = self.st
        kept, idx = [], []
        for (tok, i), v in zip(st.arg_tokens, extras):
            param = st.graph.block.params[i]
            if not _same_as(v, param):
                kept.append(v)
                idx.append(i)
        st.graph.mutated_inputs = tuple(idx)
        st.graph.no_grad_writes = tuple(i for tok, i in st.arg_tokens
                                        if i in idx and not self._written.get(tok, True))
        _prune_if_outputs(st.graph.block, list(rets) + kept)
        st.graph.return_aliases = {k: idx[kept.index(r)] for k, r in enumerate(rets)
                                   if any(r is x for x in kept)}
        # results that view an argument's storage: a caller must not write through them
        # (the write would not reach the argument)
        st.graph.returns_views = tuple(
            k for k, r in enumerate(rets) if k not in st.graph.return_aliases and
            isinstance(r.type, ir.TensorType) and self.alias_of(r) is not None and (
                self.alias_of(r) is UNKNOWN or self.alias_of(r)[0].startswith("$root:")))
        return list(rets) + kept


def _prune_if_outputs(block: ir.Block, returns: list) -> None:
    """Drop the outputs of `if` nodes nothing reads (every exit passed each argument's storage
    along; the ones left unwritten are not returned): the graph stays as small as before."""
    used: set = {v.uid for v in returns}

    def collect(b):
        for n in b.nodes:
            used.update(v.uid for v in n.inputs)
            for sub in n.blocks:
                used.update(v.uid for v in sub.returns)
                collect(sub)

    def prune(b):
        for n in b.nodes:
            for sub in n.blocks:
                prune(sub)
            if n.op != "prim::If":
                continue
            keep = [k for k, o in enumerate(n.outputs) if o.uid in used]
            if len(keep) == len(n.outputs):
                continue
            n.outputs = [n.outputs[k] for k in keep]
            for sub in n.blocks:
                sub.returns = [sub.returns[k] for k in keep]
    collect(block)
    prune(block)


def _may_write(stmts) -> bool:
    """Can these statements write to a tensor in place (then loops carry the storages)?"""
    for s in stmts:
        for e in ast.walk(s):
            if isinstance(e, ast.AugAssign) or isinstance(e, ast.Subscript) and \
                    isinstance(e.ctx, ast.Store):
                return True
            if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
                    e.func.attr.endswith("_") and not e.func.attr.endswith("__"):
                return True
    return False


def _same_as(v: ir.Value, target: ir.Value, depth: int = 0) -> bool:
    """Is v `target` on every path (through if/loop outputs that pass it along unchanged)?"""
    if v is target:
        return True
    n = v.node
    if n is None or depth > 50:
        return False
    k = n.outputs.index(v)
    if n.op == "prim::If":
        return all(_same_as(b.returns[k], target, depth + 1) for b in n.blocks)
    if n.op == "prim::Loop":
        blk = n.blocks[0]
        init = n.inputs[2 + k]
        ret = blk.returns[1 + k]
        return _same_as(init, target, depth + 1) and _same_as(ret, blk.params[1 + k],
                                                              depth + 1)
    return False
