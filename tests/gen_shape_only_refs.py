"""Regenerates tests/shape_only_refs.json: whether PyTorch connects an op's result to a tensor
argument it reads only for its shape or dtype (`zeros(6).view_as(p)`, `p.new_zeros(3)`), for
tests/test_shape_only_args.py (a developer tool, not a test: needs torch installed).

    python tests/gen_shape_only_refs.py

Each case is an expression over `T` (torch, or jitorch in the test), `p` (a float tensor of
shape (2, 3) that requires grad and, under forward AD, carries a tangent) and `z` (a plain
float tensor of shape (6,)). Recorded: `requires_grad` of the result, and whether it carries a
forward-AD tangent. The positive controls (`p.view_as(z)`) keep the check honest both ways.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "shape_only_refs.json")

CASES = [
    ("view_as", "z.view_as(p)"),
    ("reshape_as", "z.reshape_as(p)"),
    ("expand_as", "z[:3].expand_as(p)"),
    ("type_as", "z.double().type_as(p)"),
    ("broadcast_to", "T.broadcast_to(z[:3], p.shape)"),
    ("new_zeros", "p.new_zeros(3)"),
    ("new_ones", "p.new_ones(3)"),
    ("new_empty", "p.new_empty(3)"),
    ("new_full", "p.new_full((3,), 2.0)"),
    ("new_tensor", "p.new_tensor([1.0, 2.0])"),
    ("zeros_like", "T.zeros_like(p)"),
    ("ones_like", "T.ones_like(p)"),
    ("empty_like", "T.empty_like(p)"),
    ("full_like", "T.full_like(p, 2.0)"),
    ("rand_like", "T.rand_like(p)"),
    ("randn_like", "T.randn_like(p)"),
    # positive controls: the argument whose values flow keeps its edge
    ("view_as_self", "p.view_as(z)"),
    ("reshape_as_self", "p.reshape_as(z)"),
    ("expand_as_self", "p[:1].expand_as(p)"),
    ("type_as_self", "p.type_as(z.double())"),
]


def evaluate(T, fwad, expr):
    """(requires_grad, has a tangent) of `expr`'s result."""
    z = T.zeros(6)
    p = T.zeros(2, 3, requires_grad=True)
    rg = bool(eval(expr, {"T": T, "p": p, "z": z}).requires_grad)
    with fwad.dual_level():
        p = fwad.make_dual(T.zeros(2, 3), T.ones(2, 3))
        out = eval(expr, {"T": T, "p": p, "z": z})
        tangent = fwad.unpack_dual(out).tangent is not None
    return {"requires_grad": rg, "tangent": tangent}


def main():
    import torch
    import torch.autograd.forward_ad as fwad
    refs = {name: dict(evaluate(torch, fwad, expr), expr=expr) for name, expr in CASES}
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "cases": refs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
