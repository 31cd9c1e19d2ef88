"""The scripted form of `RNN`, `LSTM` and `GRU` forwards (`jitorch.jit.script(nn.LSTM(...))`).

The eager forward reaches its parameters by computed names (`getattr(self, name)` over
`_all_weights`) and keeps per-step states in Python lists; the script subset has neither. So a
module configuration (mode, layers, directions, bias, projection, batch_first, dropout) gets a
generated twin of `forward`: Python source with every layer and direction unrolled and every
parameter named literally (`self.weight_hh_l1_reverse`), one `for t in range(T)` time loop per
layer and direction writing `out[t] = h` (compiled, also under autodiff), bidirectional outputs
joined with `stack(..., 2).reshape(T, B, 2 * H)` (its backward is selects). The source is
registered in `linecache`, so the frontend reads it like any method and errors point into it.

At the top (the module scripted itself), the twin takes batched tensors only: `(input, h_0[,
c_0])`. Everything PyTorch's forward does around the recurrence (argument checks and their
messages, unbatched inputs, default zero states, the nested `(h_n, c_n)` result) stays in eager
Python, in the module's own
`_prepare_call` / `_finish_call`, run by the `adapter` that `twin(module)` returns next to the
function: `adapter(*args, **kwargs) -> (twin_args, finish)`, and `finish(results)` gives the
user's result. `script/frontend/module.py` (`_jit_twin`) and `script/runtime/module.py` use them.
The "flat" form is the top form as a plain function of `(input, h0[, c0], *parameters)`, what
an eager call of the module runs compiled (nn/modules/_eager_compiled.py).
Between layers, dropout in training mode is `F.dropout` inside the graph (random: the runtime
may interpret such a graph and records why).
"""
from __future__ import annotations

import itertools
import linecache
from typing import Optional, Tuple  # noqa: F401  (names the generated source may use)

import jitorch as _jt
from ..._tensor import Tensor
from .. import functional as F

_counter = itertools.count()
_FNS: dict = {}  # source -> function (the twin reads nothing but `self`: shared by instances)


def _step_lines(mode: str, names: list, bias: bool, proj: bool, p: str = "self.") -> list:
    """The loop body after `git = gi[t]` (names: weight_ih, weight_hh[, biases][, weight_hr];
    `p`: how a parameter is reached, "self." or "" where parameters are arguments)."""
    w_hh = f"{p}{names[1]}"
    gh = f"F.linear(h, {w_hh}, {p}{names[3]})" if bias else f"F.linear(h, {w_hh})"
    if mode in ("RNN_TANH", "RNN_RELU"):
        act = "jitorch.tanh" if mode == "RNN_TANH" else "jitorch.relu"
        return [f"h = {act}(git + {gh})"]
    if mode == "LSTM":
        out = [f"gates = git + {gh}",
               "i, f, g, o = gates.chunk(4, 1)",
               "c = jitorch.sigmoid(f) * c + jitorch.sigmoid(i) * jitorch.tanh(g)",
               "h = jitorch.sigmoid(o) * jitorch.tanh(c)"]
        if proj:
            out.append(f"h = F.linear(h, {p}{names[-1]})")
        return out
    return [f"gh = {gh}",  # GRU: r multiplies (W_hn h + b_hn), as PyTorch
            "i_r, i_z, i_n = git.chunk(3, 1)",
            "h_r, h_z, h_n = gh.chunk(3, 1)",
            "r = jitorch.sigmoid(i_r + h_r)",
            "z = jitorch.sigmoid(i_z + h_z)",
            "n = jitorch.tanh(i_n + r * h_n)",
            "h = (1 - z) * n + z * h"]


