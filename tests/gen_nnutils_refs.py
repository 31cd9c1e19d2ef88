"""Regenerates tests/nnutils_refs.json, PyTorch's results of the cases in
tests/nnutils_cases.py and of the programs tests/programs/weightnorm_gan.py and
checkpointed_mlp.py (a developer tool, not a test: needs torch installed).

    python tests/gen_nnutils_refs.py
"""
import json
import os
import sys

import torch
import torch.nn.utils.prune  # noqa: F401  (PyTorch does not import it with nn.utils)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nnutils_cases  # noqa: E402


def _program(name):
    """The program with its import lines pointed at PyTorch (its only jitorch-specific part)."""
    src = open(os.path.join(HERE, "programs", f"{name}.py")).read()
    mod = type(sys)(name)
    exec(compile(src.replace("jitorch", "torch"), f"{name}.py", "exec"), mod.__dict__)
    return mod


def main():
    torch.set_num_threads(1)
    refs = {name: case(torch) for name, case in nnutils_cases.CASES.items()}
    refs["programs"] = {
        "weightnorm_gan": _program("weightnorm_gan").main([]),
        "checkpointed_mlp": _program("checkpointed_mlp").main(["--dropout", "0"]),
    }
    with open(os.path.join(HERE, "nnutils_refs.json"), "w") as f:
        json.dump(refs, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
