"""Eager calls of the norm and loss modules served by their compiled functional call
(nn/modules/_eager_compiled.py `functional`): the same values and gradients (inputs, parameters)
as the eager path (`JITORCH_EAGER_COMPILED_LAYERS=0`), the compiled tier counted in
`jitorch.jit.stats()` under `nn.<Layer>[eager]`, the eager errors and warnings, the eager path
kept under tracing, for float16 / integer inputs and for BatchNorm's running-statistic update,
the call's source built once per configuration, and a first call under background compiles
answered at once. Small shapes, few configurations: each is a forward and a backward program
to compile."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitorch as jt
from jitorch import nn
from jitorch.autograd import forward_ad as fwAD
from jitorch.nn.modules import _eager_compiled

from eager_layer_checks import check_compiled_matches_eager


def _t(shape, seed, kind="normal", grad=True):
    g = np.random.default_rng(seed)
    a = {"normal": lambda: g.standard_normal(shape),
         "unit": lambda: g.uniform(0.05, 0.95, shape),
         "sign": lambda: np.sign(g.standard_normal(shape))}[kind]()
    return jt.tensor(a.astype(np.float32), requires_grad=grad)


def _bn_eval():
    m = nn.BatchNorm2d(3)
    m.running_mean.uniform_(-1, 1)
    m.running_var.uniform_(0.5, 1.5)
    return m.eval(), (_t((4, 3, 2, 2), 1, grad=False),)


CASES = {  # name: () -> (module, inputs); together: affine and not, optional tensors given
    # (pos_weight) and not, three inputs, every reduction
    "LayerNorm": lambda: (nn.LayerNorm(5), (_t((2, 3, 5), 1),)),
    "GroupNorm": lambda: (nn.GroupNorm(2, 4, affine=False), (_t((2, 4, 3), 1),)),
    "L1Loss": lambda: (nn.L1Loss(reduction="sum"), (_t((4, 3), 1), _t((4, 3), 2, grad=False))),
    "BCEWithLogitsLoss": lambda: (nn.BCEWithLogitsLoss(pos_weight=_t((3,), 3, "unit", False)),
                                  (_t((4, 3), 1), _t((4, 3), 2, "unit", False))),
    "MarginRankingLoss": lambda: (nn.MarginRankingLoss(0.25, reduction="none"),
                                  (_t((5,), 1), _t((5,), 2), _t((5,), 3, "sign", False))),
    "PoissonNLLLoss": lambda: (nn.PoissonNLLLoss(full=True),
                               (_t((4, 3), 1), jt.tensor([[0.0, 1.0, 3.0]] * 4))),
}


@pytest.fixture(autouse=True)
def _own_functions(monkeypatch):
    """A table of the call functions of this test's own: other tests in the same process may
    have made functions of the same module classes (other configurations)."""
    monkeypatch.setattr(_eager_compiled, "_BY_CALL", {})


def _fn(m, values=None):
    """The ScriptFunction the module's eager calls ran (the one of its class, or of its class
    and configuration `values`)."""
    fns = [sf for k, sf in _eager_compiled._BY_CALL.items()
           if k[0] is type(m) and sf and values in (None, k[1])]
    assert len(fns) == 1
    return fns[0]


def _step(m, args):
    """The output and every gradient of one forward+backward (the output used twice: a 0-d
    loss's gradient is then the engine's fan-in sum)."""
    for t in [*args, *m.parameters()]:
        t.grad = None
    out = m(*args)
    (out * out * out).sum().backward()
    return [out.detach().numpy()] + \
        [t.grad.numpy() for t in [*args, *m.parameters()] if t.requires_grad]


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_module_matches_the_eager_path(name, monkeypatch):
    jt.manual_seed(0)
    m, args = CASES[name]()
    check_compiled_matches_eager(lambda: _step(m, args), lambda: _fn(m).stats, monkeypatch)
    assert _fn(m).name.startswith(f"nn.{name}[eager]")
    assert jt.jit.stats()["functions"][_fn(m).name]["tier"] == "compiled"


FORWARD = {  # ... and forward only (each backward is programs to compile: seconds)
    "RMSNorm": lambda: (nn.RMSNorm([3, 4]), (_t((2, 3, 4), 1, grad=False),)),  # eps=None
    "BatchNorm2d": _bn_eval,
}


@pytest.mark.parametrize("name", list(FORWARD))
def test_compiled_module_forward_matches_the_eager_path(name, monkeypatch):
    m, args = FORWARD[name]()
    with jt.no_grad():
        check_compiled_matches_eager(lambda: [m(*args).numpy()], lambda: _fn(m).stats,
                                     monkeypatch)


def _outcome(m, *args):
    """(error type, message) or the value, and the warnings, of `m(*args)`."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = m(*args).detach().numpy().tolist()
        except Exception as e:  # noqa: BLE001
            res = (type(e), str(e))
    return res, [(x.category, str(x.message)) for x in w]


