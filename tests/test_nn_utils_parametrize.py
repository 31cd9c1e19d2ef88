"""`nn.utils.parametrize`, `nn.utils.parametrizations` (weight_norm, spectral_norm,
orthogonal), the hook forms `nn.utils.weight_norm`/`spectral_norm`, `nn.utils.prune`,
`nn.utils.fusion`, `matrix_exp`, `linalg.householder_product` and `dist` (issue 19).

Values, gradients, state-dict keys and error messages are PyTorch's: the cases live in
tests/nnutils_cases.py and tests/gen_nnutils_refs.py stored PyTorch's results of the same cases
in tests/nnutils_refs.json. Gradients of the new ops are also checked by finite differences.
"""
import json
import os
import warnings

import numpy as np
import pytest

import jitorch
import nnutils_cases

REFS = json.load(open(os.path.join(os.path.dirname(__file__), "nnutils_refs.json")))


def _numeric(want) -> bool:
    try:
        return np.asarray(want).dtype.kind in "fiu"
    except ValueError:  # ragged: a list of different things
        return False


def _same(got, want, path=""):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for k in want:
            _same(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, str):
        # PyTorch's names print with `torch.`, jitorch's with `jitorch.`
        assert got.replace("jitorch.", "torch.") == want, path
    elif isinstance(want, bool) or want is None:
        assert got == want, path
    elif isinstance(want, list) and not _numeric(want):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                                   np.asarray(want, dtype=np.float64), rtol=1e-7, atol=1e-9,
                                   err_msg=path)


@pytest.mark.parametrize("case", sorted(nnutils_cases.CASES))
def test_matches_pytorch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the hook weight_norm's deprecation
        got = nnutils_cases.CASES[case](jitorch)
    _same(got, REFS[case], case)


def test_hook_weight_norm_is_deprecated_as_in_pytorch():
    with pytest.warns(FutureWarning, match=r"`torch.nn.utils.weight_norm` is deprecated in "
                                           r"favor of `torch.nn.utils.parametrizations"):
        jitorch.nn.utils.weight_norm(jitorch.nn.Linear(2, 2))


def test_new_ops_gradients_by_finite_differences():
    from jitorch.autograd import gradcheck
    rng = np.random.RandomState(7)
    a = jitorch.tensor(rng.randn(2, 3, 3) * 0.5, requires_grad=True)
    assert gradcheck(jitorch.matrix_exp, (a,))
    A = jitorch.tensor(rng.randn(4, 3), requires_grad=True)
    tau = jitorch.tensor(rng.rand(3) + 0.5, requires_grad=True)
    assert gradcheck(jitorch.linalg.householder_product, (A, tau))
    x = jitorch.tensor(rng.randn(3, 4), requires_grad=True)
    y = jitorch.tensor(rng.randn(4), requires_grad=True)
    assert gradcheck(lambda u, v: jitorch.dist(u, v, 3), (x, y))


@pytest.mark.parametrize("which", ["weight_norm", "spectral_norm", "orthogonal"])
def test_parametrized_weight_gradients_by_finite_differences(which):
    # the gradient reaching the stored originals is that of the whole parametrized layer
    from jitorch.nn.utils import parametrizations
    rng = np.random.RandomState(8)
    m = jitorch.nn.Linear(3, 3).double()
    getattr(parametrizations, which)(m)
    m.eval()  # spectral_norm: no power iteration, so the function is fixed
    plist = m.parametrizations.weight
    names = [n for n, _ in plist.named_parameters()]
    x = jitorch.tensor(rng.randn(2, 3))

    def f(*originals):
        for n, t in zip(names, originals):
            plist._parameters[n] = t
        return m(x)

    params = tuple(p.detach().clone().requires_grad_() for p in plist.parameters())
    assert jitorch.autograd.gradcheck(f, params)
