"""Candidate statements for the generator, one builder per kind of statement.

Owns what a program may say: calls of the catalog's forms (OpInfo call patterns, with program
values in their tensor slots), Python operators (including reflected ones and Python numbers),
indexing reads (ints, slices with steps, None, Ellipsis, tensor and mask indices), in-place
methods and augmented assignments, index writes, scalar arithmetic on int/float arguments, and
tuple unpacking of a tensor. Builders only propose: the generator runs each candidate eagerly and
keeps what eager accepts. `settle` rewrites a statement whose call returned a tuple or list so
that its targets are plain values.
"""
from __future__ import annotations

import inspect

import numpy as np

import jitorch

from . import catalog
from .catalog import render_literal
from .program import Stmt

CATEGORIES = (("form", 0.42), ("operator", 0.16), ("index", 0.1), ("inplace", 0.12),
              ("setitem", 0.1), ("scalar", 0.04), ("unpack", 0.02), ("view", 0.04))
KINDS = (("elementwise", 0.38), ("reduction", 0.2), ("shape", 0.14), ("composite", 0.12),
         ("index", 0.07), ("linalg", 0.06), ("other", 0.03))
BINOPS = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", "==", "!=",
          "<", "<=", ">", ">=")
DIM_NAMES = {"dim", "dim0", "dim1", "dim2", "axis", "start_dim", "end_dim", "source",
             "destination", "dims"}
_FORMS_BY_KIND: dict = {}
for _i, _f in enumerate(catalog.FORMS):
    _FORMS_BY_KIND.setdefault(_f.kind, []).append(_i)
_INPLACE_FORMS = [i for i, f in enumerate(catalog.FORMS)
                  if f.generic and not f.is_method and f.args and f.args[0].kind == "T"
                  and f.lowered and catalog.inplace_method(f.spell.rsplit(".", 1)[-1])]


def build(g):
    cat = g.weighted(CATEGORIES)
    if cat == "scalar" and not g.scalars():
        cat = "operator"
    if not g.tensors():
        return None
    return _BUILDERS[cat](g)


# --- forms ---------------------------------------------------------------------------------------
def _param_names(form):
    fn = form.info.fn()
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _mutate_dim(g, name, value, rank):
    """A dim-like literal re-drawn for the operand's rank (sometimes out of range)."""
    if name not in DIM_NAMES or rank is None or not g.coin(0.5):
        return value
    hi = max(rank, 1)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(g.rng.integers(-hi, hi + (1 if g.coin(0.05) else 0)))
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value) and rank:
        k = int(g.rng.integers(1, rank + 1))
        return tuple(int(d) for d in g.rng.choice(rank, size=k, replace=False))
    return value


def _fill_tensor(g, form, fi, slot, where, like):
    """A program value (or a new argument) for one tensor slot of a form."""
    kind_ok = (lambda m: m.dtype.np.kind == slot.dtype.kind or
               (slot.dtype.kind in "fc" and m.dtype.is_floating_point))
    if form.generic:
        pick = g.pick(lambda m: kind_ok(m) and len(m.shape) <= 4)
        if pick is not None and g.coin(0.8):
            return pick
        dtype = g.dtype if g.dtype.np.kind == slot.dtype.kind or (
            slot.dtype.kind == "f" and g.dtype.is_floating_point) else \
            jitorch._dtype.from_numpy_dtype(slot.dtype)
        if slot.dtype.kind in "iu" and form.kind == "index":
            return _sample_arg(g, form, fi, where)
        rank = slot.rank if like is None or g.coin(0.5) else len(like)
        return g.add_arg("tensor", dtype, g.free_dims(rank, like))
    sample = g.sample_value((fi,) + where, 0)
    if sample is None:
        return None
    exact = g.tensors(lambda m: m.shape == sample.shape and m.dtype.np == sample.dtype)
    if exact and g.coin(0.6):
        return g.choice(exact)
    same_rank = g.tensors(lambda m: len(m.shape) == sample.ndim and m.dtype.np == sample.dtype)
    if same_rank and g.coin(0.2):
        return g.choice(same_rank)
    return _sample_arg(g, form, fi, where)


def _sample_arg(g, form, fi, where):
    v = g.sample_value((fi,) + where, 0)
    if v is None or not isinstance(v, np.ndarray):
        return None
    return g.add_arg("tensor", jitorch._dtype.from_numpy_dtype(v.dtype), v.shape,
                     origin=(fi,) + where, value=v.copy())


def _pick_form(g, kinds=KINDS, pool=None):
    if pool is None:
        if g.focus and g.coin(0.7):
            kinds = tuple((k, w) for k, w in kinds if k in g.focus) or kinds
        kind = g.weighted(kinds)
        pool = _FORMS_BY_KIND.get(kind, [])
    if not pool:
        return None
    want = g.dtype.np.kind
    lowered_only = g.coin(0.85)
    for _ in range(12):
        fi = g.choice(pool)
        f = catalog.FORMS[fi]
        if lowered_only and not f.lowered:
            continue
        if f.sample_dtype.kind == want or g.coin(0.15):
            return fi
    return None


