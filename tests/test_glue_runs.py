"""Repeated glue compiled once (targets/cpu/glue_runs.py): a run of an entry's statements that
recurs (a model's layers) becomes a function of its own, called at each occurrence; the
conditions under which a run is left inline; and the program still computes what eager code
does, forward and backward."""
import re

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch.script.codegen.emitter import Emitter
from jitorch.script.targets.cpu import glue_runs
from jitorch.script.targets.cpu.target import CPU

K = [f"_k{i:016x}" for i in range(8)]  # kernel aliases, as kernel.kernel_alias names them


def _layer(x, w, b, u, n):
    """A layer's glue as program.py writes it (kernel calls, views, shape reads, a check):
    input `x`, weights `w` and `b`, int reads u[n..], returns (its lines, its output)."""
    v = lambda k: f"{k}{n}"  # noqa: E731 - the entry's names: one counter for the whole entry
    lines = [
        f"{v('k1_')} = {K[0]}({x}, {w}.T)",
        f"{v('k2_')}, {v('k3_')} = {K[1]}({v('k1_')}, {b})",
        f"{v('s4_')} = {v('k3_')}.shape[0]",
        f"{v('v5_')} = _jt_reshape({v('k3_')}, ({v('s4_')}, u1[{u}], ), -1)",
        f"if {v('s4_')} == 0:",
        "    raise RaiseInInterpreter()",
        f"{v('k6_')} = {K[2]}({v('v5_')}, {x})",
        f"{v('k7_')} = {K[3]}({v('k6_')})",
        f"{v('k8_')} = {K[4]}({v('k7_')}, {v('k2_')})",
        f"{v('k9_')} = {K[3]}({v('k8_')})",
        f"{v('k10_')} = {K[5]}({v('k9_')}, {w})",
        f"{v('s11_')} = {v('k10_')}.shape[1]",
        f"{v('v12_')} = _jt_expand_checked({v('k10_')}, (u1[{u + 1}], {v('s11_')}, ))",
        f"{v('k13_')} = {K[6]}({v('v12_')}, {v('k6_')})",
        f"{v('k14_')} = {K[3]}({v('k13_')})",
        f"{v('k15_')} = {K[7]}({v('k14_')}, {x})",
        f"{v('k16_')} = {K[3]}({v('k15_')})",
        f"{v('k17_')} = {K[4]}({v('k16_')}, {v('k1_')})",
    ]
    return ["    " + ln for ln in lines], v("k17_")


def _entry(layers: int, extra=None):
    """An entry body of `layers` layers (each its own weights and sizes), its params and its
    return line; `extra(lines, n)` may edit each layer's lines."""
    params = ["a0_", "a1_"] + [f"a{2 + 2 * i}_" for i in range(layers)] + \
        [f"a{3 + 2 * i}_" for i in range(layers)]
    body = ["    u1 = _jt_ints(a1_, 40)"]
    x, outs = "a0_", []
    for i in range(layers):
        lines, x = _layer(x, f"a{2 + 2 * i}_", f"a{3 + 2 * i}_", 2 * i, f"_{i}")
        body += extra(lines, i) if extra else lines
        outs.append(x)
    return params, body, f"    return ({', '.join(outs)}, )\n"


def _outline(params, body, ret):
    em = Emitter(CPU)
    names = {n for ln in body for n in re.findall(r"\b[ksv]\d+_\w*\b", ln)} | set(params)
    out = glue_runs.outline_repeats(em, params, body, ret, names)
    return em, out


def test_a_repeated_layer_is_one_function_called_at_each_occurrence():
    params, body, ret = _entry(2)
    em, out = _outline(params, body, ret)
    assert len(em.kernels) == 1, list(em.kernels)
    source = next(iter(em.kernels.values()))
    alias = "_k" + next(iter(em.kernels))[len("_jitorch_prog_"):][:16]
    calls = [ln for ln in out if f"{alias}(" in ln]
    assert len(calls) == 2, out
    # each occurrence passes its own weights and its own sizes; the run's text names none
    assert "a2_" in calls[0] and "u1[0]" in calls[0] and "a3_" in calls[0]
    assert "a4_" in calls[1] and "u1[2]" in calls[1] and "a5_" in calls[1]
    assert "def kernel_source(p0, " in source and "_0" not in source.split("kernel_source")[1]
    assert "raise RaiseInInterpreter()" in source  # (the check moved with its layer)
    # what each occurrence defines and something after it reads is bound at its call
    assert calls[0].split(" = ")[0].strip() == "k17__0"  # (only the output: read after)
    assert "glue-o1" in source  # the glue pipeline (kernels/llvm_pipelines.py)
    assert out[0] == body[0]  # statements outside the runs are left as they were


