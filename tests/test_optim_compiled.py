"""The optimizers' fused steps run as compiled programs that equal the eager step: one fused loop
per parameter writing params and state in place (targets/cpu/lower_list.py direct writes), one
program per options tuple and dtype for groups of any size and shapes (flattened tensors in
chunks of `CHUNK`, optim CompiledStep), no recompile when lr changes; plus the direct-write
lowering on its own (aliasing, overlap, broadcasting errors)."""
from typing import List

import numpy as np
import pytest

import jitorch
import jitorch.optim as optim
from jitorch import Tensor
from jitorch.optim import optimizer as jopt

# fused=True, like the default (fused=None), runs the compiled step (fused=False: eager)
CASES = [("SGD", dict(lr=0.1, momentum=0.9, fused=True)),
         ("Adam", dict(lr=0.05, fused=True)),
         ("AdamW", dict(lr=0.05, weight_decay=0.1, fused=True)),
         ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True,
                      fused=True)),
         ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True, fused=True))]
IDS = ["SGD", "Adam", "AdamW", "SGD-nesterov-wd-max", "Adam-amsgrad-wd-max"]


def _params(seed, shapes=((3, 4), (4,), (2, 3), ())):
    g = np.random.default_rng(seed)
    return [g.standard_normal(s).astype(np.float32) for s in shapes]


def _run(cls, kw, arrays, steps, use_script, lrs=None):
    ps = [jitorch.tensor(a, requires_grad=True) for a in arrays]
    opt = getattr(optim, cls)(ps, **kw)
    g = np.random.default_rng(1)
    old = jopt.USE_SCRIPT
    jopt.USE_SCRIPT = use_script
    try:
        for k in range(steps):
            if lrs is not None:
                opt.param_groups[0]["lr"] = lrs[k]
            for p in ps:
                p.grad = jitorch.tensor(g.standard_normal(p.shape).astype(np.float32))
            opt.step()
    finally:
        jopt.USE_SCRIPT = old
    return ps, opt


