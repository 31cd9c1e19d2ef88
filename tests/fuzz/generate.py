"""The program generator: random straight-line programs that eager mode accepts on input set 0.

Owns program generation and the input sets of a program. A program is grown one statement at a
time; each candidate statement (built by `statements.py`) is run eagerly on input set 0 together
with the statements before it, and kept only if eager accepts it, so every program is a valid
eager program on set 0 (a candidate eager rejects may be kept as the last statement, so error
paths are compared too). What eager returns (dtypes, shapes, contiguity) steers the next choice.

Programs are specialised by the compiler on dtype/rank/layout, not sizes, so one program is run
on several input sets of the same dtypes and ranks: set 0 ("base"), and sets derived from it
with new values, new sizes (the program's size symbols, including 0 and 1, and sometimes a long
dim), strided/expanded layouts, aliasing arguments and edge values (nan, inf, dtype limits,
out-of-range indices).

Each program is a function of (seed, index) only, so any program can be rebuilt from its id.
"""
from __future__ import annotations

import re

import numpy as np

import jitorch

from . import catalog, statements, values
from .program import Arg, Program, Stmt
from .values import InputSet

DTYPES = (("float32", 0.34), ("float64", 0.14), ("int64", 0.14), ("int32", 0.08),
          ("int16", 0.03), ("int8", 0.05), ("uint8", 0.05), ("bool", 0.07),
          ("float16", 0.02), ("bfloat16", 0.015))
SIZES = (0, 1, 1, 2, 3, 4, 5, 6, 7, 9)
LONG = (257, 1031, 4099, 65537)  # a long dim: reductions change algorithm past a few hundred


def dtype_named(name):
    return getattr(jitorch, name)


class Meta:
    """What a variable holds after eager ran the program so far on set 0."""
    __slots__ = ("kind", "dtype", "shape", "contig")

    def __init__(self, v):
        if isinstance(v, jitorch.Tensor):
            self.kind, self.dtype, self.shape = "tensor", v.dtype, tuple(v.shape)
            self.contig = v.is_contiguous()
        else:
            self.kind = {bool: "bool", int: "int", float: "float"}.get(type(v), "other")
            self.dtype, self.shape, self.contig = None, (), True


def _exec_body(prog: Program, args):
    """Run the program's statements eagerly; -> dict of every variable (raises as eager)."""
    src = "def _body(" + prog.signature() + "):\n"
    src += "".join("    " + s.line() + "\n" for s in prog.body) + "    return dict(locals())\n"
    ns = {"jitorch": jitorch, "np": np}
    exec(compile(src, "<fuzz-gen>", "exec"), ns)
    return ns["_body"](*args)


