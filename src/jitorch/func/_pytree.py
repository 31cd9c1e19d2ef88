"""A minimal pytree for `jitorch.func`: flatten/unflatten nested tuples, lists, namedtuples and
dicts whose leaves are anything (tensors, numbers, None).

`torch.func` transforms accept and return such nests; this module is all the structure handling
they need (no registration of user types).
"""
from __future__ import annotations


class Spec:
    """The structure of a nest: `kind` is 'leaf', 'tuple', 'list', 'namedtuple' or 'dict'."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta=None, children=()):
        self.kind, self.meta, self.children = kind, meta, tuple(children)

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, Spec) and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        return f"{self.kind}({', '.join(map(repr, self.children))})"


_LEAF = Spec("leaf")


def tree_flatten(tree):
    """-> (leaves, spec)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return Spec("namedtuple", type(tree), [_flatten(x, leaves) for x in tree])
    if isinstance(tree, (tuple, list)):
        return Spec(type(tree).__name__ if type(tree) in (tuple, list) else "tuple", None,
                    [_flatten(x, leaves) for x in tree])
    if isinstance(tree, dict):
        keys = tuple(tree)
        return Spec("dict", keys, [_flatten(tree[k], leaves) for k in keys])
    leaves.append(tree)
    return _LEAF


def tree_unflatten(leaves, spec: Spec):
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec.kind == "leaf":
        return next(it)
    kids = [_unflatten(it, c) for c in spec.children]
    if spec.kind == "namedtuple":
        return spec.meta(*kids)
    if spec.kind == "tuple":
        return tuple(kids)
    if spec.kind == "list":
        return kids
    return dict(zip(spec.meta, kids))


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
