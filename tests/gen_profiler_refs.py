"""Regenerates tests/profiler_table_refs.txt: PyTorch's profiler table for the synthetic events
of tests/test_profiler.py (a developer tool, not a test: needs torch installed).

    python tests/gen_profiler_refs.py

The events are jitorch's (`test_profiler.synthetic_events`); their averages are handed to
`torch.autograd.profiler_util._build_table`, the function behind PyTorch's `.table()`, sorted as
PyTorch's `EventList.table` sorts them.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    from torch.autograd.profiler_util import _build_table
    import test_profiler as tp
    refs = {}
    for case, (avg_kw, table_kw) in tp.TABLE_CASES.items():
        rows = tp.synthetic_events().key_averages(**avg_kw)
        kw = dict(table_kw)
        key = kw.pop("sort_by")
        rows = sorted(rows, key=lambda e: getattr(e, key), reverse=True)
        refs[case] = _build_table(rows, sort_by=None, profile_memory=True, **kw)
    with open(tp.REFS_FILE, "w") as f:
        for case, text in refs.items():
            f.write(f"=== {case}\n{text}")

if __name__ == "__main__":
    main()