def form_stmt(g, fi=None):
    fi = _pick_form(g) if fi is None else fi
    if fi is None:
        return None
    form = catalog.FORMS[fi]
    names = _param_names(form)
    reads, parts, like, rank = [], [], None, None
    for i, slot in enumerate(form.args):
        pname = names[i] if i < len(names) else ""
        if slot.kind == "T":
            v = _fill_tensor(g, form, fi, slot, ("arg", i), like)
            if v is None:
                return None
            if like is None:
                like, rank = g.meta[v].shape, len(g.meta[v].shape)
            parts.append("{r%d}" % len(reads))
            reads.append(v)
        elif slot.kind == "L":
            items = []
            cands = g.tensors(lambda m: len(m.shape) == (slot.ranks[0] if slot.ranks else 1))
            for j in range(len(slot.ranks)):
                if cands and g.coin(0.6):
                    v = g.choice(cands)
                else:
                    v = _sample_arg(g, form, fi, ("arg", i, j))
                if v is None:
                    return None
                items.append("{r%d}" % len(reads))
                reads.append(v)
            parts.append("[" + ", ".join(items) + "]")
        else:
            parts.append(render_literal(_mutate_dim(g, pname, slot.value, rank)))
    for key, slot in form.kwargs.items():
        if slot.kind == "T":
            v = _fill_tensor(g, form, fi, slot, ("kw", key), like)
            if v is None:
                return None
            parts.append(f"{key}={{r{len(reads)}}}")
            reads.append(v)
        else:
            parts.append(f"{key}={render_literal(_mutate_dim(g, key, slot.value, rank))}")
    if form.is_method:
        call = f"{parts[0]}{form.spell}({', '.join(parts[1:])})"
    else:
        call = f"{form.spell}({', '.join(parts)})"
    return Stmt("{t} = " + call, tuple(reads), (g.new_var(),), tag=f"form:{form.name}")


# --- operators -----------------------------------------------------------------------------------
def scalar_value(g, kind):
    if kind == "int":
        return int(g.choice((-3, -2, -1, 0, 1, 2, 3, 5)))
    if kind == "float":
        return float(g.choice((-2.5, -1.0, -0.5, 0.0, 0.5, 1.5, 3.0)))
    return bool(g.coin(0.5))


def _literal(g):
    return render_literal(g.choice((2, -1, 0, 3, 2.5, -0.5, 0.0, True, False, 1e10, 300.5)))


def _operand(g, left):
    """The other operand of a binary operator: a value, a new argument, a number, a scalar."""
    m = g.meta[left]
    r = g.rng.random()
    if r < 0.45:
        return ("var", g.pick())
    if r < 0.65:
        rank = int(g.rng.integers(0, len(m.shape) + 1))
        dt = g.dtype if g.coin(0.8) else g.meta[g.pick()].dtype
        return ("var", g.add_arg("tensor", dt, g.free_dims(rank, m.shape)))
    if r < 0.85 or not g.scalars():
        return ("lit", _literal(g))
    return ("var", g.choice(g.scalars()))


def operator_stmt(g):
    left = g.pick()
    if g.coin(0.15):
        op = g.choice(("-", "~", "abs", "+"))
        code = "{t} = abs({r0})" if op == "abs" else "{t} = " + op + "{r0}"
        return Stmt(code, (left,), (g.new_var(),), tag=f"unary:{op}")
    op = g.choice(BINOPS)
    if op == "@":
        m = g.meta[left]
        rank = 1 if len(m.shape) <= 1 or g.coin(0.4) else 2
        inner = m.shape[-1] if m.shape else 1
        by_size = {v: k for k, v in g.sizes.items()}
        dims = (by_size.get(inner, inner),) + ((g.symbol(),) if rank == 2 else ())
        right = g.add_arg("tensor", g.meta[left].dtype, dims)
        return Stmt("{t} = {r0} @ {r1}", (left, right), (g.new_var(),), tag="op:@")
    kind, other = _operand(g, left)
    if kind == "lit":
        if g.coin(0.3):
            return Stmt("{t} = " + other + f" {op} {{r0}}", (left,), (g.new_var(),),
                        tag=f"rop:{op}")
        return Stmt("{t} = {r0} " + op + " " + other, (left,), (g.new_var(),), tag=f"op:{op}")
    if g.coin(0.2) and g.meta[other].kind != "tensor":
        return Stmt("{t} = {r1} " + op + " {r0}", (left, other), (g.new_var(),),
                    tag=f"rop:{op}")
    return Stmt("{t} = {r0} " + op + " {r1}", (left, other), (g.new_var(),), tag=f"op:{op}")


