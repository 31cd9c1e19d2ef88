"""The plan cache: what a specialisation was built into, on disk, so that a warm process skips
the passes, autodiff and code generation and goes straight to loading the programs.

Owns `key(sf, spec_key, ...)`, `load_plain` / `load_autodiff` (a hit: the entry built from the
record) and `store_plain` / `store_autodiff` (after a build whose programs are compiled).

Key: a SHA-256 of everything the build reads: a fingerprint of the frontend's graph (every
node's op, attributes with their full values, tensor constants by their bytes, callee graphs
recursively, value types and names, the graph's own attributes), the specialisation key and the
static values, under grad the 0/1/many shape pattern of the arguments (autodiff's own reuse
key), the registered settings (`_settings.snapshot`), the JITORCH_* environment, the
numba/llvmlite/numpy/jitorch versions and a stamp of every jitorch source file (path, size,
mtime). A graph holding anything that cannot be described by value (a user function, an object)
gets no key: it is built as always. A change of the user's source changes the graph, so misses.

Record (`<cache dir>/plans/<key>.json`): JSON, with a SHA-256 of its bytes checked before it is
parsed, holding no code: the names of the program modules (content-addressed: `<cache
dir>/<name>.py`), the entry function's name, the output types as IR type text and, for an
autodiff pair, the `Differentiated` fields the runtime reads per call. A hit loads the modules
with `cache.load_named`, which executes a file only when its bytes hash to its name (the trust
model of the program cache itself: what runs is exactly what that name was generated as), and
Numba loads their machine code from its own checked cache. A record that is damaged, of another
format, names a module that is missing or altered, or was written half (files are written to a
temp file and renamed) is a miss: the specialisation is built as always and the record
rewritten. Anything else that fails while a record loads is a bug, not a miss: it is counted
(`stats()["plan_errors"]`) and warned about once per process, and the specialisation is built.

What a hit does not have (the optimised graphs, the autodiff pass's graphs) is made when asked
for (`_WarmEntry.graph`, `_WarmAutodiff._materialise`): the interpreter tier, another shape
pattern, `create_graph`, `graph_for`. Those build it exactly as a miss would have.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import types as _pytypes

import numpy as np

from ... import _dtype as dt, _fork, _settings
from ..._tensor import Tensor
from .. import ir
from . import stats
from .autodiff import AutodiffEntry, _LazyFirst
from .entry import _Entry

FORMAT = 2  # 2: an autodiff pair saves its int scalars as one list (passes/autodiff_pack.py)
_MAGIC = b"jitorch-plan-1\n"
# environment variables that do not change what is generated (where and how it is stored,
# logged or compiled): every other JITORCH_* variable is part of the key
_ENV_IGNORED = frozenset({"JITORCH_CACHE_DIR", "JITORCH_LOG", "JITORCH_COMPILE"})
_stamp: list = []


# objects described by their attributes (each described by value in turn)
_BY_STATE = frozenset({("jitorch.script.frontend.call", "KwCall"),
                       ("jitorch.script.frontend.index", "GetItem"),
                       ("jitorch.script.frontend.index", "SetItem")})


class _Uncacheable(Exception):
    """The graph holds something that cannot be described by value."""


# --- the key -----------------------------------------------------------------------------------
def _sources_stamp() -> str:
    """Path, size and mtime of every jitorch source file (once per process)."""
    if not _stamp:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        h = hashlib.sha256()

        # (os.scandir, not os.walk + os.stat + relpath: ~400 files, a warm start pays this)
        def walk(d, rel):
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
            lines = []
            for e in entries:
                if e.name.endswith(".py") and e.is_file():
                    st = e.stat()
                    lines.append(f"{rel}{e.name}:{st.st_size}:{st.st_mtime_ns}\n")
            h.update("".join(lines).encode())
            for e in entries:
                if e.name != "__pycache__" and e.is_dir() and not e.is_symlink():  # (os.walk's)
                    walk(e.path, f"{rel}{e.name}/")
        walk(root, "")
        _stamp.append(h.hexdigest())
    return _stamp[0]


def _lit(v, memo: dict) -> str:
    """`v` described by value, or _Uncacheable."""
    if v is None or isinstance(v, (bool, int, str, complex)):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, float):
        return f"float:{v.hex()}" if v == v else "float:nan"
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__}(" + ",".join(_lit(x, memo) for x in v) + ")"
    if isinstance(v, dict):
        return "dict(" + ",".join(f"{_lit(k, memo)}={_lit(x, memo)}" for k, x in v.items()) + ")"
    if isinstance(v, (dt.dtype, ir.Type)):
        return f"{type(v).__name__}:{v!r}:{v}"
    if isinstance(v, Tensor):
        a = np.ascontiguousarray(v._data)
        return (f"tensor:{v._dtype!r}:{a.shape}:{v._requires_grad}:"
                f"{hashlib.sha256(a.tobytes()).hexdigest()}")
    if isinstance(v, ir.Graph):
        return "graph:" + _graph_fp(v, memo)
    if isinstance(v, ir.Block):
        return "block"  # (its contents are the node's blocks, fingerprinted with the node)
    if isinstance(v, (_pytypes.FunctionType, _pytypes.BuiltinFunctionType)):
        mod = getattr(v, "__module__", None) or ""
        qn = getattr(v, "__qualname__", "")
        top = mod.split(".")[0]
        # jitorch's own functions (their source is in the stamp) and builtins, by name; a
        # function made at run time or holding state of its own cannot be named
        if "<" in qn or not (top == "jitorch" or isinstance(v, _pytypes.BuiltinFunctionType)
                             and top in ("math", "builtins", "operator", "_operator")):
            raise _Uncacheable(f"{mod}.{qn}")
        cells = [c.cell_contents for c in getattr(v, "__closure__", None) or ()]
        return f"fn:{mod}.{qn}:" + _lit([getattr(v, "__defaults__", None), getattr(
            v, "__kwdefaults__", None), cells], memo)
    if isinstance(v, np.generic):
        return f"np:{v.dtype.str}:{v.tobytes().hex()}"
    if isinstance(v, slice):
        return f"slice({_lit(v.start, memo)},{_lit(v.stop, memo)},{_lit(v.step, memo)})"
    if v is Ellipsis:
        return "Ellipsis"
    cls = type(v)
    if (cls.__module__, cls.__name__) in _BY_STATE:
        # the frontend's call objects of a prim::PythonOp: what they call, by value
        return f"{cls.__name__}(" + _lit(sorted(vars(v).items()), memo) + ")"
    if cls.__module__.startswith("jitorch._device") and cls.__name__ == "device":
        return f"device:{v!r}"
    raise _Uncacheable(cls.__name__)


def _graph_fp(g: ir.Graph, memo: dict) -> str:
    got = memo.get(id(g))
    if got is not None:
        return got
    memo[id(g)] = "recursive"
    num: dict = {}
    lines = [f"graph {g.name!r}"]

    def val(v):
        n = num.get(v.uid)
        if n is None:
            n = num[v.uid] = len(num)
        return f"%{n}:{v.name!r}:{v.type}:{v.type!r}"

    def block(b, ind):
        lines.append(ind + "params " + ",".join(val(p) for p in b.params))
        for n in b.nodes:
            attrs = ",".join(f"{k}={_lit(a, memo)}" for k, a in n.attrs.items())
            ins = ",".join(f"%{num[v.uid]}" if v.uid in num else "free:" + val(v)
                           for v in n.inputs)
            outs = ",".join(val(o) for o in n.outputs)
            lines.append(f"{ind}{outs} = {n.op}[{attrs}]({ins})")
            for sub in n.blocks:
                block(sub, ind + " ")
        lines.append(ind + "return " + ",".join(
            f"%{num[v.uid]}" if v.uid in num else "free:" + val(v) for v in b.returns))

    block(g.block, "")
    for k in sorted(vars(g)):
        if k not in ("block", "name", "capabilities"):
            lines.append(f"attr {k}={_lit(getattr(g, k), memo)}")
    fp = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    memo[id(g)] = fp
    return fp


def _pristine() -> bool:
    """Is the build the real one (no seam replaced: tests feed hand-written programs through
    `programs._lower`)? A record is only ever read or written for the real pipeline."""
    from ..codegen import target
    from ..kernels import cache
    from . import programs
    return programs._lower is programs._LOWER and programs.get_target is target.get_target \
        and cache.load_module is cache._LOAD_MODULE


def key(sf, spec_key, static, args, need_grad: bool) -> str | None:
    """The plan key of this specialisation, or None (not cacheable: see the module doc)."""
    if os.environ.get("JITORCH_PLAN_CACHE", "1") == "0" or not _pristine():
        return None
    try:
        from ..kernels import cache
        if any(isinstance(p, tuple) and p and p[0] == "T" and str(p[5]) != "cpu"
               for p in spec_key):
            return None  # (the CPU target's programs only)
        memo: dict = {}
        parts = [f"format={FORMAT}", cache._versions(), _sources_stamp(),
                 _graph_fp(sf.graph, memo), _lit(list(spec_key), memo),
                 _lit(sorted((k, v) for k, v in (static or {}).items()), memo),
                 _lit([sf._kinds, sorted(sf._static), sf._grads, need_grad], memo),
                 _lit(list(_settings.snapshot()), memo),
                 _lit(sorted((k, v) for k, v in os.environ.items()
                             if k.startswith("JITORCH_") and k not in _ENV_IGNORED), memo)]
        if need_grad:
            from ..passes.autodiff import shape_key_of
            parts.append(_lit(shape_key_of(args, "pattern"), memo))
    except _Uncacheable:
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- records -----------------------------------------------------------------------------------
def _path(k: str) -> str | None:
    from ..kernels import cache
    d = cache.cache_dir()
    return None if d is None else os.path.join(d, "plans", k + ".json")


def _read(k: str) -> dict | None:
    """The record of key `k`, or None (none, damaged, another format: a miss)."""
    from ..kernels.cache import read_regular_file
    path = _path(k)
    data = None if path is None else read_regular_file(path, 1 << 22)
    if data is None:
        return None
    head = len(_MAGIC) + 64
    if not data.startswith(_MAGIC) or len(data) < head + 1 or data[head:head + 1] != b"\n":
        return _damaged(path, "not a plan record")
    payload = data[head + 1:]
    if hashlib.sha256(payload).hexdigest().encode() != data[len(_MAGIC):head]:
        return _damaged(path, "checksum mismatch")
    try:
        rec = json.loads(payload)
    except ValueError:
        return _damaged(path, "not JSON")
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("key") != k:
        return _damaged(path, "another format or key")
    return rec


def _damaged(path: str, why: str) -> None:
    from ..kernels.numba_cache import log
    log(f"ignored the plan record {path}: {why}")
    return None


def _write(k: str, rec: dict) -> None:
    path = _path(k)
    if path is None:
        return
    payload = json.dumps(dict(rec, format=FORMAT, key=k), sort_keys=True).encode()
    data = _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        from ..kernels.cache import _write_atomic
        _write_atomic(path, data)
    except OSError:
        return  # not stored: the next process builds it again
    stats.record_plan("stored")


def _program(entry) -> dict | None:
    """The record of a compiled entry's program: its module names, entry function, output
    types; None where it cannot be recorded (not compiled, compiled in memory, a type whose
    text does not read back as itself)."""
    from ..ir.parser import parse_type
    from ..kernels import cache
    if entry is None or entry.origin is None or entry.fn is None or not (
            entry.kind == "compiled" or entry.pending is not None):
        return None  # (a program the compile worker builds is recorded: it is the program)
    source, options, name, kernels = entry.origin
    mod = sys.modules.get(getattr(entry.fn, "__module__", None) or "")
    if mod is None or not getattr(mod, "__file__", None):
        return None
    outs = [str(t) for t in entry.out_types]
    try:
        if any(repr(parse_type(s)) != repr(t) for s, t in zip(outs, entry.out_types)):
            return None
    except Exception:  # noqa: BLE001 - a type without a text form: not recorded
        return None
    return {"module": cache.module_name(cache.prepare_source(source, options)),
            "kernels": [cache.module_name(cache.prepare_source(k)) for k in kernels],
            "entry": name, "out_types": outs, "checks_overlap": bool(entry.checks_overlap)}


def store_plain(k: str | None, entry) -> None:
    if k is not None and not isinstance(entry, _WarmEntry):  # (a hit has its record)
        p = _program(entry)
        if p is not None:
            _write(k, {"kind": "plain", "fwd": p})


_DIFF_FIELDS = ("n_saved", "input_requires_grad", "output_requires_grad", "shape_key",
                "saved_inputs", "saved_outputs", "key_kind", "symbolic")


def _diff_record(d) -> dict:
    return {f: _jsonable(getattr(d, f)) for f in _DIFF_FIELDS}


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def store_autodiff(k: str | None, ad) -> None:
    """After the forward's first run (backward None) and again once the backward for the
    example's shape key is built."""
    if k is None or isinstance(ad, _WarmAutodiff):
        return
    fwd = _program(ad.fwd)
    if fwd is None:
        return
    bw = ad.bwd.get(ad.d.shape_key)
    _write(k, {"kind": "autodiff", "fwd": fwd, "diff": _diff_record(ad.d),
               "bwd": _program(getattr(bw, "entry", None))})


