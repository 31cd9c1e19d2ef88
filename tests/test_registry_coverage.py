"""The registry is the compiler's only per-op table: every op either compiles or says why.

An op the code generator cannot lower sends the whole graph that uses it to the interpreter,
which shows only in `jit.stats()`. So each registry op, public or a private helper that VJP
rules and composites emit (a backward using it is interpreted too), must have one of:
- a Numba scalar template (an elementwise op: fused loops, lower_elementwise.py),
- an entry in the lowering table (`script/codegen/lowering.py`, `@lowers("op")`),
- an explicit `interpreted="reason"` in its declaration.
Every op the compiler lowers also needs a type rule (`infer=`, or the generic elementwise rule),
or its outputs type as unknown and the lowering is never reached.
"""
import jitorch  # noqa: F401  (declares every op)
import jitorch.script  # noqa: F401
from jitorch._ops import infer
from jitorch._ops.registry import OPS
from jitorch.script.codegen import lowering


def _templated(op) -> bool:
    return op.kind == "elementwise" and bool(op.scalar)


def test_every_op_has_a_template_a_lowering_or_a_reason():
    table = lowering.table("cpu")
    missing = sorted(n for n, op in OPS.items()
                     if not (_templated(op) or n in table or op.interpreted))
    assert not missing, (f"ops with no scalar template, no @lowers entry and no "
                         f"interpreted='reason' in their declaration: {missing}")


def test_interpreted_reasons_are_sentences_and_not_stale():
    table = lowering.table("cpu")
    for n, op in OPS.items():
        if op.interpreted is None:
            continue
        assert isinstance(op.interpreted, str) and len(op.interpreted) > 10, n
        # an op that has since got a lowering must drop its reason
        assert not (_templated(op) or n in table), f"{n} is lowered but says {op.interpreted!r}"


def test_the_lowering_table_names_registry_ops_and_autodiff_helpers_only():
    """Keys are registry ops, or the named helper nodes of autodiff through control flow
    ("autodiff::<name>", whose own nodes name them: passes/autodiff_control_ops.py `_pyop`)."""
    keys = set(lowering.table("cpu"))
    helpers = {k for k in keys if k.startswith("autodiff::")}
    assert keys - helpers <= set(OPS), sorted(keys - helpers - set(OPS))
    assert helpers == {"autodiff::" + n for n in ("empty_buffer", "stack_store", "zeros_like",
                                                   "index_acc", "take_row", "zero_row", "copy",
                                                   "typed")}


def test_every_lowered_op_has_a_type_rule():
    table = lowering.table("cpu")
    lowered = [op for n, op in OPS.items() if n in table or _templated(op)]
    assert len(lowered) > 150
    untyped = sorted(op.name for op in lowered
                     if op.infer is None and op.kind != "elementwise")
    assert not untyped, f"lowered ops without infer=: {untyped}"


def test_type_rules_are_callable_on_the_registry_side():
    """Rules read their arguments through an Args view and never import the compiler: a
    hand-made view types an op."""

    class Args:
        params = ("input", "dim", "keepdim", "dtype")
        count = 4

        def tensor(self, k):
            return infer.Tensor(jitorch.int32, 3)

        def const(self, k):
            return {1: 1, 2: False, 3: None}[k]

    assert OPS["sum"].infer(Args()) == infer.Tensor(jitorch.int64, 2)
    assert OPS["amax"].infer(Args()) == infer.Tensor(jitorch.int32, 2)
    try:
        OPS["mean"].infer(Args())  # eager raises for integer input: the type stays unknown
    except infer.Unknown:
        pass
    else:
        raise AssertionError("mean of int32 typed")


def test_factories_are_registry_ops():
    for name in ("zeros", "ones", "full", "arange", "linspace", "eye", "tensor", "zeros_like",
                 "new_zeros", "scalar_tensor"):
        op = OPS[name]
        assert op.kind == "factory" and op.nondiff and op.infer is not None, name
        assert name in lowering.table("cpu"), name