def test_the_same_layer_gives_the_same_module():
    """The run's source is written from its own names: layer 2 of another entry (another
    model with the same layers) names the same module, which the disk cache then shares."""
    a = _outline(*_entry(2))[0]
    b = _outline(*_entry(3))[0]
    assert set(a.kernels) & set(b.kernels)


def test_four_layers_nest_runs():
    """Four layers: the longest run is two layers, twice; inside it, one layer twice."""
    em, out = _outline(*_entry(4))
    assert len(em.kernels) == 2, list(em.kernels)
    inner, outer = list(em.kernels.values())  # (the inner run is added first)
    inner_alias = "_k" + list(em.kernels)[0][len("_jitorch_prog_"):][:16]
    assert outer.count(f"{inner_alias}(") == 2
    assert sum(ln.count("= _k") for ln in out) == 2


@pytest.mark.parametrize("why,edit", [
    ("a name assigned twice", lambda lines, n: lines + [f"    k1__{n} = {K[3]}(k1__{n})"]),
    ("a free value that is not a tensor or a number",
     lambda lines, n: lines[:8] + [f"    v99__{n} = _jt_reshape(lst, (u1[{2 * n}], ), -1)"]
     + lines[8:]),
    ("a run shorter than MIN_STATEMENTS", lambda lines, n: lines[:8]),
])
def test_runs_left_inline(why, edit, monkeypatch):
    # (a layer is 17 statements: only runs of a whole layer, edited, are long enough)
    monkeypatch.setattr(glue_runs, "MIN_STATEMENTS", 17)
    params, body, ret = _entry(2, edit)
    body = ["    lst = [a0_, a0_]"] + body
    em, out = _outline(params, body, ret)
    assert not em.kernels, why
    assert out == body, why
    monkeypatch.setattr(glue_runs, "MIN_STATEMENTS", 16)
    em, out = _outline(*_entry(2))  # (unedited, the same layers are outlined)
    assert em.kernels


def test_switched_off(monkeypatch):
    monkeypatch.setenv("JITORCH_GLUE_RUNS", "0")
    params, body, ret = _entry(2)
    em, out = _outline(params, body, ret)
    assert not em.kernels and out == body
    monkeypatch.setenv("JITORCH_GLUE_RUNS", "2")
    with pytest.raises(ValueError, match="JITORCH_GLUE_RUNS"):
        _outline(params, body, ret)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(d, 2 * d), nn.Linear(2 * d, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


class Net(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 3)

    def forward(self, x, y):
        return F.cross_entropy(self.head(self.blocks(x)), y)


def test_a_model_of_repeated_layers_compiles_its_runs_and_agrees_with_eager():
    from jitorch.script.runtime import stats
    stats.reset()
    jitorch.manual_seed(0)
    net = Net(8, 3)
    f = jitorch.jit.script(net)
    for batch in (5, 7):
        x, y = jitorch.randn(batch, 8), jitorch.randint(0, 3, (batch,))
        loss = f(x, y)
        loss.backward()
        grads = [p.grad.clone() for p in net.parameters()]
        for p in net.parameters():
            p.grad = None
        ref = net(x, y)
        ref.backward()
        np.testing.assert_allclose(float(loss), float(ref), rtol=1e-5, atol=1e-6)
        for g, p in zip(grads, net.parameters()):
            np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)
        for p in net.parameters():
            p.grad = None
    st = jitorch.jit.stats()
    assert st["compiled_runs"] >= 2 and st["interpreted_runs"] == 0, st
    assert not st["interpreted_reasons"], st
    # the backward's layers (3 of them, 18 glue statements or more each) hold a run: its
    # module is a glue function, called from the entry more than once
    code = f.code
    runs = [m for m in re.findall(r"# --- kernel (_jitorch_prog_\w+)", code)
            if "def kernel_source" in code.split(f"# --- kernel {m}")[1].split("# ---")[0]
            and "glue-o1" in code.split(f"# --- kernel {m}")[1].split("# ---")[0]]
    assert runs, "no repeated run was outlined"
    alias = "_k" + runs[0][len("_jitorch_prog_"):][:16]
    assert code.count(f"{alias}(") >= 2