# --- hits --------------------------------------------------------------------------------------
def _tuples(v):
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


class _WarmEntry(_Entry):
    """A compiled entry made from a plan record: its optimised graph (and so its interpreter
    tier), source listing and the compile worker's origin are made only when asked for."""

    __slots__ = ("_graph_of", "_runner", "_files", "_origin", "_entry_name")

    def __init__(self, kind, graph_of, files=(), entry_name=None, **kw):
        self._graph_of, self._runner, self._files, self._origin = graph_of, None, files, None
        self._entry_name = entry_name
        super().__init__(kind, None, **kw)

    @property
    def graph(self):
        g = _Entry.graph.__get__(self)
        if g is None:
            g = self._graph_of()
            _Entry.graph.__set__(self, g)
        return g

    @graph.setter
    def graph(self, g):
        _Entry.graph.__set__(self, g)

    @property
    def interpret(self):
        if self._runner is None:
            from ..ir import graph_to_python
            self._runner = graph_to_python.Runner(self.graph)
        return self._runner

    @interpret.setter
    def interpret(self, r):
        pass  # (_Entry.__init__'s runner of no graph: made from `graph` when first used)

    def _texts(self):
        out = []
        for path in self._files:
            with open(path, encoding="utf-8") as f:
                out.append(f.read())
        return out

    @property
    def source(self):
        if not self._files:
            return None
        from ..kernels import cache
        try:
            texts = self._texts()
        except OSError as e:  # removed from the cache directory since it was loaded
            return f"# the program's source is no longer in the cache directory ({e})\n"
        return cache.listing(texts[-1], texts[:-1])

    @source.setter
    def source(self, s):
        pass

    @property
    def origin(self):
        if self._origin is None and self._files:
            try:
                texts = self._texts()  # prepared already: preparing again gives the same names
            except OSError:  # (gone since it was loaded: the caller compiles it itself)
                return None
            self._origin = (texts[-1], None, self._entry_name, texts[:-1])
        return self._origin

    @origin.setter
    def origin(self, o):
        pass


