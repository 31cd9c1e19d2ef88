"""LLVM IR for a typed generated function (typer.py's `Typed`), emitted in place by an
intrinsic: the lean compiler's second half.

Owns `emit(context, builder, typed, args) -> value`. Each operation is lowered by the
implementation Numba's target context has for its signature (`get_function`, `get_getattr`,
`cast`, `is_true`), as Numba's own lowering would; what is lowered here is only the function's
structure: variables (one stack slot each, of their unified type), `range` loops, `while`, `if`,
static raises (Numba's calling convention, so the entry sees the same exception), and returns.

References, as in Numba: every value an implementation returns is a new reference; a variable
owns the value stored in it (the old one is released on store, all of them at the return);
parameters are borrowed; a temporary is released once its consumer has run. A raise returns at
once without releasing the variables, as Numba does. Two shortcuts for straight-line glue: a
variable stored by one statement outside loops has no old value to release (`_stored_once`),
and a new tuple unpacked into variables hands them its elements' references.
"""
from __future__ import annotations

import ast

from llvmlite import ir as llir
from numba.core import cgutils, types
from numba.core.typing import templates
from numba.np import arrayobj

from .typer import Unsupported


class _Lower:
    def __init__(self, context, builder, typed, args):
        self.c, self.b, self.t = context, builder, typed
        self.args = dict(zip(typed.params, args))
        self.once = _stored_once(typed.fn)
        self.slots = {}
        for name, ty in typed.vars.items():
            lt = context.get_value_type(ty)
            slot = cgutils.alloca_once(builder, lt, name=f"lean.{name}")
            builder.store(llir.Constant(lt, None), slot)  # (a null reference: released freely)
            self.slots[name] = slot
        rt = context.get_value_type(typed.ret)
        self.ret_slot = cgutils.alloca_once(builder, rt, name="lean.ret")
        builder.store(llir.Constant(rt, None), self.ret_slot)
        self.exit = builder.append_basic_block("lean.exit")

    # --- structure -----------------------------------------------------------------------------
    def run(self):
        self.block(self.t.fn.body)
        b = self.b
        if not b.block.is_terminated:
            b.branch(self.exit)
        b.position_at_end(self.exit)
        for name, ty in self.t.vars.items():
            self.c.nrt.decref(b, ty, b.load(self.slots[name]))
        return b.load(self.ret_slot)

    def block(self, stmts):
        for s in stmts:
            if self.b.block.is_terminated:  # code after a raise or return: never runs
                self.b.position_at_end(self.b.append_basic_block("lean.dead"))
            self.stmt(s)

    def stmt(self, s):
        b, c = self.b, self.c
        if isinstance(s, ast.Assign):
            self.store(s.targets[0], *self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            self.augassign(s)
        elif isinstance(s, ast.For):
            self.range_loop(s)
        elif isinstance(s, ast.While):
            head = b.append_basic_block("lean.while")
            body = b.append_basic_block("lean.while.body")
            end = b.append_basic_block("lean.while.end")
            b.branch(head)
            b.position_at_end(head)
            b.cbranch(self.truth(s.test), body, end)
            b.position_at_end(body)
            self.block(s.body)
            if not b.block.is_terminated:
                b.branch(head)
            b.position_at_end(end)
        elif isinstance(s, ast.If):
            cond = self.truth(s.test)
            with b.if_else(cond) as (then, otherwise):
                with then:
                    self.block(s.body)
                with otherwise:
                    self.block(s.orelse)
        elif isinstance(s, ast.Raise):
            exc = s.exc
            cls = exc.func if isinstance(exc, ast.Call) else exc
            args = tuple(a.value for a in exc.args) if isinstance(exc, ast.Call) else None
            c.call_conv.return_user_exc(b, self.t.glob[id(cls)], args)
        elif isinstance(s, ast.Return):
            val, ty, owned = self.expr(s.value)
            val = self.owned(val, ty, owned)
            b.store(c.cast(b, val, ty, self.t.ret), self.ret_slot)
            b.branch(self.exit)
        elif isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Constant):
                self.release(*self.expr(s.value))
        elif not isinstance(s, ast.Pass):
            raise Unsupported(type(s).__name__)

    def range_loop(self, s):
        b, c = self.b, self.c
        _, sig = self.t.sig[id(s.iter)]
        ity = sig.return_type.dtype
        ops = [self.expr(a) for a in s.iter.args]
        vals = [c.cast(b, c.cast(b, v, t, want), want, ity)
                for (v, t, _), want in zip(ops, sig.args)]
        for op in ops:  # (integers: nothing to release, but the rule holds)
            self.release(*op)
        lt = c.get_value_type(ity)
        start, stop, step = (
            (lt(0), vals[0], lt(1)) if len(vals) == 1 else
            (vals[0], vals[1], lt(1)) if len(vals) == 2 else vals)
        counter = cgutils.alloca_once_value(b, start)
        head = b.append_basic_block("lean.for")
        body = b.append_basic_block("lean.for.body")
        end = b.append_basic_block("lean.for.end")
        b.branch(head)
        b.position_at_end(head)
        i = b.load(counter)
        signed = ity.signed
        up = b.icmp_signed("<", i, stop) if signed else b.icmp_unsigned("<", i, stop)
        if len(vals) == 3:  # a run-time step: its sign picks the test
            down = b.icmp_signed(">", i, stop) if signed else b.icmp_unsigned(">", i, stop)
            up = b.select(b.icmp_signed(">", step, lt(0)), up, down)
        b.cbranch(up, body, end)
        b.position_at_end(body)
        self.set_var(s.target.id, i, ity)
        self.block(s.body)
        if not b.block.is_terminated:
            b.store(b.add(b.load(counter), step), counter)
            b.branch(head)
        b.position_at_end(end)

    # --- stores --------------------------------------------------------------------------------
    def set_var(self, name, val, ty, owned=False):
        """Store into variable `name` (which takes a reference), releasing what it held."""
        c, b = self.c, self.b
        vty = self.t.vars[name]
        val = c.cast(b, self.owned(val, ty, owned), ty, vty)
        slot = self.slots[name]
        if name in self.once:  # (its slot still holds the null it started with)
            b.store(val, slot)
            return
        old = b.load(slot)
        b.store(val, slot)
        c.nrt.decref(b, vty, old)

    def store(self, target, val, ty, owned):
        b = self.b
        if isinstance(target, ast.Name):
            self.set_var(target.id, val, ty, owned)
        elif isinstance(target, ast.Tuple):
            # an owned tuple's references pass to the variables (the tuple itself holds
            # none of its own); a borrowed one's elements are taken as new references
            for k, e in enumerate(target.elts):
                self.set_var(e.id, b.extract_value(val, k), ty.types[k], owned)
        elif id(target) in self.t.direct:
            base, index = self.expr(target.value), self.index(target.slice)
            self.put_item(base, index, val, ty)
            for op in (base, index, (val, ty, owned)):
                self.release(*op)
        else:  # a subscript
            base = self.expr(target.value)
            index = self.index(target.slice)
            fnty, sig = self.t.sig[id(target)]
            self.apply(fnty, sig, [base, index, (val, ty, owned)])

    def augassign(self, s):
        fnty, sig = self.t.sig[id(s)]
        if isinstance(s.target, ast.Name):
            cur = (self.b.load(self.slots[s.target.id]), self.t.vars[s.target.id], False)
            res = self.apply(fnty, sig, [cur, self.expr(s.value)])
            self.set_var(s.target.id, res, sig.return_type, owned=True)
            return
        base = self.expr(s.target.value)
        index = self.index(s.target.slice)
        if id(s.target) in self.t.direct:
            ptr = self.item_pointer(base, index)
            arrty = base[1]
            cur = (arrayobj.load_item(self.c, self.b, arrty, ptr), arrty.dtype, False)
            new = self.apply(fnty, sig, [cur, self.expr(s.value)])
            val = self.c.cast(self.b, new, sig.return_type, arrty.dtype)
            arrayobj.store_item(self.c, self.b, arrty, val, ptr)
            self.release(*base)
            self.release(*index)
            return
        get, gsig = self.t.sig[(id(s), "get")]
        keep = [(v, t, False) for v, t, _ in (base, index)]  # (used twice: released last)
        cur = self.apply(get, gsig, keep)
        new = self.apply(fnty, sig, [(cur, gsig.return_type, True), self.expr(s.value)])
        put, psig = self.t.sig[(id(s), "set")]
        self.apply(put, psig, keep + [(new, sig.return_type, True)])
        self.release(*base)
        self.release(*index)

    # --- expressions: (value, type, owned) -----------------------------------------------------
    def expr(self, e):
        b, c, t = self.b, self.c, self.t
        ty = t.ty[id(e)]
        if id(e) in t.const or isinstance(e, ast.Constant):
            value = t.const[id(e)] if id(e) in t.const else e.value
            return c.get_constant_generic(b, types.unliteral(ty), value), ty, False
        if id(e) in t.glob:
            return c.get_constant_generic(b, ty, t.glob[id(e)]), ty, False
        if isinstance(e, ast.Name):
            if e.id in self.args:
                return self.args[e.id], ty, False
            return b.load(self.slots[e.id]), t.vars[e.id], False
        if isinstance(e, ast.Attribute):
            base = self.expr(e.value)  # (typer.py checked that it has a lowering)
            res = c.get_getattr(base[1], e.attr)(c, b, base[1], base[0], e.attr)
            self.release(*base)
            return res, ty, True
        if isinstance(e, ast.Tuple):
            parts = [self.expr(x) for x in e.elts]
            vals = [c.cast(b, self.owned(v, pt, o), pt, et)
                    for (v, pt, o), et in zip(parts, ty.types)]
            return c.make_tuple(b, ty, vals), ty, True
        if isinstance(e, ast.Subscript) and id(e) not in t.sig:  # a tuple's constant index
            base = self.expr(e.value)
            k = t.const[id(e.slice)]
            n = len(base[1])
            if isinstance(k, slice):  # (a static slice: a tuple of the elements it picks)
                picked = [self.owned(b.extract_value(base[0], j), base[1].types[j], False)
                          for j in range(n)[k]]
                item = c.make_tuple(b, ty, picked)
            else:
                item = self.owned(b.extract_value(base[0], k + n if k < 0 else k), ty, False)
            self.release(*base)
            return item, ty, True
        if isinstance(e, ast.Subscript) and id(e) in t.direct:
            base, index = self.expr(e.value), self.index(e.slice)
            val = arrayobj.load_item(c, b, base[1], self.item_pointer(base, index))
            self.release(*base)
            self.release(*index)
            return c.cast(b, val, base[1].dtype, ty), ty, False
        if isinstance(e, ast.Subscript):
            fnty, sig = t.sig[id(e)]
            return self.apply(fnty, sig, [self.expr(e.value), self.index(e.slice)]), ty, True
        if isinstance(e, (ast.BinOp, ast.Compare, ast.UnaryOp)):
            fnty, sig = t.sig[id(e)]
            operands = ([e.left, e.right] if isinstance(e, ast.BinOp) else
                        [e.left, e.comparators[0]] if isinstance(e, ast.Compare) else [e.operand])
            return self.apply(fnty, sig, [self.expr(x) for x in operands]), ty, True
        if isinstance(e, (ast.BoolOp, ast.IfExp)):
            return self.select(e, ty), ty, True
        if isinstance(e, ast.Call):
            return self.call(e), ty, True
        raise Unsupported(type(e).__name__)

    def index(self, s):
        b, c, t = self.b, self.c, self.t
        if isinstance(s, ast.Tuple):
            ty = t.ty[id(s)]
            parts = [self.index(x) for x in s.elts]
            vals = [c.cast(b, self.owned(v, pt, o), pt, et)
                    for (v, pt, o), et in zip(parts, ty.types)]
            return c.make_tuple(b, ty, vals), ty, True
        if isinstance(s, ast.Slice):
            fnty, sig = t.sig[id(s)]
            parts = [s.lower, s.upper] + ([s.step] if s.step is not None else [])
            vals = [(c.get_dummy_value(), types.none, False) if p is None else self.expr(p)
                    for p in parts]
            return self.apply(fnty, sig, vals), sig.return_type, True
        return self.expr(s)

    def select(self, e, ty):
        """`a and b`, `a or b`, `x if c else y`: the chosen operand, evaluated lazily."""
        b, c = self.b, self.c
        slot = cgutils.alloca_once(b, c.get_value_type(ty))
        end = b.append_basic_block("lean.sel.end")

        def put(node):
            v, vt, o = self.expr(node)
            b.store(c.cast(b, self.owned(v, vt, o), vt, ty), slot)

        if isinstance(e, ast.IfExp):
            with b.if_else(self.truth(e.test)) as (then, otherwise):
                with then:
                    put(e.body)
                with otherwise:
                    put(e.orelse)
            b.branch(end)
        else:
            is_and = isinstance(e.op, ast.And)
            for node in e.values[:-1]:
                v, vt, o = self.expr(node)
                b.store(c.cast(b, self.owned(v, vt, o), vt, ty), slot)
                go_on = c.is_true(b, vt, v)
                nxt = b.append_basic_block("lean.sel.next")
                b.cbranch(go_on if is_and else b.not_(go_on), nxt, end)
                b.position_at_end(nxt)
                c.nrt.decref(b, ty, b.load(slot))  # (not the value: the next operand is)
            put(e.values[-1])
            b.branch(end)
        b.position_at_end(end)
        return b.load(slot)

    def call(self, e):
        fnty, sig = self.t.sig[id(e)]
        if isinstance(sig.return_type, types.Phantom):
            return self.c.get_dummy_value()
        args = [self.expr(a) for a in e.args]
        kws = {k.arg: self.expr(k.value) for k in e.keywords}
        recv = None
        if sig.recvr is not None:
            recv = self.expr(e.func.value)
        if sig.pysig is not None:
            args = self.fold(sig, args, kws)
        res = self.apply(fnty, sig, args, recv)
        return res

    def fold(self, sig, args, kws):
        """Positional operands for `sig`: keywords in place, defaults filled in, a `*args`
        parameter packed as a tuple."""
        c, b = self.c, self.b

        def normal(index, param, var):
            return var

        def default(index, param, value):
            ty = sig.args[index]
            return c.get_constant_generic(b, ty, value), ty, False

        def stararg(index, param, values):
            ty = sig.args[index]
            vals = [c.cast(b, self.owned(v, t, o), t, want)
                    for (v, t, o), want in zip(values, ty.types)]
            return cgutils.make_anonymous_struct(b, vals), ty, True

        return templates.fold_arguments(sig.pysig, args, kws, normal, default, stararg)

    def apply(self, fnty, sig, operands, recv=None):
        """Call the implementation of `sig`, operands cast to its argument types; releases the
        operands that were temporaries. Returns the result (a new reference)."""
        c, b = self.c, self.b
        vals = [c.cast(b, v, t, want) for (v, t, _), want in zip(operands, sig.args)]
        if recv is not None:
            vals = [c.cast(b, recv[0], recv[1], sig.recvr)] + vals
        res = c.get_function(fnty, sig)(b, vals)
        if res is None:
            res = c.get_dummy_value()
        for op in operands:
            self.release(*op)
        if recv is not None:
            self.release(*recv)
        return res

    def truth(self, node):
        v, t, o = self.expr(node)
        res = self.c.is_true(self.b, t, v)
        self.release(v, t, o)
        return res

    # --- array elements addressed directly (nonneg.py: no negative-index wraparound) ------------
    def item_pointer(self, base, index):
        c, b = self.c, self.b
        arrty = base[1]
        ary = c.make_array(arrty)(c, b, base[0])
        val, ity, _ = index
        if isinstance(ity, types.BaseTuple):
            inds = [c.cast(b, b.extract_value(val, k), et, types.intp)
                    for k, et in enumerate(ity.types)]
        else:
            inds = [c.cast(b, val, ity, types.intp)]
        return cgutils.get_item_pointer2(
            c, b, ary.data, cgutils.unpack_tuple(b, ary.shape, arrty.ndim),
            cgutils.unpack_tuple(b, ary.strides, arrty.ndim), arrty.layout, inds,
            wraparound=False, boundscheck=c.enable_boundscheck)

    def put_item(self, base, index, val, ty):
        arrty = base[1]
        ptr = self.item_pointer(base, index)
        arrayobj.store_item(self.c, self.b, arrty, self.c.cast(self.b, val, ty, arrty.dtype), ptr)

    # --- references ----------------------------------------------------------------------------
    def owned(self, val, ty, owned):
        if not owned:
            self.c.nrt.incref(self.b, ty, val)
        return val

    def release(self, val, ty, owned):
        if owned:
            self.c.nrt.decref(self.b, ty, val)


def _stored_once(fn) -> frozenset:
    """The variables of `fn` stored by one statement that runs at most once per call (not in
    a loop): storing into one has no earlier value to release (references are otherwise
    Numba's, module doc). Straight-line glue assigns nearly all its variables this way
    (bench/RESULTS.md, "Repeated glue runs": a 2-layer encoder's entries make half as many
    NRT calls with this, the tuple rule and the runs)."""
    stores: dict = {}

    def walk(node, looped):
        if isinstance(node, (ast.For, ast.While)):
            for child in ast.iter_child_nodes(node):
                walk(child, True)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + (2 if looped else 1)
        for child in ast.iter_child_nodes(node):
            walk(child, looped)

    for stmt in fn.body:
        walk(stmt, False)
    return frozenset(n for n, k in stores.items() if k == 1)


def emit(context, builder, typed, args):
    """Lower `typed` at the builder's position; returns its result (a new reference)."""
    return _Lower(context, builder, typed, args).run()