def test_errors_and_warnings_are_the_eager_forms(monkeypatch):
    x, y = _t((4, 3), 1), _t((4, 3), 2)
    bad = [(nn.MSELoss(), (x, _t((4, 1), 3))),  # broadcasts with eager's warning
           (nn.MSELoss(), (x, [1.0])),  # not a Tensor
           (nn.MSELoss(reduction="avg"), (x, y)),  # not a reduction
           (nn.SmoothL1Loss(beta=-1.0), (x, y)),  # a configuration the loss rejects
           (nn.BCEWithLogitsLoss(pos_weight=_t((2,), 4)), (x, y)),  # does not broadcast
           (nn.MarginRankingLoss(), (x, y, _t((4,), 5))),  # ranks differ
           (nn.CosineEmbeddingLoss(), (x, y, _t((4, 3), 5))),  # likewise
           (nn.KLDivLoss(), (x, _t((4, 3), 6, "unit"))),  # "mean" warns at every call
           (nn.LayerNorm(3), (_t((4, 2), 1),)),
           (nn.GroupNorm(2, 4), (_t((2, 3, 5), 1),)),
           (nn.BatchNorm1d(3, track_running_stats=False), (_t((1, 3), 1),))]  # one value
    for m, args in bad:
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want = _outcome(m, *args)
        monkeypatch.setenv(_eager_compiled.ENV, "1")
        assert _outcome(m, *args) == want, m
        assert want[1] or isinstance(want[0], tuple), m  # each case warns or raises
    _served_compiled(nn.MSELoss(), x, y)  # the same module, called right: compiled


def _served_compiled(m, *args):
    """`m(*args)` (no grad) runs one compiled function call (the checks above are not vacuous)."""
    before = jt.jit.stats()["calls"]
    with jt.no_grad():
        m(*args)
    assert jt.jit.stats()["calls"] == before + 1


def test_ineligible_calls_keep_the_eager_path(monkeypatch):
    """float16, integer and mixed-dtype inputs, empty inputs, BatchNorm in training mode (its
    running statistics are updated in place, in eager code), a forward-AD dual input and
    `jit.trace` recording (the trace holds the eager ops): no compiled function runs."""
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    ln, mse, bn = nn.LayerNorm(4), nn.MSELoss(), nn.BatchNorm1d(2)
    before = jt.jit.stats()["calls"]
    with jt.no_grad():
        ln.half()(jt.randn(2, 4).half())
        nn.L1Loss(reduction="sum")(jt.arange(6).reshape(2, 3), jt.ones(2, 3, dtype=jt.int64))
        mse(jt.randn(2, 3), jt.randn(2, 3).double())  # dtypes differ
        mse(jt.randn(0, 3), jt.randn(0, 3))  # empty
    bn(jt.randn(4, 2))
    assert bn.num_batches_tracked.item() == 1
    ln = nn.LayerNorm(4)
    with fwAD.dual_level():  # a dual input: the eager ops carry its tangent
        out = ln(fwAD.make_dual(jt.randn(2, 4), jt.randn(2, 4)))
        assert fwAD.unpack_dual(out).tangent is not None
    assert jt.jit.stats()["calls"] == before
    traced = jt.jit.trace(nn.LayerNorm(4), (jt.randn(2, 4),))
    g = str(traced.graph)  # the composite's ops, recorded one by one
    assert "rsqrt(" in g and "[eager]" not in g
    _served_compiled(mse, jt.randn(4, 3), jt.randn(4, 3))


