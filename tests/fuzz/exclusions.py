"""KNOWN BUGS the fuzzer waits for: every disagreement class that is known and not fixed on this
branch, each naming the bug (issue 9) and the work it waits for.

The generator keeps generating these cases (so a regression is caught the day an entry is
removed); a disagreement that matches an active entry is counted as "known" instead of failing.
Each entry's `match(finding)` is as narrow as the class allows: the mode, the kind of
disagreement, what eager raised, and the statements or input layouts involved.

Remove an entry when the branch that fixes its bug is merged; `JITORCH_FUZZ_KNOWN=none` turns
every entry off (to see what still fails), `JITORCH_FUZZ_KNOWN=a,b` keeps only entries a and b.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Known:
    name: str
    waits_for: str  # the bug and the branch/area fixing it
    match: Callable


def _tags(f):
    return {s.tag for s in f.program.body}


def _has_tag(f, *prefixes):
    return any(t.startswith(p) for t in _tags(f) for p in prefixes)


def _eager_says(f, pattern):
    e = f.eager_exc
    return e is not None and re.search(pattern, str(e)) is not None


def _set(f):
    return f.sets[f.set_index]


def _pow_on_ints(f):
    return _has_tag(f, "op:**", "rop:**", "form:pow", "inplace:pow_", "form:float_power") and \
        any(a.kind == "tensor" and a.dtype.np.kind in "iub" for a in f.program.args)


def _frontend_tuple_ops():
    """The ops whose tuple/list result the script frontend knows (its own table)."""
    try:
        from jitorch.script.frontend import call as fc
        return set(fc._TUPLE2) | set(fc._TUPLE2_WITH_DIM) | set(fc._LIST_OUT)
    except (ImportError, AttributeError):
        return None


def _unknown_tuple_result(f):
    """A call returning a tuple whose arity the frontend does not know."""
    known = _frontend_tuple_ops()
    if known is None:
        return False
    for s in f.program.body:
        if s.tag.startswith("form:") and "+tuple" in s.tag:
            name = s.tag[5:].split("+")[0].rsplit(".", 1)[-1]
            if name not in known:
                return True
    return False


def _undeclared_alias(f):
    """A call returned (a view of) its operand but its registry declaration (if any) does
    not say it may (`view=`): the script frontend's alias analysis then treats it as a copy."""
    from jitorch._ops.registry import OPS
    for s in f.program.body:
        if s.tag.startswith("form:") and "+alias" in s.tag:
            name = s.tag[5:].split("+")[0].rsplit(".", 1)[-1]
            op = OPS.get(name)
            if op is None or not op.view:
                return True
    return False


def _static_tensor_slot(f):
    """A call of an op one of whose tensor slots has a name the frontend makes static."""
    try:
        from jitorch._ops.registry import OPS
        from jitorch.script.frontend.call import STATIC_PARAMS
    except ImportError:
        return False
    for s in f.program.body:
        if s.tag.startswith("form:"):
            op = OPS.get(s.tag[5:].split("+")[0].rsplit(".", 1)[-1])
            if op is not None and set(op.tensors) & set(STATIC_PARAMS):
                return True
    return False


def _tensor_index(f):
    """A statement indexes (reads or writes) with a tensor variable."""
    return any(s.tag.startswith(("index", "setitem")) and len(s.reads) > 1 and
               any(r.startswith(("a", "v")) for r in s.reads[1:]) for s in f.program.body)