def _close(ps, qs):
    for p, q in zip(ps, qs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_compiled_step_equals_eager_and_is_compiled(cls, kw):
    arrays = _params(0)
    before = jitorch.jit.stats().get("interpreted_runs", 0)
    ps, opt = _run(cls, kw, arrays, 3, True, lrs=[0.1, 0.05, 0.02])
    assert opt._fn.fallbacks == {}
    assert opt._fn.why_interpreted == {}
    assert jitorch.jit.stats().get("interpreted_runs", 0) == before
    assert opt._fn._direct  # later steps call the compiled program directly
    ref, ref_opt = _run(cls, kw, arrays, 3, False, lrs=[0.1, 0.05, 0.02])
    _close(ps, ref)
    for p, q in zip(ps, ref):  # the state too
        for k, v in opt.state[p].items():
            np.testing.assert_allclose(np.asarray(v.tolist()),
                                       np.asarray(ref_opt.state[q][k].tolist()),
                                       rtol=1e-5, atol=1e-6)


OTHERS = [("Adagrad", dict(lr=0.1)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
          ("Adadelta", dict(lr=0.5)), ("Adamax", dict(lr=0.05)), ("NAdam", dict(lr=0.05)),
          ("RAdam", dict(lr=0.05))]


@pytest.mark.parametrize("cls,kw", OTHERS, ids=[c for c, _ in OTHERS])
def test_other_optimizers_compiled_equal_eager(cls, kw):
    """The classes without PyTorch's `fused` flag compile for a param group that asks with
    `"fused": True`; each kernel's fused loop with direct writes equals the eager step."""
    arrays = _params(6)

    def run(use_script):
        ps = [jitorch.tensor(a, requires_grad=True) for a in arrays]
        opt = getattr(optim, cls)([{"params": ps, "fused": True}], **kw)
        g = np.random.default_rng(2)
        old = jopt.USE_SCRIPT
        jopt.USE_SCRIPT = use_script
        try:
            for _ in range(7):  # RAdam switches branch after 5 steps
                for p in ps:
                    p.grad = jitorch.tensor(g.standard_normal(p.shape).astype(np.float32))
                opt.step()
        finally:
            jopt.USE_SCRIPT = old
        return ps, opt
    ps, opt = run(True)
    assert opt._fn.fallbacks == {} and opt._fn._direct
    ref, _ = run(False)
    _close(ps, ref)


def test_one_program_for_any_group_size_and_shapes():
    """More params than CHUNK, of several ranks: the SGD-momentum program of the test above
    serves them all (flattened, chunked): no compile at all if it already ran."""
    shapes = [(2, 3), (5,), (1, 2, 2), ()] * 5  # 20 > CHUNK
    arrays = _params(4, shapes)
    kw = dict(lr=0.1, momentum=0.9, fused=True)
    _run("SGD", kw, _params(0), 2, True)  # (compiles here when run alone)
    compiles = jitorch.jit.stats()["compiles"]
    ps, opt = _run("SGD", kw, arrays, 3, True)
    assert jitorch.jit.stats()["compiles"] == compiles
    # one program for the first step (buffers created) and the others
    assert (False, True, False, False, False) in opt._fn.scripted
    assert (True, True, False, False, False) not in opt._fn.scripted
    ref, _ = _run("SGD", kw, arrays, 3, False)
    _close(ps, ref)


def test_default_step_is_compiled_and_fused_false_or_differentiable_is_eager(monkeypatch):
    """The default step (PyTorch's defaults: fused=None) runs the compiled program; a group
    built with fused=False or differentiable=True runs the eager step; all three agree."""
    from jitorch.optim import functional as F
    arrays = _params(3)
    results = {}
    for name, extra in (("default", {}), ("unfused", dict(fused=False)),
                        ("differentiable", dict(differentiable=True))):
        # a fresh CompiledStep: the class's own may already call its program directly
        monkeypatch.setattr(optim.SGD, "_fn", jopt.CompiledStep(F.SGD))
        calls = jitorch.jit.stats()["calls"]
        results[name], opt = _run("SGD", dict(lr=0.1, momentum=0.9, **extra), arrays, 2, True)
        scripted_calls = jitorch.jit.stats()["calls"] - calls
        if name == "default":
            assert scripted_calls > 0 and opt._fn._direct and opt._fn.fallbacks == {}
        else:
            assert scripted_calls == 0 and not opt._fn._direct
    _close(results["default"], results["unfused"])
    _close(results["default"], results["differentiable"])


def test_changing_lr_does_not_recompile():
    ps, opt = _run("SGD", dict(lr=0.1, momentum=0.9, fused=True), _params(2), 2, True)
    compiles = jitorch.jit.stats()["compiles"]
    for lr in (0.3, 0.01):
        opt.param_groups[0]["lr"] = lr
        for p in ps:
            p.grad = jitorch.ones_like(p)
        opt.step()
    assert jitorch.jit.stats()["compiles"] == compiles


def test_state_dict_round_trip_and_closure():
    kw = dict(lr=0.05, fused=True)
    ps, opt = _run("Adam", kw, _params(5), 2, True)
    ps2 = [jitorch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ps]
    opt2 = optim.Adam(ps2, **kw)
    opt2.load_state_dict(opt.state_dict())
    for params, o in ((ps, opt), (ps2, opt2)):
        def closure(params=params):
            o.zero_grad()
            loss = sum((p * p).sum() for p in params)
            loss.backward()
            return loss
        for _ in range(2):
            loss = o.step(closure)
        assert isinstance(loss, Tensor)
    _close(ps, ps2)
    assert opt.state[ps[0]]["step"].item() == opt2.state[ps2[0]]["step"].item() == 4.0


def test_compiled_step_bumps_versions():
    ps, opt = _run("SGD", dict(lr=0.1, momentum=0.9, fused=True), _params(2), 2, True)
    v = [p._version_value for p in ps]
    b = [opt.state[p]["momentum_buffer"]._version_value for p in ps]
    opt.step()
    assert all(p._version_value > x for p, x in zip(ps, v))
    assert all(opt.state[p]["momentum_buffer"]._version_value > x for p, x in zip(ps, b))


# --- the direct-write lowering on its own ---------------------------------------------------------

@jitorch.script
def _axpy(xs: List[Tensor], ys: List[Tensor], a: float):
    for i in range(len(xs)):
        x = xs[i]
        x.copy_(x.mul(a).add(ys[i]))


def _axpy_eager(xs, ys, a):
    for x, y in zip(xs, ys):
        x.copy_(x.mul(a).add(y))


def test_fused_loop_writes_into_the_list_element():
    xs = [jitorch.arange(6.0).reshape(2, 3), jitorch.ones(4, 1)]
    ys = [jitorch.full((2, 3), 0.5), jitorch.ones(4, 1) * 2]
    ref = [x.clone() for x in xs]
    _axpy_eager(ref, ys, 3.0)
    _axpy(xs, ys, 3.0)
    assert [x.tolist() for x in xs] == [x.tolist() for x in ref]
    assert _axpy.stats["interpreted"] == {}
    code = _axpy.code
    assert "_jt_clash" in code  # the planned, direct form: no temporary, no copy
    entry = code[code.index("def entry("):]  # (module-level helpers may allocate their tables)
    assert "_jt_empty(" not in entry


def test_direct_write_with_aliased_and_overlapping_operands():
    # the same tensor in both lists: read before written at each index, as eager
    t = jitorch.arange(5.0)
    ref = t.clone()
    _axpy_eager([ref], [ref], 2.0)
    _axpy([t], [t], 2.0)
    assert t.tolist() == ref.tolist()
    # overlapping contiguous views of one storage: the operand is copied first
    base = jitorch.arange(10.0)
    rbase = base.clone()
    _axpy_eager([rbase[0:5]], [rbase[2:7].clone()], 2.0)
    _axpy([base[0:5]], [base[2:7]], 2.0)
    assert base.tolist() == rbase.tolist()


def test_direct_write_broadcasting():
    # a smaller operand broadcasts into the element
    xs, ys = [jitorch.ones(2, 3)], [jitorch.tensor([[1.0, 2.0, 3.0]])]
    _axpy(xs, ys, 2.0)
    assert xs[0].tolist() == [[3.0, 4.0, 5.0]] * 2
    # a value larger than the element is PyTorch's error, and the element is unchanged
    xs, ys = [jitorch.ones(1, 3)], [jitorch.ones(2, 3)]
    with pytest.raises(RuntimeError):
        _axpy(xs, ys, 2.0)
    assert xs[0].tolist() == [[1.0, 1.0, 1.0]]


def test_list_argument_writes_reach_the_caller():
    @jitorch.script
    def scale(xs: List[jitorch.Tensor], a: float):
        for i in range(len(xs)):
            xs[i].mul_(a).add_(1.0)

    xs = [jitorch.ones(3), jitorch.ones(2) * 2]
    scale(xs, 3.0)
    assert xs[0].tolist() == [4.0] * 3 and xs[1].tolist() == [7.0] * 2
    assert scale.stats["interpreted"] == {}


def test_fused_steps_from_two_threads_equal_sequential():
    """Two optimizers stepping at once from two threads (the compiled program runs without the
    GIL) give the sequential results."""
    import threading
    kw = dict(lr=0.1, momentum=0.9, fused=True)
    arrays = _params(7, [(40, 30), (30,)] * 3)
    ref, _ = _run("SGD", kw, arrays, 4, True)
    got = [None, None]

    def work(k):
        got[k] = _run("SGD", kw, arrays, 4, True)[0]
    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for g in got:
        assert [p.tolist() for p in g] == [p.tolist() for p in ref]


@jitorch.script
def _momentum_inplace(ps: List[Tensor], gs: List[Tensor], ms: List[Tensor], b: float,
                      lr: float):
    for i in range(len(ps)):
        m = ms[i]
        m.mul_(b).add_(gs[i], alpha=1.0 - b)
        ps[i].add_(m, alpha=-lr)


def test_inplace_chain_on_list_elements_is_one_loop():
    """PyTorch-style in-place methods on list elements: the store of `mul_` is forwarded to
    `add_` and to the param's update (passes/fuse.py), so one fused loop computes both and
    stores them into the elements (targets/cpu/lower_list.py)."""
    g = np.random.default_rng(3)
    mk = lambda: [jitorch.tensor(g.standard_normal(s).astype(np.float32))  # noqa: E731
                  for s in [(3,), (4,)]]
    ps, gs, ms = mk(), mk(), mk()
    ref = [[t.clone() for t in lst] for lst in (ps, gs, ms)]
    _momentum_inplace(ps, gs, ms, 0.9, 0.1)
    for p, g2, m in zip(*ref):
        m.mul_(0.9).add_(g2, alpha=0.1)
        p.add_(m, alpha=-0.1)
    _close(ps + ms, ref[0] + ref[2])
    assert _momentum_inplace.stats["interpreted"] == {}
    code = _momentum_inplace.code
    entry = code[code.index("def entry("):]  # (module-level helpers may allocate their tables)
    # the element is the loop's output (a temporary only where a broadcast loop is larger)
    assert all(" if " in ln for ln in entry.splitlines() if "_jt_empty(" in ln)
    graph = str(_momentum_inplace._last.graph)
    assert graph.count("prim::Fused") == 1


_BACKGROUND_STEP = """
import numpy as np, jitorch
import jitorch.optim as optim
from jitorch.optim import optimizer as jopt
arrays = [np.random.default_rng(5).standard_normal(s).astype(np.float32)
          for s in ((3, 4), (4,), (2, 3), ())]
ps = [jitorch.tensor(a, requires_grad=True) for a in arrays]
qs = [jitorch.tensor(a, requires_grad=True) for a in arrays]
opt, ref = optim.Adam(ps, lr=0.05), optim.Adam(qs, lr=0.05, fused=False)
g = np.random.default_rng(3)

def step():
    for p, q in zip(ps, qs):
        p.grad = jitorch.tensor(g.standard_normal(p.shape).astype(np.float32))
        q.grad = p.grad.clone()
    opt.step()
    ref.step()
    for p, q in zip(ps, qs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)

step()
fn = next(iter(opt._fn.scripted.values()))
assert fn.stats["tier"] == "interpreted-while-compiling" and jopt._pending(fn), fn.stats
assert not opt._fn._direct and opt._fn.fallbacks == {}, opt._fn.fallbacks
assert "eager" not in opt._fn._modes.values()
assert fn.wait_compiled(timeout=300)
step()  # the call that finds the program compiled
step()
assert opt._fn._direct and opt._fn.fallbacks == {}, (fn.stats, opt._fn.fallbacks)
print("ok")
"""


def test_default_step_while_the_program_compiles_in_the_background(tmp_path):
    """With background compiles (script/runtime/tiers.py) the first default steps run through the
    interpreter while the worker compiles the step program, and nothing is decided while it is
    pending (no eager fallback recorded); once compiled, steps call the program directly.
    Every step equals the eager step. In a fresh process with empty caches (a program that
    this process compiled already would load at once, not in the background)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, JITORCH_COMPILE="background",
               JITORCH_CACHE_DIR=str(tmp_path / "jitorch"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    r = subprocess.run([sys.executable, "-c", _BACKGROUND_STEP], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