def test_module_hooks_run_around_the_compiled_call(monkeypatch):
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    m = nn.LayerNorm(5)
    seen = []
    m.register_forward_pre_hook(lambda mod, inp: seen.append("pre"))
    m.register_forward_hook(lambda mod, inp, out: seen.append(tuple(out.shape)))
    x = _t((2, 3, 5), 1, grad=False)
    before = jt.jit.stats()["calls"]
    with jt.no_grad():
        got = m(x)
    assert jt.jit.stats()["calls"] == before + 1  # compiled, inside the module's hooks
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    with jt.no_grad():
        want = m(x)
    assert seen == ["pre", (2, 3, 5)] * 2
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_source_built_once_per_configuration(monkeypatch):
    """The call's source is built at its configuration's first call only; another
    configuration (eps) or an absent optional tensor is another function."""
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    built, srcs = [], []
    make = _eager_compiled._call_function
    monkeypatch.setattr(_eager_compiled, "_call_function",
                        lambda *a: built.append(a[1]) or make(*a))
    # no compile: each "function" records its source and hands the call to the eager path
    monkeypatch.setattr(_eager_compiled, "_script",
                        lambda src, layer: srcs.append(src) or (lambda *a: None))
    x = _t((2, 5), 1, grad=False)
    for m in (nn.LayerNorm(5), nn.LayerNorm(5), nn.LayerNorm(5, eps=1e-3),
              nn.LayerNorm(5, bias=False)):
        m(x)
        m(x)
    assert built == ["layer_norm"] * 3 and len(srcs) == 3
    assert srcs[0] == ("def forward(input, weight, bias):\n    return F.layer_norm("
                       "input=input, weight=weight, bias=bias, normalized_shape=(5, ), "
                       "eps=1e-05)\n")
    assert "eps=0.001" in srcs[1] and "bias=None" in srcs[2] and \
        "def forward(input, weight)" in srcs[2]


def test_first_call_runs_while_the_program_compiles_in_the_background(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))  # cold: nothing on disk
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    m = nn.GroupNorm(3, 6, eps=1e-4)  # a configuration of its own
    x = _t((2, 6, 2), 1, grad=False)
    with jt.no_grad():
        before = jt.jit.stats()
        got = m(x)
        after = jt.jit.stats()
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want = m(x)
    assert _fn(m, (3, 1e-4)).stats["tier"] == "interpreted-while-compiling"
    assert after["background_compiles"] == before["background_compiles"] + 1
    assert after["numba_compiles"] == before["numba_compiles"]  # nothing compiled in the call
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_compiled_log1p_and_logsigmoid_float32_accuracy():
    """Compiled float32 log1p and logsigmoid call fastmath.py's vectorisable log1p_f32 (log(u) *
    x / (u - 1), u = 1 + x, not libm's scalar log1pf): within 4 ulp of the
    float64 value over the float32 range (tiny x, x near -1, huge x, where the product could
    overflow), special values as eager."""
    f = jt.jit.script(_log1p_and_logsigmoid)
    x = np.concatenate([np.linspace(-90, 90, 20001), -np.logspace(-40, -1e-4, 2000),
                        np.logspace(-40, 38.5, 2000), [0.0, -0.0, -1.0, -2.0, np.inf, -np.inf,
                                                       np.nan, 30.0, 100.0]]).astype(np.float32)
    got = f(jt.tensor(x))
    assert f.stats["tier"] == "compiled" and "np.log1p" not in f.code and "log1p_f32" in f.code
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refs = [np.log1p(x64), np.minimum(x64, 0) - np.log1p(np.exp(-np.abs(x64)))]
        eager = [jt.tensor(x).log1p(), nn.functional.logsigmoid(jt.tensor(x))]
    for g, ref, e in zip(got, refs, eager):
        g, e = g.numpy(), e.numpy()
        fin = np.isfinite(ref) & (ref != 0)
        ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(g[fin] - ref[fin]) / ulp) <= 4
        np.testing.assert_array_equal(g[~fin], e[~fin])
    assert np.signbit(got[0].numpy()[-9:-7]).tolist() == [False, True]  # log1p(-0.0) is -0.0


def _log1p_and_logsigmoid(x):
    return x.log1p(), nn.functional.logsigmoid(x)
