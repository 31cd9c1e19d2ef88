"""Fit sin(x): ordinary PyTorch tensor and autograd code, run by jitorch.

Fits y = sin(x) on [-pi, pi] with a cubic polynomial by gradient descent, the classic PyTorch
warm-up, with `import jitorch as torch` as the only change. Prints the loss as it falls and the
fitted coefficients.

    python examples/fit_sine.py [--steps N]
"""
import argparse
import math

import jitorch as torch


def main(steps: int = 2000, lr: float = 1e-6, seed: int = 0) -> float:
    torch.manual_seed(seed)
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=torch.float64)
    y = torch.sin(x)

    # four coefficients, learned by autograd
    a, b, c, d = (torch.randn((), dtype=torch.float64, requires_grad=True) for _ in range(4))

    loss = None
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % max(steps // 5, 1) == steps // 5 - 1 or t == steps - 1:
            print(f"step {t + 1:5d}  loss {loss.item():.4f}")
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None

    print(f"Result: y = {a.item():.4f} + {b.item():.4f} x + {c.item():.4f} x^2 "
          f"+ {d.item():.4f} x^3")
    return loss.item()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    main(ap.parse_args().steps)