def _is_str_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


_warned: list = []


def _error(e: BaseException) -> None:
    """Something other than an expected miss failed while loading a record: a bug, which a
    silent miss would hide. Counted (`stats()["plan_errors"]`), warned about once per process;
    the specialisation is then built as always."""
    stats.record_plan("error")
    from ..kernels.numba_cache import log
    log(f"plan record failed to load ({type(e).__name__}: {e})")
    if not _warned:
        _warned.append(True)
        import warnings
        warnings.warn(f"jitorch: the plan cache failed to load a record ({type(e).__name__}: "
                      f"{e}); the program is built instead. This is a bug in jitorch.",
                      RuntimeWarning, stacklevel=2)


def _load_program(p, graph_of):
    """The compiled _WarmEntry of program record `p`, or None: a miss where the record is not
    of the shape `_program` writes, an output type does not parse, a module it names is
    missing or altered (`cache.load_named`), or its entry is not that module's own njit
    function. Any other failure is a bug: `_error`, then None."""
    from ..ir.parser import ParseError, parse_type
    from ..kernels import cache
    if not (isinstance(p, dict) and _is_str_list(p.get("kernels"))
            and isinstance(p.get("module"), str) and isinstance(p.get("entry"), str)
            and _is_str_list(p.get("out_types")) and isinstance(p.get("checks_overlap"), bool)):
        return None  # (a record of another shape)
    try:
        out_types = [parse_type(t) for t in p["out_types"]]
        mods = []
        for n in p["kernels"] + [p["module"]]:
            m = cache.load_named(n)
            if m is None:
                return None
            mods.append(m)
        fn = getattr(mods[-1], p["entry"], None)
        py = getattr(fn, "py_func", None)  # the module's own njit entry, nothing else
        if getattr(py, "__module__", None) != mods[-1].__name__ or \
                getattr(py, "__name__", None) != p["entry"]:
            return None
        return _WarmEntry("compiled", graph_of, files=[m.__file__ for m in mods],
                          entry_name=p["entry"], fn=fn, out_types=out_types,
                          checks_overlap=p["checks_overlap"])
    except ParseError:
        return None
    except Exception as e:  # noqa: BLE001 - not an expected miss: a bug, made visible
        _error(e)
        return None


