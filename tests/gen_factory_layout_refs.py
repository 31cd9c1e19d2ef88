"""Regenerates tests/factory_layout_refs.json: what PyTorch's factories do with `layout=`
(`zeros(2, 3, layout=torch.sparse_coo)` is a sparse COO tensor of zeros; `ones(...)` raises),
for tests/test_factory_layout.py (a developer tool, not a test: needs torch installed).

    python tests/gen_factory_layout_refs.py

Each case is an expression over `T` (torch, or jitorch in the test), `d` (a dense (2, 3) float
tensor) and `s` (the same as a sparse COO tensor). Recorded: the result's layout, shape, dtype,
requires_grad and (sparse) nnz, or the exception's type and first sentence.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "factory_layout_refs.json")

CASES = [
    "T.zeros(2, 3, layout=T.sparse_coo)", "T.zeros(2, 3, layout=T.strided)",
    "T.zeros((), layout=T.sparse_coo)", "T.empty(2, 3, layout=T.sparse_coo, dtype=T.float64)",
    "T.zeros(2, 3, layout=T.sparse_coo, requires_grad=True)",
    "T.zeros(2, 3, layout=T.sparse_coo, out=T.zeros(2, 3))", "T.zeros(2, layout='sparse')",
    "T.ones(2, 3, layout=T.sparse_coo)", "T.full((2, 3), 1.0, layout=T.sparse_coo)",
    "T.zeros_like(d, layout=T.sparse_coo)", "T.zeros_like(s)", "T.empty_like(s)",
    "T.zeros_like(s, dtype=T.float64)", "T.zeros_like(s, layout=T.strided)",
    "T.full_like(s, 2.0, layout=T.strided)",
    "T.empty_like(d, layout=T.sparse_coo)", "T.ones_like(d, layout=T.sparse_coo)",
    "T.ones_like(s)", "T.full_like(d, 2.0, layout=T.sparse_coo)", "T.full_like(s, 2.0)",
    "T.rand_like(d, layout=T.sparse_coo)", "T.randn_like(s)", "T.randint_like(s, 3)",
    "T.arange(3, layout=T.sparse_coo)", "T.eye(3, layout=T.sparse_coo)",
    "T.linspace(0, 1, 3, layout=T.sparse_coo)", "T.logspace(0, 1, 3, layout=T.sparse_coo)",
    "T.rand(2, layout=T.sparse_coo)", "T.randn(2, layout=T.sparse_coo)",
    "T.randint(3, (2,), layout=T.sparse_coo)", "T.randperm(3, layout=T.sparse_coo)",
    "T.empty_strided((2,), (1,), layout=T.sparse_coo)",
    "T.tril_indices(3, 3, layout=T.sparse_coo)", "T.scalar_tensor(1, layout=T.sparse_coo)",
    "d.new_zeros(2, layout=T.sparse_coo)", "d.new_empty(2, layout=T.sparse_coo)",
    "d.new_ones(2, layout=T.sparse_coo)", "d.new_full((2,), 1.0, layout=T.sparse_coo)",
    "s.new_zeros(2, 2)", "s.new_empty(2)", "s.new_ones(2)", "s.new_zeros(2, layout=T.strided)",
]


def outcome(T, expr):
    d = T.zeros(2, 3)
    s = d.to_sparse()
    try:
        r = eval(expr, {"T": T, "d": d, "s": s})
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e).split(". ")[0]}
    out = {"layout": str(r.layout).split(".")[-1], "shape": list(r.shape),
           "dtype": str(r.dtype).split(".")[-1], "requires_grad": r.requires_grad}
    if out["layout"] == "sparse_coo":
        out["nnz"] = r._nnz()
    return out


def main():
    import torch
    refs = {expr: outcome(torch, expr) for expr in CASES}
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "cases": refs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
