"""A tensor argument read only for its shape or dtype (`view_as`'s `other`, `new_zeros`'s
`self`) never carries gradient, as in PyTorch: the references (tests/shape_only_refs.json,
from tests/gen_shape_only_refs.py) say which results PyTorch connects to `p`, and a scan of the
registry checks that every op whose implementation reads a slot's metadata alone declares the
slot `shape_only`."""
import ast
import inspect
import json
import os
import textwrap

import pytest

import jitorch
import jitorch.autograd.forward_ad as fwad
from jitorch._ops.registry import OPS

from gen_shape_only_refs import evaluate

with open(os.path.join(os.path.dirname(__file__), "shape_only_refs.json")) as f:
    REFS = json.load(f)["cases"]

_META = {"shape", "dtype", "ndim", "device", "size", "dim"}


@pytest.mark.parametrize("name", sorted(REFS))
def test_matches_pytorch(name):
    ref = REFS[name]
    got = evaluate(jitorch, fwad, ref["expr"])
    assert got == {"requires_grad": ref["requires_grad"], "tangent": ref["tangent"]}


def _metadata_only_slots(op):
    """The tensor slots the op's implementation reads only as `slot.shape` (or dtype, ...).
    A slot the impl never reads is not counted: autograd's internal ops (`_no_grad_write`)
    take one to route a gradient through it."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(op.impl)))
    parent = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    out = set()
    for slot in op.tensors:
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == slot]
        if uses and all(isinstance(parent.get(u), ast.Attribute) and parent[u].attr in _META
                        for u in uses):
            out.add(slot)
    return out


def test_registry_declares_metadata_only_slots():
    wrong = {}
    for name, op in OPS.items():
        if len(op.tensors) < 2:
            continue
        found = _metadata_only_slots(op)
        if found != set(op.shape_only):
            wrong[name] = (sorted(found), op.shape_only)
    assert not wrong, f"impl reads only metadata of (found, declared shape_only): {wrong}"


def test_backward_and_script_ignore_shape_only_slot():
    p = jitorch.ones(2, 3, requires_grad=True)
    x = jitorch.arange(6.0, requires_grad=True)
    (x.view_as(p) * p).sum().backward()
    assert p.grad.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x.grad.tolist() == [1.0] * 6

    @jitorch.jit.script
    def f(z, q):
        return z.view_as(q) * 2

    assert not f(jitorch.zeros(6), p).requires_grad
