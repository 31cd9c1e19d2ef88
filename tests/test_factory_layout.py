"""Factories honour `layout=jitorch.sparse_coo` where PyTorch does (sparse zeros from `zeros`,
`empty`, `zeros_like`, `new_zeros`, ...) and raise PyTorch's error where it does not, instead
of ignoring it (references: tests/factory_layout_refs.json, from
tests/gen_factory_layout_refs.py)."""
import json
import os

import pytest

import jitorch

from gen_factory_layout_refs import outcome

with open(os.path.join(os.path.dirname(__file__), "factory_layout_refs.json")) as f:
    REFS = json.load(f)["cases"]


@pytest.mark.parametrize("expr", sorted(REFS))
def test_layout_matches_pytorch(expr):
    assert outcome(jitorch, expr) == REFS[expr]


def test_sparse_zeros_are_usable():
    z = jitorch.zeros(2, 3, layout=jitorch.sparse_coo)
    assert z.is_coalesced() and z.sparse_dim() == 2
    assert z.to_dense().tolist() == [[0.0] * 3] * 2
    assert (z + jitorch.ones(2, 3).to_sparse()).to_dense().sum().item() == 6.0


def test_script_refuses_a_sparse_layout():
    # scripted code used to drop `layout=` and return a dense tensor
    with pytest.raises(RuntimeError, match="strided"):
        @jitorch.jit.script
        def f(x):
            return jitorch.zeros(x.size(0), 3, layout=jitorch.sparse_coo)

        f(jitorch.ones(4))