def load_plain(k, sf, arg_types, static):
    """The entry of a plain specialisation from its record, or None."""
    rec = _read(k) if k is not None else None
    if rec is None or rec.get("kind") != "plain":
        return None
    from . import programs
    e = _load_program(rec["fwd"], lambda: programs.optimise(sf.graph, arg_types, static))
    if e is not None:
        stats.record_plan("hit")
    return e


def entry_of(ad):
    """The specialisation's entry for autodiff pair `ad` (its graph: the forward's, which a
    plan-cache hit derives only when asked for)."""
    return _WarmEntry("autodiff", lambda: ad.forward.graph, autodiff=ad)


class _CachedDiff:
    """The fields of autodiff's `Differentiated` that a call reads, from a plan record."""

    def __init__(self, rec):
        for f in _DIFF_FIELDS:
            setattr(self, f, _tuples(rec[f]))
        self.extra = {}

    def key_of(self, args):
        from ..passes.autodiff import shape_key_of
        return shape_key_of(args, self.key_kind)

    def saved_to_check(self, args, outputs):
        from ..passes.autodiff import Differentiated
        return Differentiated.saved_to_check(self, args, outputs)


def load_autodiff(k, sf, arg_types, static, args):
    """The AutodiffEntry of a specialisation under grad from its record, or None."""
    rec = _read(k) if k is not None else None
    if rec is None or rec.get("kind") != "autodiff":
        return None
    try:
        d = _CachedDiff(rec["diff"])
    except (KeyError, TypeError):  # (not a mapping, a field missing)
        return None
    from ..passes.autodiff import KEY_KINDS
    if d.key_kind not in KEY_KINDS or not isinstance(d.n_saved, int):
        return None
    if d.key_of(args) != d.shape_key:
        return None  # keyed by exact shapes, and these are others
    box: list = []
    fwd = _load_program(rec["fwd"], lambda: box[0]._graph("forward"))
    if fwd is None:
        return None
    bwd = None
    if rec.get("bwd") is not None:
        bwd = _load_program(rec["bwd"], lambda: box[0]._graph("backward"))
    ad = _WarmAutodiff(sf, d, fwd, bwd, arg_types, static, args)
    box.append(ad)
    stats.record_plan("hit")
    return ad