KNOWN = [
    # --- found by this fuzzer; the fix is outside the fuzzer's files (see the report) ---------
    Known("writes-lost-on-error", "runtime.py write-back: when a call raises, the writes to "
          "arguments made before the failing statement are dropped (eager keeps them)",
          lambda f: f.kind in ("argument-after-error", "interpreted-argument-after-error")),
    Known("trace-example-sizes", "trace.py: the tracer resolves size-dependent parts of a "
          "call against the example's sizes (an open slice `x[2::3]` is recorded as "
          "(2, 6, 3), index writes reshape to the example's shape, copy_ expands to it), so "
          "the trace silently gives wrong shapes or raises on other sizes; PyTorch records "
          "them symbolically",
          lambda f: f.kind == "trace-sizes"),
    Known("trace-tensor-index-baked", "trace.py: a 0-d integer tensor used as an index is "
          "baked into the trace as a constant, with no TracerWarning",
          lambda f: f.mode == "trace" and f.set_index != f.example and _tensor_index(f)),
    Known("trace-view-input-write", "trace.py: an in-place write to a traced input that is a "
          "view (sliced/transposed) is recorded on the view's base, which the trace bakes in "
          "as a constant: the traced graph then ignores that input",
          lambda f: f.mode == "trace" and f.program.writes_anything() and
          any(lay is not None and lay[0] in ("step", "perm")
              for lay in f.sets[f.example if f.example is not None else f.set_index].layouts)),
    Known("alias-returning-call", "frontend_alias.py: a call that returns its input (or a "
          "view of it) without a registry view declaration (resolve_conj and conj on real "
          "tensors, atleast_1d/2d/3d, broadcast_tensors, ...) is taken as a fresh tensor: "
          "writes through the result, or later writes to the input, are not seen",
          lambda f: f.mode in ("script", "trace") and f.program.writes_anything() and
          _undeclared_alias(f)),
    Known("inplace-shape-unchecked", "frontend (in-place methods and copy_ compiled as an op "
          "plus a write-back / an index write `x[()] = src`): the result is not checked to "
          "have self's shape, so `x.lt_(y)` with a y that broadcasts x up, or copy_ from a src "
          "with extra leading size-1 dims, succeeds; eager raises \"output with shape ... "
          "doesn't match the broadcast shape\"",
          lambda f: f.kind == "compiled-succeeded" and _has_tag(f, "inplace:", "aug:") and
          _eager_says(f, "doesn't match the broadcast shape")),
    Known("zero-dim-index-copy", "frontend_index.py: x[t] with a 0-d integer tensor t is a "
          "view in eager (an int index) but a copy (advanced indexing) in scripted code, so "
          "writes through it are lost",
          lambda f: f.mode == "script" and f.kind in ("argument", "value") and
          _tensor_index(f) and f.program.writes_anything()),
    Known("tuple-result-typed-tensor", "frontend_call.py: the result arity comes from the "
          "frontend's own tables (_TUPLE2, _LIST_OUT), not the registry; a call returning a "
          "tuple that they miss (max_pool*_with_indices, adaptive_max_pool*(return_indices), "
          "nonzero(as_tuple), unique, linalg.svd, ...) is typed as one Tensor: `a, b = r` "
          "silently gives r[0], r[1] and `r[0]` raises TypeError",
          lambda f: f.mode == "script" and _unknown_tuple_result(f)),
    Known("scalar-result-typed-tensor", "frontend_call.py: a call returning a Python number "
          "(is_conj, is_floating_point, equal, ...) that runs as a PythonOp is typed as a "
          "Tensor, so arithmetic on it gives a tensor where eager gives an int/bool",
          lambda f: f.mode == "script" and _has_tag(f, "form:") and
          any("+scalar" in s.tag for s in f.program.body) and
          f.kind in ("structure", "value", "dtype", "compiled-raised", "error-type")),
    Known("maybe-view-write-refused", "frontend_alias.py + runtime._refuse_writes: a write "
          "through the result of a may-view op (contiguous, flatten, reshape) counts as a "
          "write to the argument, so an expanded argument is refused even where eager's op "
          "made a copy and the write is legal",
          lambda f: f.kind == "compiled-raised" and
          "more than one element of the written-to" in str(f.got_exc)),
    Known("static-tensor-source", "frontend_call.py STATIC_PARAMS: a tensor argument passed "
          "as `source` (index_add/index_copy/masked_scatter) is made a static argument: keyed "
          "by identity (a compile per call) and runtime._why compares tensors with !=",
          lambda f: f.mode == "script" and f.kind != "frontend" and _static_tensor_slot(f)),
    Known("guard-not-compiled", "_ops/binary.py guard(): checks wrapped around an op's "
          "public function (sub's bool operands; pow's, see int-negative-pow) never reach "
          "compiled code, which calls the op itself: scripted `a - b` on bool tensors returns "
          "a result where eager raises",
          lambda f: (f.kind == "compiled-succeeded" and
                     _eager_says(f, r"Subtraction, the `-` operator, with")) or
          (f.kind == "error-type" and _eager_says(f, r"~ \(operator.invert\) is only"))),
    Known("bce-range-check", "issue 9 item 4 (value checks in programs): _ops/nn_loss.py "
          "_unit_interval (binary_cross_entropy's input range check) has an identity scalar "
          "template, so compiled code skips the check (nan instead of eager's RuntimeError); "
          "declare the check with the numerics branch's mechanism for in-program value checks",
          lambda f: f.kind == "compiled-succeeded" and
          _eager_says(f, "should be between 0 and 1")),
    Known("untracked-view-write", "frontend_alias.py: a write through a view the alias analysis "
          "does not follow (`x.T`, `x.mT`, an element of broadcast_tensors' list) is a "
          "ScriptError; TorchScript accepts it (the write lands in the viewed storage)",
          lambda f: f.kind == "frontend" and "storage the compiler cannot follow" in f.detail),
    Known("boundary-refusal-unlocated", "runtime/functions.py _refuse_writes: PyTorch's "
          "refusal to write to an expanded argument is raised at the call boundary, before the "
          "program runs, so it carries no line of the user's file and is not a jit.Error "
          "(issue 21 item 4's rule, docs/compilation.md)",
          lambda f: f.kind == "error-not-located" and
          "more than one element of the written-to" in str(f.got_exc)),
    Known("write-check-order", "runtime.py _refuse_writes: the refusal to write to an expanded "
          "argument is raised before the program runs, so it wins over the error eager meets "
          "first (an out-of-range index)",
          lambda f: f.kind == "error-type" and
          "more than one element of the written-to" in str(f.got_exc) and
          not _eager_says(f, "more than one element of the written-to")),
    Known("fma-overflow", "targets/cpu/blas.py (left as is): the small-M kernel fuses multiply-add, "
          "so a float32 product that overflows stays finite inside the fma and a sum of "
          "overflowing products gives inf where eager's BLAS gives nan; both are IEEE results "
          "(PyTorch's own BLAS kernels differ the same way)",
          lambda f: f.kind == "value" and "nan at" in f.detail and "inf" in f.detail and
          _has_tag(f, "op:@", "form:matmul", "form:mm", "form:mv", "form:dot", "form:bmm",
                   "form:inner", "form:addmm", "form:linear")),
    Known("reshape-maybe-view-write", "frontend_alias.py: reshape/flatten/contiguous of an "
          "argument are treated as views, so a write through the result reaches a strided "
          "argument in compiled code, where eager's reshape copied (a view only when the "
          "strides allow): the alias analysis needs a run-time 'is this a view' branch",
          lambda f: f.mode == "script" and f.kind == "argument" and
          any(lay is not None and lay[0] in ("step", "perm", "expand")
              for lay in _set(f).layouts) and
          any(w in f.program.source() for w in ("reshape(", "flatten(", "contiguous(",
                                                ".view(-1)"))),
    Known("elementwise-output-layout", "codegen: compiled elementwise ops return C-contiguous "
          "results where eager (NumPy, like PyTorch's TensorIterator) keeps a strided input's "
          "memory order, so a later view() succeeds compiled where eager raises",
          lambda f: f.kind == "compiled-succeeded" and
          _eager_says(f, r"view size is not compatible")),
    Known("ce-prob-targets", "frontend_nn.py: cross_entropy/nll_loss with class-probability "
          "(floating point) targets is NotImplementedError in scripted code (\"not supported "
          "yet\"); eager computes it",
          lambda f: f.mode == "script" and isinstance(f.got_exc, NotImplementedError) and
          "class-probability" in str(f.got_exc)),
    Known("abs-builtin", "frontend: the builtin abs() on a tensor is a ScriptError "
          "(TorchScript maps it to aten::abs)",
          lambda f: f.kind == "frontend" and "abs() on tensors" in f.detail),
]


def active():
    sel = os.environ.get("JITORCH_FUZZ_KNOWN", "")
    if sel == "none":
        return []
    if sel:
        names = set(sel.split(","))
        return [k for k in KNOWN if k.name in names]
    return list(KNOWN)


def classify(finding, entries=None):
    """The name of the known bug `finding` is an instance of, or None (a new disagreement)."""
    for k in active() if entries is None else entries:
        try:
            if k.match(finding):
                return k.name
        except Exception:  # a matcher must never hide a finding by crashing
            continue
    return None
