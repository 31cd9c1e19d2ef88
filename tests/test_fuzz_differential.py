"""Differential fuzzing: random programs run eager, scripted and traced must agree.

The fixed-seed slice: `JITORCH_FUZZ_ITERATIONS` programs (default 60) of run `JITORCH_FUZZ_SEED`
(default 20260), each on five input sets of one dtype/rank signature (so one compile per mode and
program), compared in values, errors and the arguments' storage afterwards (tests/fuzz/).
Disagreements listed in `tests/fuzz/exclusions.py` (known bugs, each naming what it waits for)
are counted, not failed. A failure prints the program, the disagreement and a minimised
reproducer. The long mode is `PYTHONPATH=src:tests python -m fuzz --iterations N --seed S`.

The other tests check the fuzzer itself: that it generates what it claims to (aliasing, strided
and expanded arguments, sizes 0 and 1, in-place and index writes, compiled programs), that a
wrong compiled result, error or argument write is caught (and a scripted error that differs
between the interpreted and compiled tiers or lacks the user's line), and that the minimiser
shrinks a planted disagreement to a reproducer that shows it.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jitorch
from fuzz import compare, exclusions, minimize, runner, tiers, values
from fuzz.generate import generate
from fuzz.program import Arg, Program, Stmt

SEED = int(os.environ.get("JITORCH_FUZZ_SEED", "20260"))
ITERATIONS = int(os.environ.get("JITORCH_FUZZ_ITERATIONS", "60"))


def _report(rep, prog):
    lines = [f.title() for f in rep.failures()]
    first = rep.failures()[0]
    try:
        mp, ms = minimize.minimize(first, max_tries=25)
        repro = minimize.reproducer(mp, ms, first)
    except Exception as e:  # noqa: BLE001
        repro = f"(minimising failed: {type(e).__name__}: {e})"
    return ("\n".join(lines) + "\n\nprogram:\n" + prog.source() + "\nminimised reproducer:\n"
            + repro)


@pytest.mark.parametrize("index", range(ITERATIONS))
def test_program_agrees_with_eager(index):
    prog, sets, _ = generate(SEED, index)
    rep = runner.run(prog, sets, pid=f"{SEED}:{index}")
    assert not rep.failures(), _report(rep, prog)


# --- the fuzzer generates what it claims ------------------------------------------------------
def test_slice_covers_layouts_aliasing_sizes_and_writes():
    seen = set()
    for i in range(ITERATIONS):
        prog, sets, _ = generate(SEED, i)
        tags = {s.tag.split(":")[0] for s in prog.body}
        seen |= {t for t in tags if t in ("form", "op", "rop", "unary", "index", "inplace",
                                          "setitem", "aug", "view", "scalar")}
        for s in sets:
            for lay in s.layouts:
                if lay is not None:
                    seen.add("layout:" + lay[0])
            for v in s.values:
                if isinstance(v, np.ndarray):
                    seen.add(f"dtype:{v.dtype.name}")
                    if 0 in v.shape:
                        seen.add("size:0")
                    if v.ndim and 1 in v.shape:
                        seen.add("size:1")
            if "edge" in s.note:
                seen.add("edge")
        if any(a.kind != "tensor" for a in prog.args):
            seen.add("scalar-arg")
    want = {"form", "op", "index", "inplace", "setitem", "view", "layout:contig", "layout:perm",
            "layout:step", "layout:expand", "layout:same", "size:0", "size:1", "edge",
            "scalar-arg", "dtype:float32", "dtype:float64", "dtype:int64", "dtype:bool"}
    assert want <= seen, f"the slice never generates {sorted(want - seen)}"
    assert seen & {"layout:shift", "layout:t", "layout:row"}, "no overlapping-view aliasing"


def test_every_program_is_valid_eager_on_its_base_set():
    for i in range(min(ITERATIONS, 20)):
        prog, sets, g = generate(SEED, i)
        if g.ended_with_error:
            continue
        fn = runner.load(prog)
        out = runner._eager(fn, sets[0])
        assert out.ok, f"program {i}: {out.describe()}\n{prog.source()}"


def test_inputs_are_built_as_their_layouts_say():
    v = np.arange(12.0).reshape(3, 4)
    s = values.InputSet([v, v, v, v], [("perm", (1, 0)), ("step", 1, 2, 1), ("expand", (0,)),
                                       ("t", 0)])
    args, roots = values.build(s)
    assert not args[0].is_contiguous() and np.array_equal(args[0].numpy(), v)
    assert not args[1].is_contiguous() and np.array_equal(args[1].numpy(), v)
    assert args[2].stride()[0] == 0
    assert np.array_equal(args[2].numpy(), np.broadcast_to(v[:1], v.shape))
    assert np.array_equal(args[3].numpy(), v.T)
    assert len(roots) == 3  # the transposed alias owns no storage of its own
    args[3][0, 0] = -1.0  # a write through the alias lands in argument 0's root
    assert roots[0].numpy().min() == -1.0
    ns = {}
    exec("import jitorch\nimport numpy as np\n" + values.source(s, ["a", "b", "c", "d"]), ns)
    for name, arg in zip("abcd", values.build(s)[0]):
        assert np.array_equal(ns[name].numpy(), arg.numpy()), name


# --- the fuzzer catches disagreements ---------------------------------------------------------
def _prog(*lines, args=("a0",), returns=("v0",)):
    return Program([Arg(a, "tensor", jitorch.float32, 2, ("n0", "n0")) for a in args],
                   [Stmt(line) for line in lines], returns)


def _sets(*arrays):
    return [values.InputSet([np.array(a, np.float32)], [("contig",)]) for a in arrays]


class _Wrong:
    """A stand-in for jitorch.jit.script whose functions are subtly wrong."""

    def __init__(self, how):
        self.how = how

    def __call__(self, fn):
        how = self.how

        def wrong(*args):
            if how == "raise":
                raise RuntimeError("planted")
            if how == "same":  # eager's own outcome, errors as eager raises them
                return fn(*args)
            res = fn(*args)
            if how == "value":
                return res + 1e-3
            if how == "write":
                args[0].add_(1)
            return res
        return wrong


@pytest.mark.parametrize("how,kind", [("value", "value"), ("raise", "compiled-raised"),
                                      ("write", "argument")])
def test_runner_catches_a_planted_disagreement(monkeypatch, how, kind):
    monkeypatch.setattr(jitorch.jit, "script", _Wrong(how))
    prog = _prog("{t} = {r0} * 2".replace("{t}", "v0").replace("{r0}", "a0"))
    rep = runner.run(prog, _sets([[1.0, 2.0], [3.0, 4.0]]), modes=("script",))
    assert [f.kind for f in rep.findings] == [kind]
    assert rep.failures()


def test_compiled_success_where_eager_raises_is_a_failure():
    want = compare.Outcome(exc=IndexError("index 5 is out of bounds"))
    got = compare.Outcome(structure="T", leaves=[("tensor", "float32", np.zeros(2))])
    assert compare.compare(want, got)[0] == "compiled-succeeded"
    assert compare.compare(got, want)[0] == "compiled-raised"
    other = compare.Outcome(exc=RuntimeError("index 5"))
    assert compare.compare(want, other)[0] == "error-type"


def test_runner_checks_scripted_errors_in_every_tier(monkeypatch):
    """A set that raises runs interpreted too (fuzz/tiers.py): a scripted error that is eager's
    class but carries no line of the user's file (here eager's own error, re-raised) fails."""
    monkeypatch.setattr(jitorch.jit, "script", _Wrong("same"))
    prog = _prog("v0 = a0[5]")
    rep = runner.run(prog, _sets([[1.0, 2.0]]), modes=("script",))
    assert [f.kind for f in rep.findings] == ["error-not-located"], rep.findings
    assert rep.failures()


def test_tier_disagreements_are_findings():
    def f(x):
        return x
    eager = compare.Outcome(exc=IndexError("index 5 is out of bounds"))
    where = f"\n  in scripted code at {f.__code__.co_filename}:1:0: x[5]"
    from jitorch.script.kernels.signals import script_class

    def scripted(cls, msg):
        return compare.Outcome(exc=script_class(cls)(msg + where))
    ok = scripted(IndexError, "index 5 is out of bounds")
    assert tiers.check_error(f, eager, ok, ok) is None
    assert tiers.check_error(f, eager, ok, scripted(IndexError, "index 5"))[0] == "tier-message"
    assert tiers.check_error(f, eager, ok, compare.Outcome(exc=RuntimeError("x")))[0] == \
        "interpreted-error-type"
    other = compare.Outcome(exc=type("IndexError", (IndexError,), {})("index 5 is out of "
                                                                         "bounds" + where))
    assert tiers.check_error(f, eager, other, ok)[0] == "tier-error-type"
    before = tiers.spurious_count()
    from jitorch.script.runtime import stats
    stats._c.spurious_errors["f: ValueError: planted"] += 1
    assert tiers.spurious(before)[0] == "spurious-error"


def test_float_tolerance_is_per_dtype():
    w = compare.Outcome(structure="T", leaves=[("tensor", "float32", np.array([1.0, np.nan]))])
    g = compare.Outcome(structure="T",
                        leaves=[("tensor", "float32", np.array([1.0 + 1e-6, np.nan]))])
    assert compare.compare(w, g) is None
    g64 = compare.Outcome(structure="T",
                          leaves=[("tensor", "float64", np.array([1.0 + 1e-6, np.nan]))])
    w64 = compare.Outcome(structure="T", leaves=[("tensor", "float64", np.array([1.0, np.nan]))])
    assert compare.compare(w64, g64)[0] == "value"
    inf = compare.Outcome(structure="T", leaves=[("tensor", "float32", np.array([1.0, np.inf]))])
    assert compare.compare(w, inf)[0] == "value"


def test_minimiser_shrinks_a_planted_disagreement(monkeypatch):
    monkeypatch.setattr(jitorch.jit, "script", _Wrong("value"))
    prog = Program([Arg("a0", "tensor", jitorch.float32, 2, ("n0", "n0")),
                    Arg("a1", "tensor", jitorch.float32, 2, ("n0", "n0"))],
                   [Stmt("{t} = {r0} + 1", ("a0",), ("v0",)),
                    Stmt("{t} = {r0}.t()", ("v0",), ("v1",)),
                    Stmt("{t} = {r0} * {r1}", ("v1", "a1"), ("v2",))], ("v2",))
    v = np.ones((3, 3), np.float32)
    sets = [values.InputSet([v, v], [("contig",), ("contig",)]),
            values.InputSet([v, v], [("perm", (1, 0)), ("step", 0, 2, 1)])]
    rep = runner.run(prog, sets, modes=("script",))
    f = rep.findings[-1]
    mp, ms = minimize.minimize(f, max_tries=40)
    assert len(mp.body) < len(prog.body) and len(ms) == 1
    assert all(lay == ("contig",) for lay in ms[0].layouts)
    src = minimize.reproducer(mp, ms, f)
    compile(src, "<reproducer>", "exec")
    assert "jitorch.jit.script" in src and mp.source() in src


def test_known_bug_entries_name_what_they_wait_for():
    names = [k.name for k in exclusions.KNOWN]
    assert len(names) == len(set(names))
    for k in exclusions.KNOWN:
        assert k.waits_for.strip() and callable(k.match)


def test_long_mode_runs_and_reports(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(os.path.dirname(__file__), "..", "src"), os.path.dirname(__file__)]))
    r = subprocess.run([sys.executable, "-m", "fuzz", "--iterations", "2", "--seed", str(SEED),
                        "--out", str(tmp_path), "--no-minimize"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert "2 programs" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "summary.json").exists()


# --- disagreements the fuzzer found, fixed in the op declarations ----------------------------
def _agree(lines, reads_args, arrays, modes=("script", "trace")):
    """A hand-written program over arguments a0.. run through the fuzzer's runner."""
    args = [Arg(f"a{i}", "tensor", jitorch._dtype.from_numpy_dtype(a.dtype), a.ndim,
                tuple(a.shape)) for i, a in enumerate(arrays)]
    body = [Stmt(line) for line in lines]
    prog = Program(args, body, reads_args)
    s = values.InputSet([a.copy() for a in arrays], [("contig",)] * len(arrays))
    rep = runner.run(prog, [s], modes=modes)
    assert not rep.findings, [f.title() for f in rep.findings]
    return runner._eager(runner.load(prog), s)


