"""Running one program eagerly, scripted and traced, and collecting disagreements.

Owns the differential run. For a program and its input sets:
- eager: the plain Python function on fresh arguments of each set (the reference);
- script: `jitorch.jit.script` of the same function (one object, called on every set: the sets
  share dtypes and ranks, so they share a specialisation); a frontend rejection of a program eager
  runs is a disagreement; a set that raises also runs in the interpreted tier, and the two
  scripted errors must be the same, located in the program's file (tiers.py);
- trace: `jitorch.jit.trace` on the first set eager accepts (Python-number arguments are fixed
  in a trace, so there is one trace per distinct tuple of them), then called on every set. When a
  set with other sizes disagrees, the program is traced again on that set: agreeing then means
  the trace baked the example's sizes in (`trace-sizes`: the programs hold no size-dependent
  Python, so PyTorch's tracer would record these symbolically), disagreeing is a plain one.
  jitorch's traced graphs are functional (a TracerWarning says so: writes to inputs do not reach
  the caller), so for programs that write to arguments the trace compares results only, and
  skips sets whose arguments alias or are expanded. A trace that warned (a TracerWarning other
  than that one: the trace depends on the example's data) is held to the example set only;
  other sets that disagree are reported as `trace-warned`.
Every call gets fresh arguments, and the arguments' storage is compared after the call.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import jitorch

from . import compare as cmp
from . import exclusions, tiers, values
from .program import load


@dataclass
class Finding:
    program: object
    sets: list
    set_index: int
    mode: str  # "script" | "trace"
    kind: str  # compare kinds, "frontend", "trace-failed", "trace-sizes"
    detail: str
    eager_exc: BaseException | None = None
    got_exc: BaseException | None = None
    known: str | None = None
    pid: str = ""
    example: int | None = None  # trace: the set the function was traced on

    def signature(self):
        """What makes two findings the same disagreement (for minimising)."""
        return (self.mode, self.kind, type(self.eager_exc).__name__,
                type(self.got_exc).__name__)

    def title(self) -> str:
        s = self.sets[self.set_index]
        return (f"[{self.pid}] {self.mode} {self.kind} on set {self.set_index} ({s.note}): "
                f"{self.detail}")


@dataclass
class Report:
    findings: list = field(default_factory=list)
    calls: int = 0
    compiled: int = 0  # specialisations that ran compiled (script + trace)
    interpreted: dict = field(default_factory=dict)  # reason -> count
    eager_errors: int = 0
    seconds: float = 0.0

    def failures(self):
        return [f for f in self.findings if f.known is None and f.kind not in NOT_FAILURES]


# a trace that warned depends on its example's data, as in PyTorch: not a failure
NOT_FAILURES = ("trace-warned",)


def _eager(fn, s):
    args, roots = values.build(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cmp.call(fn, args, roots)


def _note_entries(sf, rep):
    st = getattr(sf, "stats", None)
    if not isinstance(st, dict):
        return
    interp = st.get("interpreted", {})
    rep.compiled += st.get("specialisations", 0) - len(interp)
    for reason in interp.values():
        key = (reason or "?").split("\n")[0][:160]
        rep.interpreted[key] = rep.interpreted.get(key, 0) + 1


def precision_floor(prog) -> str:
    """The least precise float dtype a program's values start from (integer and bool
    arguments become float32, the default dtype, when an op makes floats of them)."""
    names = [a.dtype.name for a in prog.args if a.kind == "tensor"]
    for half in ("bfloat16", "float16"):
        if half in names:
            return half
    return "float64" if names and all(n == "float64" for n in names) else "float32"


def run(prog, sets, modes=("script", "trace"), pid: str = "") -> Report:
    t0 = time.perf_counter()
    rep = Report()
    fn = load(prog)
    want = [_eager(fn, s) for s in sets]
    rep.eager_errors = sum(not w.ok for w in want)
    if "script" in modes:
        _run_script(fn, prog, sets, want, rep, pid)
    if "trace" in modes:
        _run_trace(fn, prog, sets, want, rep, pid)
    for f in rep.findings:
        if f.kind not in NOT_FAILURES:
            f.known = exclusions.classify(f)
    rep.seconds = time.perf_counter() - t0
    return rep


def _finding(rep, prog, sets, k, mode, res, want, got, pid, example=None):
    rep.findings.append(Finding(prog, sets, k, mode, res[0], res[1], want.exc,
                                got.exc if got is not None else None, pid=pid,
                                example=example))


def _run_script(fn, prog, sets, want, rep, pid):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sf = jitorch.jit.script(fn)
        except Exception as e:  # noqa: BLE001
            ok = [k for k, w in enumerate(want) if w.ok]
            if ok:
                got = cmp.Outcome(exc=e)
                _finding(rep, prog, sets, ok[0], "script", (
                    "frontend", f"script() raised {type(e).__name__}: "
                    f"{cmp._first_line(e)}"), want[ok[0]], got, pid)
            return
        interp = None
        for k, s in enumerate(sets):
            args, roots = values.build(s)
            before = tiers.spurious_count()
            got = cmp.call(sf, args, roots)
            rep.calls += 1
            res = cmp.compare(want[k], got, floor=precision_floor(prog)) or \
                _accuracy(fn, prog, s, want[k], got) or tiers.spurious(before)
            if not res and not (want[k].ok and got.ok):  # an error: the interpreted tier too
                interp = interp or tiers.interpreted(fn)
                if interp is not None:
                    res = tiers.check_error(fn, want[k], got, cmp.call(interp, *values.build(s)))
                    rep.calls += 1
            if res:
                _finding(rep, prog, sets, k, "script", res, want[k], got, pid)
    _note_entries(sf, rep)


def _scalars(prog, s):
    return tuple(v for a, v in zip(prog.args, s.values) if a.kind != "tensor")


def _closure(fn, prog, s):
    """fn with the set's Python-number arguments fixed: a function of the tensors only."""
    full = list(s.values)
    t_idx = prog.tensor_args()

    def traced_program(*tensors):
        args = list(full)
        for i, t in zip(t_idx, tensors):
            args[i] = t
        return fn(*args)
    return traced_program


