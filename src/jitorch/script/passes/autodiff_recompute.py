"""Which forward values a traced backward recomputes instead of saving (issue 17).

Owns `Recompute`, the part of `autodiff._Backward` that decides it: a view (a registry `view`
op with constant attributes) of a graph input, of such a view or of a value the VJP rules read
anyway, and a product of two such values (`_RECOMPUTED_ELEMENTWISE`: a layer norm's
`(x - mean) * rstd`), are recomputed in the backward from their operands; values no backward
node reads are not saved (`_drop_unread`). Why: every array a compiled forward entry returns
costs compile time (its boxing and a wider return aggregate, ~0.04 CPU-s each in a Transformer
encoder's forward), and the runtime passes the inputs to the backward itself
(runtime/autodiff.py `_without_inputs`), so a value recomputed from inputs crosses no entry
boundary at all. Views are recomputed bit for bit; a product is one exactly rounded multiply.
"""
from __future__ import annotations

import numpy as np

from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from ..ir import interpreter
from .autodiff_sym import with_sym_shape

# elementwise ops of two saved values that the backward recomputes rather than saving their
# result too (see Recompute._recompute_base): one exactly rounded product
_RECOMPUTED_ELEMENTWISE = {"mul"}


class Recompute:
    """Mixed into autodiff._Backward: uses its graph, env, needs, dynamic, def_node,
    input_uids, saved, saved_t, `_value` and `_shape`; `self.read` is `_rule_reads()`."""

    def _drop_unread(self, graph: ir.Graph) -> None:
        """Forget the intermediate values no backward node reads: rules read every slot they
        name, also where the grad using it is dead code (`mul`'s `self` when only `other`'s
        grad would need it); the forward then does not return them (issue 17)."""
        used = {i.uid for n in graph.block.nodes for i in n.inputs}
        used.update(r.uid for r in graph.block.returns)
        params = graph.block.params
        k = len(params) - len(self.saved)  # the grad inputs come first
        # graph inputs and outputs stay: their version counters are checked at backward
        visible = self.input_uids | {o.uid for o in self.graph.outputs}
        keep = [j for j, (p, v) in enumerate(zip(params[k:], self.saved))
                if p.uid in used or getattr(v, "uid", None) in visible]
        graph.block.params = params[:k] + [params[k + j] for j in keep]
        self.saved = [self.saved[j] for j in keep]

    def _recomputed(self, v: ir.Value):
        """For `v` a view (a registry `view` op with constant attributes: t, transpose,
        narrow, permute, unsqueeze...) of a graph input, of such a view, or of a value the
        rules read anyway, or a product of two such values (`_RECOMPUTED_ELEMENTWISE`): `v`
        recomputed in the backward from its operands, which are saved instead (the
        runtime passes inputs to the backward itself, so the forward returns nothing for them;
        each array a compiled entry returns costs compile time: the boxing and a wider return
        aggregate, ~0.04 CPU-s each in an encoder's forward; issue 17), else None. The same op
        on the same data: the rules read the same values (bit for bit for a view)."""
        # a view the caller gets stays saved: its version counter is checked at backward
        base = None if any(o.uid == v.uid for o in self.graph.outputs) else self._recompute_base(v)
        if base is None:
            return None
        n = self.def_node[v.uid]
        args = [self._value(i) if i.uid in self.dynamic else self.env[i.uid] for i in n.inputs]
        t = interpreter.call_registry_op(n.op, args)
        # as _value's wrappers: the rules read run-time sizes and the requires-grad flag
        t._data = with_sym_shape(np.asarray(t._data), self._shape(v))
        t._requires_grad = v.uid in self.needs
        self.saved_t[v.uid] = t
        return t

    def _rule_reads(self) -> set:
        """The forward values the VJP rules of the nodes that carry gradient read (their
        `slot` and `result` parameters; see _node), known before the trace so that a view
        is recomputed from its base whichever of the two a rule reads first."""
        read = set()
        for n in self.graph.block.nodes:
            op = registry.OPS.get(n.op)
            if op is None or op.vjp is None or not any(o.uid in self.needs for o in n.outputs):
                continue
            by_name = dict(zip(op.params, n.inputs))
            for kind, name in op.vjp_params:
                if kind == "slot" and name in by_name:
                    read.add(by_name[name].uid)
                elif kind == "result":
                    read.update(o.uid for o in n.outputs)
        return read

    def _recompute_base(self, v: ir.Value):
        """The base `_recomputed` recomputes `v` from, or None (see there); for a product of
        two values the rules read anyway (a layer norm's `(x - mean) * rstd`): `v` itself."""
        n = self.def_node.get(v.uid)
        if n is None or not n.inputs or n.op not in registry.OPS or len(n.outputs) != 1:
            return None
        if n.op in _RECOMPUTED_ELEMENTWISE:
            ok = all(i.uid in self.input_uids or i.uid in self.read for i in n.inputs) and \
                all(isinstance(self.env[i.uid], Tensor) and
                    self.env[i.uid]._dtype == self.env[v.uid]._dtype for i in n.inputs)
            return v if ok else None
        if not registry.OPS[n.op].view or any(i.uid in self.dynamic for i in n.inputs[1:]):
            return None
        base = n.inputs[0]
        if not isinstance(self.env.get(base.uid), Tensor):
            return None
        if base.uid in self.input_uids or base.uid in self.read or \
                self._recompute_base(base) is not None:
            return base
        return None
