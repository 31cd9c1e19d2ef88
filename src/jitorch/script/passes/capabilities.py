"""What a code generation target lets the passes assume: the `Capabilities` record.

A target (codegen/target.py, `targets/<name>/`) fills one; the runtime sets it on the graph it
compiles for that target (`graph.capabilities`, before the pipeline runs) and the passes read it
from there (`of(graph)`), never from a device name. Fusion groups only what the target's loops
can compute: dtypes its arrays may have, complex dtypes only for the ops that allow them, row
regions and reduction prologues only where the target lowers them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    dtypes: frozenset  # real dtypes (bool included) of the arrays generated code handles
    complex_dtypes: frozenset = frozenset()  # complex dtypes: only where a lowering allows them
    row_regions: bool = True  # fusion may form row regions (passes/fuse_rows.py)
    reduction_prologues: bool = True  # fusion may fold a last-dim reduction into its producer

    def fusible_dtypes(self, complex_ok: bool) -> frozenset:
        """The dtypes a fused loop may read and write (`complex_ok`: the op allows complex)."""
        return self.dtypes | self.complex_dtypes if complex_ok else self.dtypes


def of(graph) -> Capabilities:
    """The capabilities of the target `graph` is being compiled for."""
    caps = getattr(graph, "capabilities", None)
    if caps is None:
        raise ValueError(f"graph @{graph.name} names no target: set graph.capabilities "
                         f"(codegen.target.get_target(device).capabilities) before fusing")
    return caps