def _trace(fn, prog, s):
    """-> (traced function, whether tracing warned that the trace depends on the data)."""
    args, _ = values.build(s)
    tensors = [args[i] for i in prog.tensor_args()]
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        tr = jitorch.jit.trace(_closure(fn, prog, s), tuple(tensors), check_trace=False)
    warned = any(issubclass(w.category, jitorch.jit.TracerWarning) and
                 "modified in place" not in str(w.message) for w in ws)
    return tr, warned


def _call_traced(tr, prog, s):
    args, roots = values.build(s)
    tensors = [args[i] for i in prog.tensor_args()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cmp.call(tr, tensors, roots)


def _run_trace(fn, prog, sets, want, rep, pid):
    writes = prog.writes_anything()
    groups: dict = {}
    for k, s in enumerate(sets):
        groups.setdefault(_scalars(prog, s), []).append(k)
    for ks in groups.values():
        if writes:  # the functional trace neither writes nor refuses writes to arguments
            ks = [k for k in ks if not sets[k].has_alias() and
                  not any(lay and lay[0] == "expand" for lay in sets[k].layouts)]
        # PyTorch's tracer needs a tensor result (a program of Python numbers is not traced)
        ok = [k for k in ks if want[k].ok and any(x[0] == "tensor" for x in want[k].leaves)]
        if not ok:
            continue  # nothing eager runs: a trace would only replay eager's error
        ex = ok[0]
        try:
            tr, warned = _trace(fn, prog, sets[ex])
        except Exception as e:  # noqa: BLE001
            _finding(rep, prog, sets, ex, "trace", (
                "trace-failed", f"trace() raised {type(e).__name__}: {cmp._first_line(e)}"),
                want[ex], cmp.Outcome(exc=e), pid, ex)
            continue
        for k in ks:
            got = _call_traced(tr, prog, sets[k])
            rep.calls += 1
            res = cmp.compare(want[k], got, check_roots=not writes,
                              floor=precision_floor(prog)) or \
                _accuracy(fn, prog, sets[k], want[k], got)
            if not res:
                continue
            ex_k = ex
            if k != ex and warned:
                res = ("trace-warned", f"the trace warned; on another set: {res[0]}: {res[1]}")
            elif k != ex and _shapes(sets[k]) != _shapes(sets[ex]) and not want[k].ok:
                res = ("trace-sizes", f"traced on set {ex}'s sizes, eager raised on other "
                       f"sizes: {res[0]}: {res[1]}")
            elif k != ex and _shapes(sets[k]) != _shapes(sets[ex]):
                try:
                    again = _call_traced(_trace(fn, prog, sets[k])[0], prog, sets[k])
                except Exception as e:  # noqa: BLE001
                    again = cmp.Outcome(exc=e)
                res2 = cmp.compare(want[k], again, check_roots=not writes,
                                   floor=precision_floor(prog))
                if not res2:
                    res = ("trace-sizes", f"traced on set {ex}'s sizes, called on other "
                           f"sizes: {res[0]}: {res[1]}")
                else:
                    res, got, ex_k = res2, again, k
            _finding(rep, prog, sets, k, "trace", res, want[k], got, pid, ex_k)
        _note_entries(tr, rep)


ACCURATE_REDUCTIONS = ("form:sum", "form:mean", "form:nansum", "form:nanmean")
LONG_ROW = 256


def _accuracy(fn, prog, s, want, got):
    """float32 sums and means over long rows must be at least about as accurate as eager's
    (NumPy's pairwise summation): the error against a float64 run of the same program on the
    same values may exceed 4x eager's error only by 2 ulps of the result's scale."""
    if not got.ok or not any(isinstance(v, np.ndarray) and v.ndim and max(v.shape) >= LONG_ROW
                             for v in s.values):
        return None
    made = {t: st.tag for st in prog.body for t in st.targets}
    idx = [i for i, r in enumerate(prog.returns) if made.get(r) in ACCURATE_REDUCTIONS and
           i < len(want.leaves) and want.leaves[i][0] == "tensor" and
           want.leaves[i][1] == "float32"]
    if not idx:
        return None
    args, roots = values.build(s)
    wide = [a.double() if isinstance(a, jitorch.Tensor) and a.dtype == jitorch.float32 else a
            for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = cmp.call(fn, wide, roots)
    if not ref.ok or len(ref.leaves) != len(want.leaves):
        return None
    for i in idx:
        r = ref.leaves[i][2].astype(np.float64)
        e = want.leaves[i][2].astype(np.float64)
        c = got.leaves[i][2].astype(np.float64)
        if r.shape != c.shape or not np.isfinite(r).all():
            continue
        eps = float(np.finfo(np.float32).eps)
        lim = 4 * np.abs(e - r) + 2 * eps * max(1.0, float(np.abs(r).max()))
        err = np.abs(c - r)
        if (err > lim).any():
            k = tuple(np.argwhere(err > lim)[0])
            return ("accuracy", f"result {i} ({prog.returns[i]} = {made[prog.returns[i]]}) "
                    f"at {list(k)}: {c[k]!r}, eager {e[k]!r}, float64 {r[k]!r}")
    return None


def _shapes(s):
    """The arguments' shapes as built (an alias takes its partner's shape)."""
    return [tuple(values.logical_values(s, i).shape) if lay is not None else None
            for i, lay in enumerate(s.layouts)]
