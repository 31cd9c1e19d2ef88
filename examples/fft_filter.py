"""Denoise signals with an FFT low-pass filter compiled by `@jitorch.script`.

A batch of signals (two sines each) is buried in white noise; `denoise` takes each signal's
one-sided spectrum (`jitorch.fft.rfft`), keeps the frequencies below a cutoff (the mask is built
once from `jitorch.fft.rfftfreq`) and transforms back (`jitorch.fft.irfft`). Inside `@script`
the whole function is one Numba program that runs without the GIL: the transforms are NumPy's
pocketfft through rocket-fft, the complex spectrum times the mask is a fused loop. The example
waits for the compiled program (`jitorch.jit.wait_compiled()`: a first run compiles it in a
background worker while the first call runs interpreted), checks that nothing is left to the
interpreter for a reason, that the compiled result equals eager's, and how much of the noise is
gone, and says which tier ran the calls (`jitorch.jit.stats()`).

    python examples/fft_filter.py [--n 4096] [--batch 32] [--cutoff 40]
"""
import argparse
import math

import jitorch


@jitorch.script
def denoise(x, mask):
    spectrum = jitorch.fft.rfft(x)
    return jitorch.fft.irfft(spectrum * mask, n=x.shape[-1])


def make_signals(batch: int, n: int, noise: float = 0.8):
    """Clean signals (sines of 2-30 cycles per window) and a noisy copy of them."""
    t = jitorch.arange(n, dtype=jitorch.float32) / n
    f1 = jitorch.randint(2, 15, (batch, 1)).to(jitorch.float32)
    f2 = jitorch.randint(15, 30, (batch, 1)).to(jitorch.float32)
    clean = jitorch.sin(2 * math.pi * f1 * t) + 0.5 * jitorch.sin(2 * math.pi * f2 * t)
    return clean, clean + noise * jitorch.randn(batch, n)


def rms(x) -> float:
    return x.pow(2).mean().sqrt().item()


def main(n: int = 4096, batch: int = 32, cutoff: float = 40.0) -> dict:
    jitorch.manual_seed(0)
    clean, noisy = make_signals(batch, n)
    # frequencies in cycles per window: rfftfreq(n, d=1/n)
    mask = (jitorch.fft.rfftfreq(n, d=1.0 / n) < cutoff).to(jitorch.float32)
    jitorch.jit.reset_stats()
    out = denoise(noisy, mask)  # the first call starts the compile
    jitorch.jit.wait_compiled()
    out = denoise(noisy, mask)  # the compiled program
    eager = jitorch.fft.irfft(jitorch.fft.rfft(noisy) * mask, n=n)
    stats = jitorch.jit.stats()
    reasons = dict(stats.interpreted_reasons)
    before, after = rms(noisy - clean), rms(out - clean)
    diff = (out - eager).abs().max().item()
    print(f"{batch} signals of {n} samples, cutoff {cutoff:g} cycles per window")
    print(f"rms error: noisy {before:.4f} -> denoised {after:.4f} "
          f"({before / after:.1f}x less noise)")
    print(f"max |scripted - eager| = {diff:.2e}; {stats.calls_by_tier()}")
    assert not reasons, f"denoise ran interpreted: {reasons}"
    print("the compiled program's FFT calls:")
    for line in denoise.code.splitlines():
        if "np.fft." in line:
            print("   ", line.strip())
    return {"before": before, "after": after, "diff": diff, "reasons": reasons,
            "stats": stats}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cutoff", type=float, default=40.0)
    a = ap.parse_args()
    main(a.n, a.batch, a.cutoff)
