"""`format(t, spec)` / f"{t:spec}" as PyTorch: a plain 0-d tensor formats as its item (with or
without a spec), anything else as an object (its str; a spec is a TypeError). Expected values
are PyTorch 2.13's."""
import pytest

import jitorch


@pytest.mark.parametrize("make, spec, want", [
    (lambda: jitorch.tensor(3.14159), ".3f", "3.142"),
    (lambda: jitorch.tensor(3.14159), "", "3.141590118408203"),
    (lambda: jitorch.tensor(2), "05d", "00002"),
    (lambda: jitorch.tensor(True), "d", "1"),
    (lambda: jitorch.tensor(1.5, requires_grad=True), ">6", "   1.5"),
    (lambda: jitorch.tensor([1.0, 2.0]), "", "tensor([1., 2.])"),
])
def test_format_matches_pytorch(make, spec, want):
    t = make()
    assert format(t, spec) == want
    assert f"{t:{spec}}" == want


@pytest.mark.parametrize("make, name", [
    (lambda: jitorch.tensor([1.0, 2.0]), "Tensor"),
    (lambda: jitorch.nn.Parameter(jitorch.tensor(1.5)), "Parameter"),
])
def test_spec_on_non_scalar_raises(make, name):
    with pytest.raises(TypeError, match=f"unsupported format string passed to {name}.__format__"):
        format(make(), ".2f")