class _WarmAutodiff(AutodiffEntry):
    """An AutodiffEntry from a plan record: the forward (and the backward of the example's
    shapes) loaded; the pre-fusion graph and autodiff's graphs are derived as a miss would
    (from the frontend's graph and the first call's arguments) only when asked for."""

    def __init__(self, sf, d, fwd, bwd, arg_types, static, args):
        self._real = None
        self._sf_graph, self._args = sf.graph, list(args)
        self._mlock = _fork.rlock()
        super().__init__(sf, None, d, fwd, arg_types, static)
        if bwd is not None:
            self.bwd[d.shape_key] = _LazyFirst(bwd, self.name + ".backward",
                                               f"shapes {d.shape_key}", 0.0)

    @property
    def base(self):
        return self._materialise()[0]

    @base.setter
    def base(self, b):
        pass  # (AutodiffEntry.__init__'s None: derived when first asked for)

    def _materialise(self):
        """(pre-fusion graph, Differentiated) as `autodiff.build` makes them; where they do
        not match the record, the recorded programs are replaced by ones built from them (a
        record that does not describe this build is never trusted further)."""
        with self._mlock:
            if self._real is None:
                from . import autodiff as rt, programs
                base = rt._pre_fusion(self._sf_graph, self.arg_types, self.static)
                d = rt._differentiate(base, self._args)
                if any(_tuples(_jsonable(getattr(d, f))) != getattr(self.d, f)
                       for f in _DIFF_FIELDS):
                    types = [programs._symbolic(v.type) for v in d.forward.inputs]
                    self.fwd, _ = programs.build_entry(d.forward, types, self.static)
                    self.forward, self.first = self.fwd, True
                    self.bwd.clear()
                self.d, self.diffs = d, {d.shape_key: d}
                self._real, self._args = (base, d), None
            return self._real

    def _graph(self, which):
        from . import programs
        d = self._materialise()[1]
        g = d.forward if which == "forward" else d.backward
        types = [programs._symbolic(v.type) for v in g.inputs]
        return programs.optimise(g, types, self.static if which == "forward" else None)

    def _diff_for(self, sk, args):
        self._materialise()
        return super()._diff_for(sk, args)

    def _forward_for(self, sk, args):
        self._materialise()
        return super()._forward_for(sk, args)

