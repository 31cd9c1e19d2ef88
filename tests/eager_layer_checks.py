"""The check both eager-compiled-layer test files make (test_eager_compiled_layers.py,
test_eager_compiled_attention.py): a layer's step with the compiled path switched off, then on,
gives the same values and gradients; the compiled tier served it; its second call compiles
nothing and runs nothing interpreted."""
import numpy as np

import jitorch as jt
from jitorch.nn.modules import _eager_compiled


def check_compiled_matches_eager(step, report, monkeypatch):
    """`step()` -> list of arrays (outputs and gradients); `report()` -> the layer's function
    report (`jit.stats()["functions"][...]`)."""
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    before = jt.jit.stats()["calls"]
    want = step()
    assert jt.jit.stats()["calls"] == before  # switched off: no compiled function ran
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    got = step()
    rep = report()
    assert rep["tier"] == "compiled" and rep["programs_interpreted"] == 0, dict(rep)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    st = jt.jit.stats()
    got2 = step()  # the second call: compiled forward and backward, nothing built
    st2 = jt.jit.stats()
    assert st2["compiled_runs"] > st["compiled_runs"]
    assert st2["interpreted_runs"] == st["interpreted_runs"]
    assert st2["compiles"] == st["compiles"]
    for a, b in zip(got2, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