def source(m, form: str = "top") -> str:
    """The twin's source for module `m` (an RNNBase). `form`: "top" (see the module doc), or
    the form a scripted caller inlines (`self.lstm(x)` in a scripted model): PyTorch's
    signature `(input, hx)` and result `(output, (h_n, c_n))`, batched input only; "call":
    the caller passes no state (zeros made in the graph), "call_state": it passes hx. "flat":
    the top form as a plain function of `(input, h0[, c0], *parameters)` (parameters in
    `_flat_weights` order, by their names), dropout baked in for `m.training` as it is now: what
    an eager forward calls compiled (nn/modules/_eager_compiled.py)."""
    inline = form not in ("top", "flat")
    flat = form == "flat"
    p = "" if flat else "self."
    lstm = m.mode == "LSTM"
    nd = 2 if m.bidirectional else 1
    if inline:
        ty = "Tuple[Tensor, Tensor]" if lstm else "Tensor"
        lines = [f"def forward(self, input, hx: {ty}):" if form == "call_state" else
                 f"def forward(self, input, hx: Optional[{ty}] = None):"]
    elif flat:
        params = ", ".join(n for names in m._all_weights for n in names)
        lines = [f"def forward(input, h0, {'c0, ' if lstm else ''}{params}):"]
    else:
        lines = ["def forward(self, input, h0, c0):" if lstm else "def forward(self, input, h0):"]
    body = []
    body.append("x = input.transpose(0, 1)" if m.batch_first else "x = input")
    body += ["T = x.size(0)", "B = x.size(1)"]
    if form == "call":
        n = m.num_layers * nd
        hr = m.proj_size if m.proj_size > 0 else m.hidden_size
        body.append(f"h0 = x.new_zeros(({n}, B, {hr}))")
        if lstm:
            body.append(f"c0 = x.new_zeros(({n}, B, {m.hidden_size}))")
    elif form == "call_state":
        body += ["h0 = hx[0]", "c0 = hx[1]"] if lstm else ["h0 = hx"]
    # sizes read at run time (a literal would bake them: one backward per exact shape)
    body.append("HR = h0.size(2)")
    hs, cs = [], []
    layer_in = "x"
    for layer in range(m.num_layers):
        outs = []
        for d in range(nd):
            k = layer * nd + d
            names = m._all_weights[k]
            w_ih = f"{p}{names[0]}"
            gi = f"F.linear({layer_in}, {w_ih}, {p}{names[2]})" if m.bias else \
                f"F.linear({layer_in}, {w_ih})"
            body += [f"gi = {gi}", f"h = h0.select(0, {k})"]
            if lstm:
                body.append(f"c = c0.select(0, {k})")
            body.append(f"out{k} = x.new_zeros((T, B, HR))")
            if d == 0:
                body.append("for t in range(T):")
                inner = []
            else:
                body.append("for s in range(T):")
                inner = ["t = T - 1 - s"]
            inner.append("git = gi[t]")
            inner += _step_lines(m.mode, names, m.bias, m.proj_size > 0, p)
            inner.append(f"out{k}[t] = h")
            body += ["    " + ln for ln in inner]
            body.append(f"h_n{k} = h")
            hs.append(f"h_n{k}")
            if lstm:
                body.append(f"c_n{k} = c")
                cs.append(f"c_n{k}")
            outs.append(f"out{k}")
        y = f"y{layer}"
        if nd == 1:
            body.append(f"{y} = {outs[0]}")
        else:  # cat(outs, 2) as stack + reshape: the backward of stack is selects
            body.append(f"{y} = jitorch.stack([{', '.join(outs)}], 2).reshape(T, B, {nd} * HR)")
        if m.dropout > 0 and layer < m.num_layers - 1:
            drop = f"{y} = F.dropout({y}, {m.dropout!r}, True)"
            if not flat:
                body += ["if self.training:", "    " + drop]
            elif m.training:  # (the flat form is made per training mode)
                body.append(drop)
        layer_in = y
    body.append(f"output = {layer_in}.transpose(0, 1)" if m.batch_first else
                f"output = {layer_in}")
    rets = ["output", f"jitorch.stack([{', '.join(hs)}], 0)"]
    if lstm:
        rets.append(f"jitorch.stack([{', '.join(cs)}], 0)")
    if inline and lstm:
        body.append(f"return {rets[0]}, ({rets[1]}, {rets[2]})")
    else:
        body.append(f"return {', '.join(rets)}")
    return "\n".join(lines + ["    " + ln for ln in body]) + "\n"


def twin(m, form: str = "top"):
    """(function, adapter) for `m.forward` (see the module doc); the forms a scripted caller
    inlines ("call", "call_state") have no adapter."""
    src = source(m, form)
    fn = _FNS.get(src)
    if fn is None:
        fn = _FNS[src] = _make(src, type(m).__name__)
    if form != "top":
        return fn, None

    def adapter(*args, **kwargs):
        return _adapt(m, args, kwargs)
    return fn, adapter


def _make(src: str, cls: str):
    filename = f"<jitorch-rnn-script-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"jitorch": _jt, "F": F, "Tensor": Tensor, "Optional": Optional, "Tuple": Tuple}
    exec(compile(src, filename, "exec"), ns)
    fn = ns["forward"]
    fn.__qualname__ = f"{cls}.forward"
    return fn


def _adapt(m, args, kwargs):
    if len(args) + len(kwargs) > 2 or not args and "input" not in kwargs:
        raise TypeError(f"{type(m).__name__}.forward() takes input and an optional hx")
    input = args[0] if args else kwargs.pop("input")
    hx = args[1] if len(args) > 1 else kwargs.pop("hx", None)
    if kwargs:
        raise TypeError(f"{type(m).__name__}.forward() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")
    if isinstance(input, tuple):  # a PackedSequence: the twin's loop has one batch size
        raise NotImplementedError(f"scripted {type(m).__name__}: PackedSequence input is not "
                                  "supported (call the module eagerly)")
    input, states, is_batched = m._prepare_call(input, hx)

    def finish(res):
        out = res[0]
        if not is_batched:
            out = out.squeeze(0 if m.batch_first else 1)
        return m._finish_call(is_batched, out, *res[1:])
    return (input,) + tuple(states), finish
