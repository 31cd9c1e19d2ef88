"""Writes tests/distributions_refs.json: PyTorch's values for the cases of
tests/distributions_cases.py (shapes, log_prob, moments, entropy, cdf/icdf, KL divergences,
validation messages). Run with the reference venv:
    /work/torchvenv/bin/python tests/gen_distributions_refs.py
"""
import json
import pathlib
import sys

import torch
import torch.distributions as D

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from distributions_cases import (CASES, INVALID, KL_PAIRS, KL_SECOND,  # noqa: E402
                                 PROPERTIES)


def encode(x):
    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape), "values": x.detach().double().flatten().tolist()}
    return x


def attempt(fn):
    try:
        return encode(fn())
    except (NotImplementedError, ValueError) as e:
        return type(e).__name__


def one_batch(d, value):
    """The last of the values when they carry a sample dim (so they broadcast once expanded)."""
    return value[-1] if value.dim() > len(d.batch_shape) + len(d.event_shape) else value


def main():
    torch.set_default_dtype(torch.float64)
    out = {"cases": {}, "kl": {}, "invalid": {}}
    for name, build in CASES.items():
        d, value = build(torch, D)
        rec = {"batch_shape": list(d.batch_shape), "event_shape": list(d.event_shape),
               "has_rsample": bool(d.has_rsample), "support": repr(d.support),
               "sample_shape": list(d.sample((3,)).shape),
               "expand_shape": list(d.expand((4,) + tuple(d.batch_shape)).batch_shape),
               "expand_log_prob": attempt(lambda: d.expand((4,) + tuple(d.batch_shape))
                                          .log_prob(one_batch(d, value))),
               "log_prob": attempt(lambda: d.log_prob(value)),
               "cdf": attempt(lambda: d.cdf(value))}
        for prop in PROPERTIES:
            rec[prop] = attempt(lambda: getattr(d, prop)() if prop == "entropy"
                                else getattr(d, prop))
        q = torch.tensor([0.3, 0.8]).reshape((2,) + (1,) * len(d.batch_shape))
        rec["icdf"] = attempt(lambda: d.icdf(q))
        out["cases"][name] = rec
    for p_name, q_name in KL_PAIRS:
        p = CASES[p_name](torch, D)[0]
        q = KL_SECOND[q_name](torch, D) if q_name in KL_SECOND else CASES[q_name](torch, D)[0]
        out["kl"][f"{p_name}|{q_name}"] = attempt(lambda: D.kl_divergence(p, q))
    for name, build in INVALID.items():
        try:
            build(torch, D)
            out["invalid"][name] = None
        except ValueError as e:
            out["invalid"][name] = str(e)
    (HERE / "distributions_refs.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