# --- indexing ------------------------------------------------------------------------------------
def _index(g, shape, allow_tensor=True):
    """Index source (a tuple of ints, slices, None, Ellipsis) for a tensor of `shape`; the
    parts that are tensors come back as extra reads."""
    parts, reads = [], []
    n = len(shape)
    k = int(g.rng.integers(1, max(n, 1) + 1))
    used_ellipsis = False
    for d in range(k):
        size = shape[d] if d < n else 1
        r = g.rng.random()
        if r < 0.25 and size:
            i = int(g.rng.integers(-size, size + (1 if g.coin(0.05) else 0)))
            parts.append(str(i))
        elif r < 0.65:
            a = g.choice(("", "", "1", "-1", "0", "2"))
            b = g.choice(("", "", "-1", "2", "3"))
            c = g.choice(("", "", "", "2", "3"))
            parts.append(f"{a}:{b}" + (f":{c}" if c else ""))
        elif r < 0.75:
            parts.append("None")
        elif r < 0.82 and not used_ellipsis:
            parts.append("...")
            used_ellipsis = True
        elif allow_tensor and r < 0.92:
            cands = g.tensors(lambda m: m.dtype.np.kind in "iu" and len(m.shape) <= 2)
            if cands and g.coin(0.5):
                v = g.choice(cands)
            else:
                by_size = {v: k for k, v in g.sizes.items()}
                bound = by_size.get(size, size)
                v = g.add_arg("tensor", jitorch.int64, g.free_dims(
                    int(g.rng.integers(0, 2))), bound=bound)
            parts.append("{r%d}" % (len(reads) + 1))
            reads.append(v)
        else:
            parts.append(":")
    return ", ".join(parts), reads


def index_stmt(g):
    src = g.pick()
    m = g.meta[src]
    if g.coin(0.12):
        masks = g.tensors(lambda x: x.dtype.name == "bool" and x.shape == m.shape)
        if masks:
            return Stmt("{t} = {r0}[{r1}]", (src, g.choice(masks)), (g.new_var(),),
                        tag="index:mask")
    idx, reads = _index(g, m.shape)
    return Stmt("{t} = {r0}[" + idx + "]", (src,) + tuple(reads), (g.new_var(),), tag="index")


def view_stmt(g):
    """View-producing methods chained (transposed, sliced, viewed): reads through strides."""
    src = g.pick()
    m = g.meta[src]
    n = len(m.shape)
    opts = ["{r0}.t()" if n <= 2 else "{r0}.transpose(0, -1)", "{r0}.view(-1)",
            "{r0}.reshape(-1)", "{r0}.flatten()", "{r0}.unsqueeze(0)", "{r0}.squeeze()",
            "{r0}.contiguous()", "{r0}[None]", "{r0}.mT" if n >= 2 else "{r0}.T"]
    chain = g.choice(opts)
    if g.coin(0.5):
        chain = g.choice(opts).replace("{r0}", "(" + chain + ")")
    return Stmt("{t} = " + chain, (src,), (g.new_var(),), tag="view")


# --- writes --------------------------------------------------------------------------------------
def _write_target(g):
    args = [a.name for a in g.prog.args if a.kind == "tensor" and a.name in g.meta]
    locs = [t for t in g.tensors() if t not in args]
    if args and (not locs or g.coin(0.6)):
        return g.choice(args)
    return g.choice(locs) if locs else None


def inplace_stmt(g):
    tgt = _write_target(g)
    if tgt is None:
        return None
    r = g.rng.random()
    if r < 0.25:
        op = g.choice(("+=", "-=", "*=", "/="))
        kind, other = _operand(g, tgt)
        if kind == "lit":
            return Stmt("{r0} " + op + " " + other, (tgt,), (), (0,), tag=f"aug:{op}")
        return Stmt("{r0} " + op + " {r1}", (tgt, other), (), (0,), tag=f"aug:{op}")
    if r < 0.4:
        form = g.choice(("{r0}.zero_()", "{r0}.fill_(" + _literal(g) + ")", "{r0}.neg_()",
                         "{r0}.clamp_(min=-1.0, max=2)", "{r0}.abs_()", "{r0}.relu_()"))
        return Stmt(form, (tgt,), (), (0,), tag="inplace:" + form.split(".")[1].split("(")[0])
    if r < 0.5:
        src = g.pick()
        return Stmt("{r0}.copy_({r1})", (tgt, src), (), (0,), tag="inplace:copy_")
    fi = g.choice(_INPLACE_FORMS)
    stmt = form_stmt(g, fi)
    if stmt is None:
        return None
    form = catalog.FORMS[fi]
    name = form.spell.rsplit(".", 1)[-1]
    # `jitorch.add({r0}, ...)` -> `{r0}.add_(...)` on the write target
    call = stmt.fmt.split(" = ", 1)[1]
    inner = call[len(form.spell) + 1:-1]
    rest = inner.split(", ", 1)[1] if ", " in inner else ""
    reads = (tgt,) + stmt.reads[1:]
    fmt = "{r0}." + name + "_(" + rest + ")"
    if g.coin(0.3):
        return Stmt("{t} = " + fmt, reads, (g.new_var(),), (0,), tag=f"inplace:{name}_")
    return Stmt(fmt, reads, (), (0,), tag=f"inplace:{name}_")