def test_adaptive_avg_pool_nan_stays_in_its_windows():
    x = np.arange(21, dtype=np.float32).reshape(3, 7)
    x[2, 4] = np.nan
    out = _agree(["v0 = jitorch.adaptive_avg_pool1d(a0, 9)"], ("v0",), [x])
    y = out.leaves[0][2]
    assert list(np.isnan(y[2])) == [_holds(j, 7, 9, 4) for j in range(9)]
    assert not np.isnan(y[:2]).any()
    x2 = np.ones((1, 4, 5), np.float32)
    x2[0, 1, 2] = np.inf
    y2 = _agree(["v0 = jitorch.nn.functional.adaptive_avg_pool2d(a0, (3, 2))"], ("v0",),
                [x2]).leaves[0][2]
    want = np.array([[_holds(i, 4, 3, 1) and _holds(j, 5, 2, 2) for j in range(2)]
                     for i in range(3)])
    assert (np.isinf(y2[0]) == want).all() and not np.isnan(y2).any()


def _holds(j, size, out, k) -> bool:
    """Whether adaptive pooling's window j (of `out` over `size`) covers position k."""
    return j * size // out <= k < -(-(j + 1) * size // out)


def test_index_select_negative_index_is_an_index_error():
    x, i = np.ones((3, 2), np.float32), np.array([0, -1])
    out = _agree(["v0 = jitorch.index_select(a0, 0, a1)"], ("v0",), [x, i])
    assert isinstance(out.exc, IndexError)


def test_copy_into_an_expanded_tensor_is_pytorchs_error():
    base = jitorch.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        base[:].copy_(jitorch.ones(2, 3))


def test_bool_negation_is_refused_by_compiled_code_too():
    out = _agree(["v0 = -a0"], ("v0",), [np.array([True, False])])
    assert isinstance(out.exc, RuntimeError) and "Negation" in str(out.exc)


def test_contiguous_keeps_a_zero_dim_tensor_zero_dim():
    out = _agree(["v0 = a0.contiguous().unsqueeze(0)"], ("v0",), [np.array(3, np.int32)])
    assert out.leaves[0][2].shape == (1,)


def test_svd_refuses_non_finite_input_instead_of_hanging():
    # LAPACK's gesdd can loop forever on nan (the fuzzer's long run hung in matrix_norm(ord=2))
    x = np.array([[0.0, 0.0], [np.nan, np.nan]])
    out = _agree(["v0 = jitorch.linalg.matrix_norm(a0, ord=2)"], ("v0",), [x], modes=("script",))
    assert isinstance(out.exc, jitorch.linalg.LinAlgError) and "non-finite" in str(out.exc)
