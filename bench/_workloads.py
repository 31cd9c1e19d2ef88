"""The benchmark workloads, written once in PyTorch's language.

`_harness.load_workloads(backend, name)` imports this file as a fresh module whose global `torch`
is jitorch or PyTorch, so jitorch's `@script`, PyTorch eager, `torch.jit.script` and
`torch.compile` all run the same source text. Only ops both libraries have are used (jitorch has
no `relu`/`softmax`/`layer_norm` functions yet: they are spelled with clamp/exp/mean here).
"""
torch = None  # bound by _harness.load_workloads


def gelu_tanh(x):
    # GELU, tanh approximation (PyTorch's approximate="tanh")
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def bias_relu(x, b):
    return torch.clamp(x + b, min=0.0)


def layernorm_softmax(x, w, b):
    # layer norm over the last dim, then softmax over the last dim
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    var = (d * d).mean(-1, keepdim=True)
    y = d * torch.rsqrt(var + 1e-5) * w + b
    e = torch.exp(y - y.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def mlp(x, w1, b1, w2, b2, w3, b3):
    # 784-256-256-10; weights stored (in, out) so each layer is one x @ w + b
    h = torch.clamp(x @ w1 + b1, min=0.0)
    h = torch.clamp(h @ w2 + b2, min=0.0)
    return h @ w3 + b3


def lstm(x, h, c, w_ih, w_hh, b):
    # x: (T, B, I); weights (in, 4H); the time loop runs inside the compiled program
    for t in range(x.size(0)):
        gates = x[t] @ w_ih + h @ w_hh + b
        i, f, g, o = gates.chunk(4, 1)
        i = torch.sigmoid(i)
        f = torch.sigmoid(f)
        g = torch.tanh(g)
        o = torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
    return h, c


def add(a, b):
    return a + b