def setitem_stmt(g):
    tgt = _write_target(g)
    if tgt is None:
        return None
    m = g.meta[tgt]
    idx, reads = _index(g, m.shape, allow_tensor=g.coin(0.3))
    reads = [tgt] + reads
    op = "=" if g.coin(0.75) else g.choice(("+=", "*=", "-="))
    r = g.rng.random()
    if r < 0.5:
        value = _literal(g)
    elif r < 0.8 or not g.scalars():
        value = "{r%d}" % len(reads)
        reads.append(g.pick())
    else:
        value = "{r%d}" % len(reads)
        reads.append(g.choice(g.scalars()))
    return Stmt("{r0}[" + idx + "] " + op + " " + value, tuple(reads), (), (0,),
                tag="setitem" + ("" if op == "=" else op))


# --- scalars and unpacking -----------------------------------------------------------------------
def scalar_stmt(g):
    a = g.choice(g.scalars())
    op = g.choice(("+", "-", "*", "/", "//", "%", "**", "<", "=="))
    if g.coin(0.5) and len(g.scalars()) > 1:
        b = g.choice(g.scalars())
        return Stmt("{t} = {r0} " + op + " {r1}", (a, b), (g.new_var(),), tag=f"scalar:{op}")
    lit = render_literal(g.choice((2, -1, 3, 0.5, -2)))
    return Stmt("{t} = {r0} " + op + " " + lit, (a,), (g.new_var(),), tag=f"scalar:{op}")


def unpack_stmt(g):
    cands = g.tensors(lambda m: len(m.shape) >= 1)
    if not cands:
        return None
    return Stmt("{t}, {t1} = {r0}", (g.choice(cands),), (g.new_var(), g.new_var()),
                tag="unpack")


_BUILDERS = {"form": form_stmt, "operator": operator_stmt, "index": index_stmt,
             "inplace": inplace_stmt, "setitem": setitem_stmt, "scalar": scalar_stmt,
             "unpack": unpack_stmt, "view": view_stmt}


def settle(g, stmt, env):
    """Make every target of `stmt` a tensor or a Python number: a call that returned a tuple or
    list is unpacked (two elements) or indexed. -> the new env, or None to drop the stmt."""
    if not stmt.targets:
        return env
    v = env.get(stmt.targets[0])
    if isinstance(v, (tuple, list)) and len(stmt.targets) == 1:
        g.prog.body.pop()
        if not v:
            return None
        tag = stmt.tag + "+tuple"  # the call returns a tuple (or list)
        if len(v) == 2 and all(isinstance(x, jitorch.Tensor) for x in v):
            new = Stmt(stmt.fmt.replace("{t} = ", "{t}, {t1} = ", 1), stmt.reads,
                       stmt.targets + (g.new_var(),), stmt.writes, tag)
        else:
            k = int(g.rng.integers(0, len(v)))
            new = Stmt(stmt.fmt.replace("{t} = ", "{t} = (", 1) + f")[{k}]", stmt.reads,
                       stmt.targets, stmt.writes, tag)
        res = g.try_stmt(new)
        if isinstance(res, Exception):
            return None
        return settle(g, new, res)
    for t in stmt.targets:
        x = env.get(t)
        if not isinstance(x, (jitorch.Tensor, bool, int, float)):
            g.prog.body.pop()
            return None
    if stmt.tag.startswith("form:") and not isinstance(env.get(stmt.targets[0]), jitorch.Tensor):
        stmt.tag += "+scalar"  # the call returned a Python number (is_conj, equal, ...)
    if stmt.tag.startswith("form:") and not stmt.tag.endswith("+alias") and _aliases(stmt, env):
        # the call returned (a view of) one of its operands: writes through it are writes to
        # the operand (the compiler must know, from the op's declaration)
        stmt.tag += "+alias"
    return env


def _aliases(stmt, env) -> bool:
    outs = [env.get(t) for t in stmt.targets]
    ins = [env.get(r) for r in stmt.reads]
    return any(isinstance(o, jitorch.Tensor) and isinstance(i, jitorch.Tensor) and
               np.shares_memory(o._data, i._data) for o in outs for i in ins)
