"""FFT (issue 11): fft of 2^20 complex64 and rfft2 of 1024x1024 float32, one thread for every peer.

jitorch eager (NumPy's pocketfft under the registry op) and scripted (`@jitorch.script`: the
program calls np.fft through rocket-fft inside njit, without the GIL), against NumPy, SciPy
(`scipy.fft`, workers=1), a hand `numba.njit` calling rocket-fft (what the scripted program can
at best be) and, when installed, PyTorch. Every result is checked against NumPy's in float64
before it is timed. Ratios are time / the fastest peer's time (1.00 = fastest).

    python bench/fft.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

from _harness import interleaved, machine, pin_threads, stamp, try_import

pin_threads(1)

import jitorch  # noqa: E402
from jitorch import fft as F  # noqa: E402


@jitorch.script
def scripted_fft(x):
    return F.fft(x)


@jitorch.script
def scripted_rfft2(x):
    return F.rfft2(x)


def _numba_peers():
    try:
        import numba
        import rocket_fft  # noqa: F401
    except ImportError:
        return None, None

    @numba.njit(nogil=True)
    def nb_fft(x):
        return np.fft.fft(x)

    @numba.njit(nogil=True)
    def nb_rfft2(x):
        return np.fft.rfft2(x)
    return nb_fft, nb_rfft2


def _peers(name, x):
    """name -> zero-argument callable computing the transform of x (after a value check)."""
    scipy_fft = try_import("scipy.fft")
    torch = try_import("torch")
    nb_fft, nb_rfft2 = _numba_peers()
    t = jitorch.tensor(x)
    if name == "fft":
        ref = np.fft.fft(x.astype(np.complex128))
        fns = {"jitorch eager": lambda: F.fft(t), "jitorch scripted": lambda: scripted_fft(t),
               "NumPy": lambda: np.fft.fft(x)}
        if scipy_fft is not None:
            import scipy.fft as sf
            fns["SciPy"] = lambda: sf.fft(x, workers=1)
        if nb_fft is not None:
            fns["hand njit + rocket-fft"] = lambda: nb_fft(x)
        if torch is not None:
            tt = torch.from_numpy(x)
            fns["PyTorch"] = lambda: torch.fft.fft(tt)
    else:
        ref = np.fft.rfft2(x.astype(np.float64))
        fns = {"jitorch eager": lambda: F.rfft2(t),
               "jitorch scripted": lambda: scripted_rfft2(t),
               "NumPy": lambda: np.fft.rfft2(x)}
        if scipy_fft is not None:
            import scipy.fft as sf
            fns["SciPy"] = lambda: sf.rfft2(x, workers=1)
        if nb_rfft2 is not None:
            fns["hand njit + rocket-fft"] = lambda: nb_rfft2(x)
        if torch is not None:
            tt = torch.from_numpy(x)
            fns["PyTorch"] = lambda: torch.fft.rfft2(tt)
    scale = np.abs(ref).max()
    for k, f in fns.items():
        r = f()
        r = r.numpy() if hasattr(r, "numpy") else np.asarray(r)
        assert r.dtype == np.complex64, (k, r.dtype)
        err = np.abs(r - ref).max() / scale
        assert err < 1e-5, (k, err)
    return fns


def main(rounds: int = 5) -> None:
    rng = np.random.default_rng(0)
    n = 1 << 20
    work = {
        "fft, 2^20 complex64": ("fft", (rng.standard_normal(n)
                                        + 1j * rng.standard_normal(n)).astype(np.complex64)),
        "rfft2, 1024x1024 float32": ("rfft2", rng.standard_normal((1024, 1024))
                                     .astype(np.float32)),
    }
    jitorch.jit.reset_stats()
    results = {}
    for title, (name, x) in work.items():
        fns = _peers(name, x)
        results[title] = interleaved(fns, rounds=rounds, min_time=0.3)
    st = jitorch.jit.stats()
    assert not st.interpreted_reasons, st.interpreted_reasons  # the scripted rows compiled
    print(f"## FFT (issue 11)\n\n`python bench/fft.py` ({stamp()}; {machine()}; one thread "
          f"for every peer)\n")
    for title, best in results.items():
        fastest = min(best.values())
        print(f"### {title}\n\n| peer | ms | vs fastest |\n|---|---:|---:|")
        for k, s in sorted(best.items(), key=lambda kv: kv[1]):
            print(f"| {k} | {s * 1e3:.2f} | {s / fastest:.2f} |")
        print()
    torch = try_import("torch")
    print(f"NumPy {np.__version__}; SciPy {try_import('scipy').__version__}; "
          f"PyTorch {torch.__version__ if torch else 'not installed'}; rocket-fft "
          f"{getattr(try_import('rocket_fft'), '__version__', 'not installed')}")


if __name__ == "__main__":
    main(rounds=2 if "--quick" in sys.argv else 5)