class Generator:
    def __init__(self, seed: int, index: int, *, max_stmts: int = 6, n_sets: int = 5,
                 long_dims: bool = False, focus: tuple = ()):
        self.rng = np.random.default_rng([seed, index])
        self.focus = tuple(focus)  # registry kinds most form calls are drawn from
        self.seed, self.index = seed, index
        self.max_stmts, self.n_sets, self.long_dims = max_stmts, n_sets, long_dims
        self.sizes: dict = {}
        self.prog = Program(args=[])
        self.base = InputSet(values=[], layouts=[], note="base")
        self.meta: dict = {}
        self._samples: dict = {}
        self._nvar = 0
        self.ended_with_error = False

    # -- random helpers ------------------------------------------------------------------------
    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def weighted(self, pairs):
        ws = np.array([w for _, w in pairs], dtype=float)
        return pairs[int(self.rng.choice(len(pairs), p=ws / ws.sum()))][0]

    def new_var(self) -> str:
        self._nvar += 1
        return f"v{self._nvar - 1}"

    # -- arguments -----------------------------------------------------------------------------
    def symbol(self) -> str:
        """A size symbol: an existing one mostly, a new one (distinct set-0 size) sometimes."""
        free = [v for v in (2, 3, 4, 5) if v not in self.sizes.values()]
        if self.sizes and (not free or self.coin(0.7)):
            return self.choice(sorted(self.sizes))
        name = f"n{len(self.sizes)}"
        self.sizes[name] = self.choice(free)
        return name

    def free_dims(self, rank: int, like: tuple | None = None) -> tuple:
        """Dims for a new free tensor argument: symbols and 1s, broadcastable against `like`
        (a set-0 shape) when given."""
        if like is None:
            return tuple(1 if self.coin(0.15) else self.symbol() for _ in range(rank))
        by_size = {v: k for k, v in self.sizes.items()}
        dims = []
        for d in like[len(like) - rank:] if rank <= len(like) else like:
            if self.coin(0.2):
                dims.append(1)
            else:
                dims.append(by_size.get(d, d))
        while len(dims) < rank:
            dims.insert(0, self.symbol() if self.coin(0.5) else 1)
        return tuple(dims)

    def add_arg(self, kind: str, dtype=None, dims=(), origin=None, value=None, bound=None) -> str:
        name = f"a{len(self.prog.args)}"
        arg = Arg(name, kind, dtype, len(dims) if kind == "tensor" else 0, tuple(dims), origin,
                  bound)
        self.prog.args.append(arg)
        if kind == "tensor":
            if value is None:
                value = self.draw_free(arg, dict(self.sizes), self.rng)
            self.base.values.append(value)
            self.base.layouts.append(("contig",))
        else:
            self.base.values.append(value)
            self.base.layouts.append(None)
        self.base.sizes = dict(self.sizes)
        self.meta[name] = Meta(values.build(InputSet([value], [self.base.layouts[-1]]))[0][0])
        return name

    def shape_of(self, arg: Arg, sizes: dict) -> tuple:
        return tuple(sizes[d] if isinstance(d, str) else d for d in arg.dims)

    def draw_free(self, arg: Arg, sizes: dict, rng, edge: bool = False):
        shape = self.shape_of(arg, sizes)
        if arg.bound is not None:  # an index argument: values valid for the bounded dim
            n = sizes[arg.bound] if isinstance(arg.bound, str) else arg.bound
            lo, hi = (-n, n) if n else (0, 1)
            a = rng.integers(lo, hi, size=shape)
            if edge and a.size:
                a.flat[int(rng.integers(0, a.size))] = self.choice((n, -n - 1, 10 ** 6))
            return a.astype(arg.dtype.np)
        return values.draw(rng, arg.dtype, shape, edge)

    def sample_args(self, form, seed: int):
        """The form's sample drawn with `seed` in the program's dtype for it (cached)."""
        key = (id(form), seed)
        if key not in self._samples:
            try:
                self._samples[key] = catalog.redraw(form, seed)
            except Exception:
                self._samples[key] = None
        return self._samples[key]

    def sample_value(self, origin, seed: int):
        form = catalog.FORMS[origin[0]]
        s = self.sample_args(form, seed)
        if s is None:
            return None
        where = origin[1:]
        v = s.args[where[1]] if where[0] == "arg" else s.kwargs[where[1]]
        if len(where) > 2:
            v = v[where[2]]
        return v

    # -- growing the program -------------------------------------------------------------------
    def try_stmt(self, stmt: Stmt):
        """Append `stmt` if eager accepts it on set 0: -> the variables after it, or the
        exception eager raised (the program is then left as it was)."""
        self.prog.body.append(stmt)
        try:
            args, _ = values.build(self.base)
            env = _exec_body(self.prog, args)
        except Exception as e:
            self.prog.body.pop()
            return e
        return env

    def commit(self, env):
        self.meta = {k: Meta(v) for k, v in env.items() if not k.startswith("_")}

    def tensors(self, pred=None):
        return [k for k, m in self.meta.items() if m.kind == "tensor" and
                (pred is None or pred(m))]

    def scalars(self):
        return [k for k, m in self.meta.items() if m.kind in ("int", "float", "bool")]

    def generate(self):
        """-> (Program, [InputSet]); also sets `self.ended_with_error`."""
        dt = dtype_named(self.weighted(DTYPES))
        self.dtype = dt
        for _ in range(int(self.rng.integers(1, 3))):
            self.add_arg("tensor", dt, self.free_dims(self.weighted(
                ((0, 0.1), (1, 0.3), (2, 0.4), (3, 0.2))),
                like=self.base_shape()))
        if self.coin(0.25):
            kind = self.weighted((("int", 0.5), ("float", 0.4), ("bool", 0.1)))
            self.add_arg(kind, value=statements.scalar_value(self, kind))
        n = int(self.rng.integers(2, self.max_stmts + 1))
        tries = 0
        while len(self.prog.body) < n and tries < 8 * n:
            tries += 1
            stmt = statements.build(self)
            if stmt is None:
                continue
            res = self.try_stmt(stmt)
            if isinstance(res, Exception):
                if self.coin(0.04) and len(self.prog.body) >= 1:
                    self.prog.body.append(stmt)  # an error path: the program ends here
                    self.ended_with_error = True
                    break
                continue
            res = statements.settle(self, stmt, res)
            if res is None:
                continue
            self.commit(res)
        self.prog.returns = self.pick_returns()
        self.drop_unused_args()
        return self.prog, self.input_sets()

    def base_shape(self):
        shapes = [m.shape for m in self.meta.values() if m.kind == "tensor"]
        return max(shapes, key=len) if shapes else None

    def pick_returns(self) -> tuple:
        """Every value nothing later reads (no statement is dead code), at most 6."""
        body = self.prog.body
        if self.ended_with_error:  # the failing statement's result (or what it writes) is live
            last = body[-1]
            return tuple(last.targets[:1]) or tuple(last.reads[w] for w in last.writes[:1])
        out = self.prog.live_returns(
            lambda v: v in self.meta and self.meta[v].kind in ("tensor", "int", "float", "bool"))
        if not out:
            out = tuple(self.tensors()[-1:])
        return out[:6]

    def pick(self, pred=None):
        """A tensor variable, the recent ones more often (so statements chain)."""
        ts = self.tensors(pred)
        if not ts:
            return None
        if len(ts) > 1 and self.coin(0.6):
            return ts[-1] if self.coin(0.6) else ts[-2]
        return self.choice(ts)

    def drop_unused_args(self):
        text = "\n".join(s.line() for s in self.prog.body) + "\n" + " ".join(self.prog.returns)
        used = set(re.findall(r"\ba\d+\b", text))
        keep = [i for i, a in enumerate(self.prog.args) if a.name in used]
        if not keep:
            keep = [0]
        if len(keep) == len(self.prog.args):
            return
        self.prog.args = [self.prog.args[i] for i in keep]
        self.base.values = [self.base.values[i] for i in keep]
        self.base.layouts = [self.base.layouts[i] for i in keep]

    # -- input sets ----------------------------------------------------------------------------
    def input_sets(self):
        from .mutate import derive_sets
        return [self.base] + derive_sets(self, self.n_sets - 1)


def generate(seed: int, index: int, **kw):
    """Program `index` of run `seed`: -> (Program, [InputSet], Generator)."""
    g = Generator(seed, index, **kw)
    prog, sets = g.generate()
    return prog, sets, g
