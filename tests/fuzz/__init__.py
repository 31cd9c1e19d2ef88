"""Differential fuzzer: random programs from the registry's ops, run eager, scripted and traced.

Modules (each owns one concept):
- `exclusions`: KNOWN BUGS the fuzzer waits for (disagreements counted as known, not failures);
- `catalog`: how each op is called, harvested from the OpInfo table (tests/opinfos/);
- `program`: the program representation, its source, and its import from a file;
- `statements`, `generate`: candidate statements and the generator (eager validates each one);
- `values`, `mutate`: input sets (values, layouts, aliasing) and the sets derived from a base;
- `compare`, `runner`: outcomes and the differential run of one program;
- `minimize`: shrinking a disagreement to a reproducer; `cli`: the long mode (`python -m fuzz`).

The fixed-seed slice is tests/test_fuzz_differential.py.
"""
