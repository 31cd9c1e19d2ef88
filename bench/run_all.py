"""Run the compiler and model benchmarks and rewrite their sections of bench/RESULTS.md.

Each script runs in its own process (so peers' thread settings and caches do not leak between
workloads); its Markdown output is pasted under its section ("## Compiler (issue 3)": the
compiler workloads; "## Models (issue 4)": train steps, optimizer step, encoder inference) with
the command, date and machine. Everything else in RESULTS.md (the issue-2 section, and each
section's hand-written "### Analysis") is kept as is.

    python bench/run_all.py [--quick] [--only gelu_chain mlp train_step ...] [--no-write]

With --only, only the sections of the scripts run are rewritten, and in them the tables of the
scripts not run are kept from the current RESULTS.md.
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
HEADER = "## Compiler (issue 3)"
HEADER4 = "## Models (issue 4)"
ANALYSIS = "### Analysis"  # hand-written part of a section, kept across reruns
SCRIPTS = ["gelu_chain", "layernorm_softmax", "mlp", "lstm", "call_overhead", "threads",
           "compile_first_call"]
SCRIPTS4 = ["train_step", "optim_step", "encoder_infer"]
# per script: a cold cache on a loaded 2-core machine spent ~21 min compiling train_step.py
TIMEOUT_S = 3600


def run_script(name: str, quick: bool) -> str:
    cmd = [sys.executable, str(HERE / f"{name}.py")] + (["--quick"] if quick else [])
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, timeout=TIMEOUT_S)
        out = r.stdout.strip()
        if r.returncode != 0:
            tail = "\n".join(r.stderr.strip().splitlines()[-5:])
            out += f"\n\n`{name}.py` failed (exit {r.returncode}):\n\n```\n{tail}\n```"
    except subprocess.TimeoutExpired:
        out = f"`{name}.py` timed out after {TIMEOUT_S} s"
    print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


INTRO3 = ("Peers: jitorch `@script` (the same source as PyTorch's rows, "
          "bench/_workloads.py), NumPy eager, hand-written Numba kernels (bench/_kernels.py, "
          "the ideal for this backend), PyTorch eager, `torch.jit.script`, `torch.compile` "
          "and `jax.jit` where installed. A cell that starts with a peer's name is why that "
          "peer has no time in this run.")
INTRO4 = ("Peers: jitorch scripted (`jitorch.jit.script` of the nn modules, compiled "
          "optimizer steps where named), jitorch eager, PyTorch eager (and TorchScript where "
          "named), the same model source and initial weights (bench/_train_models.py); a cell "
          "with a note instead of a time says why that peer has no time in this run.")
SECTIONS = {HEADER: (SCRIPTS, INTRO3), HEADER4: (SCRIPTS4, INTRO4)}


def section(outputs: dict, quick: bool, header: str = HEADER) -> str:
    sys.path.insert(0, str(HERE))
    from _harness import machine, stamp
    cmd = "python bench/run_all.py" + (" --quick" if quick else "")
    parts = [header, "",
             f"Command: `{cmd}` (one script per workload, each in its own process; every peer "
             "pinned to one intra-op/BLAS thread per caller).", "",
             f"Run: {stamp()} — {machine()}", "",
             SECTIONS[header][1], ""]
    for name, out in outputs.items():
        parts += [f"<!-- {name}.py -->", out, ""]
    return "\n".join(parts).rstrip() + "\n"


def previous_outputs(text: str, header: str = HEADER) -> dict:
    """Script name -> its output block, as pasted in the current section `header`."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == header), None)
    out, name = {}, None
    if start is None:
        return out
    for ln in lines[start + 1:]:
        if ln.startswith("## ") or ln.rstrip() == ANALYSIS:
            break
        if ln.startswith("<!-- ") and ln.endswith(".py -->"):
            name = ln[5:-7]
            out[name] = []
        elif name is not None:
            out[name].append(ln)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def rewrite(text: str, new_section: str, header: str = HEADER) -> str:
    """Replace the section `header` (up to the next level-2 heading) or append it. A
    hand-written "### Analysis" subsection of the old section is kept, after the tables."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == header), None)
    if start is None:
        return text.rstrip() + "\n\n" + new_section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    old = lines[start:end]
    a = next((i for i, ln in enumerate(old) if ln.rstrip() == ANALYSIS), None)
    if a is not None:
        new_section = new_section.rstrip() + "\n\n" + "".join(old[a:]).rstrip() + "\n"
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + new_section + ("\n" + tail if tail else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    ap.add_argument("--only", nargs="+", choices=SCRIPTS + SCRIPTS4, default=SCRIPTS + SCRIPTS4)
    ap.add_argument("--no-write", action="store_true", help="print, do not edit RESULTS.md")
    a = ap.parse_args()
    ran = {name: run_script(name, a.quick) for name in a.only}
    text = RESULTS.read_text()
    new_text = text
    for header, (names, _) in SECTIONS.items():
        if not any(n in ran for n in names):
            continue  # no script of this section ran: the section stays as it is
        old = previous_outputs(text, header)  # --only: the other scripts' tables are kept
        outputs = {n: ran[n] if n in ran else old[n] for n in names if n in ran or n in old}
        new = section(outputs, a.quick, header)
        if a.no_write:
            print(new)
        else:
            new_text = rewrite(new_text, new, header)
    if not a.no_write:
        RESULTS.write_text(new_text)
        print(f"rewrote the benchmark sections of {RESULTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
