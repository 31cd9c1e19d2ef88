"""Recurrent layers: `RNNBase`, `RNN` (tanh/relu), `LSTM` (with `proj_size`), `GRU` and the
single-step cells `RNNCell`, `LSTMCell`, `GRUCell`.

Parameter names, shapes, default initialisation, printed forms, input checks and their messages
follow `torch/nn/modules/rnn.py`, so state_dicts are exchangeable with PyTorch. The gate math is
PyTorch's (ATen `RNN.cpp`): LSTM gates in the order i, f, g, o; GRU gates r, z, n with
`n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`. The forward is composed of jitorch ops, so
autograd (and tracing) work through it: the input projection of a whole sequence is one matmul
per layer and direction, the recurrence one matmul per time step.

A `PackedSequence` input (`nn/utils/rnn.py`) runs the same recurrence on the packed rows: at
step t only the first `batch_sizes[t]` sequences (sorted by decreasing length) advance, so each
sequence's final state is the one at its true length, in both directions; the output is packed
again, and the states are given and returned in the batch's original order. An eager call on
a PackedSequence runs the fused whole-sequence loops where they serve the configuration
(`_eager_compiled.rnn`, `_rnn_fused.py`: the same recurrence, one autograd node), else this
loop.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Optional, Tuple

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from . import _eager_compiled
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# --- one time step (gi = x W_ih^T + b_ih, already computed) ------------------------------------
def _step(mode, gi, h, c, w_hh, b_hh, w_hr=None):
    """One recurrence step; returns (h', c') (c' is None except for LSTM)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return _jt.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return _jt.relu(gi + gh), None
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c_new = _jt.sigmoid(f) * c + _jt.sigmoid(i) * _jt.tanh(g)
        h_new = _jt.sigmoid(o) * _jt.tanh(c_new)
        if w_hr is not None:
            h_new = F.linear(h_new, w_hr)
        return h_new, c_new
    # GRU: the reset gate multiplies (W_hn h + b_hn), not h (PyTorch / cuDNN variant)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = _jt.sigmoid(i_r + h_r)
    z = _jt.sigmoid(i_z + h_z)
    n = _jt.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, None


def _recur(mode, gi_all, sizes, starts, h0, c0, w_hh, b_hh, w_hr, outs, reverse):
    """One layer and direction over the time steps: appends the output rows (sum(sizes),
    H_out) to `outs` and returns the final (h, c). At step t the first `sizes[t]` sequences
    advance (sizes never grow with t); going forward, those that ended keep their last state,
    going backward, a sequence starts from its h0 at its own last step."""
    seq = [None] * len(sizes)
    h, c = h0, c0
    full = h0.size(0)
    if reverse and sizes:
        h = h0[:sizes[-1]] if sizes[-1] < full else h0
        c = (c0[:sizes[-1]] if sizes[-1] < full else c0) if c0 is not None else None
    order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    for t in order:
        bs = sizes[t]
        gi = gi_all[starts[t]:starts[t + 1]]
        if reverse:
            if bs > h.size(0):  # sequences whose last step is t start here
                h = _jt.cat([h, h0[h.size(0):bs]])
                c = _jt.cat([c, c0[c.size(0):bs]]) if c is not None else None
            h, c = _step(mode, gi, h, c, w_hh, b_hh, w_hr)
            seq[t] = h
        elif bs < h.size(0):  # the others ended: their states stay
            h_t, c_t = _step(mode, gi, h[:bs], c[:bs] if c is not None else None, w_hh, b_hh,
                             w_hr)
            seq[t] = h_t
            h = _jt.cat([h_t, h[bs:]])
            c = _jt.cat([c_t, c[bs:]]) if c is not None else None
        else:
            h, c = _step(mode, gi, h, c, w_hh, b_hh, w_hr)
            seq[t] = h
    if sizes:
        outs.append(_jt.cat(seq, 0))
    else:
        outs.append(gi_all.new_zeros((0, h.size(-1))))
    return h, c


class RNNBase(Module):
    """Shared parameter storage, checks and the layer/direction/time loops of RNN, LSTM, GRU."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(_jt.empty(shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _jit_twin(self, name: str, form: str = "top"):
        """`jitorch.jit.script(module)` (form "top") and scripted callers (`self.lstm(x)`:
        "call", `self.lstm(x, hx)`: "call_state") compile a generated twin of `forward` (one
        per configuration; see _rnn_script.py): the eager forward is not in the script
        subset."""
        if name != "forward":
            return None
        from ._rnn_script import twin
        return twin(self, form)

    def flatten_parameters(self) -> None:
        """A no-op, as in PyTorch on CPU (cuDNN weight packing)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # --- checks (PyTorch's messages, prefixed by the layer's name where PyTorch has none) -----
    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        w = getattr(self, self._flat_weights_names[0])  # (not the whole list: per call)
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3  # packed data: (rows, features)
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"{self._get_name()}: input.size(-1) must be equal to "
                               f"input_size. Expected {self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(f"{self._get_name()}: " + msg.format(expected, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _prepare_call(self, input, hx=None):
        """Checks and defaults of a call: (batched input, (h_0,), is_batched)."""
        input, is_batched = self._prepare(input)
        if hx is not None:
            if not is_batched and hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            if is_batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            if not is_batched:
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros_hidden(input, self.hidden_size)
        self.check_forward_args(input, hx)
        return input, (hx,), is_batched

    def _finish_call(self, is_batched, output, h_n, c_n=None):
        if not is_batched:
            h_n = h_n.squeeze(1)
        return output, h_n

    # --- the recurrence -----------------------------------------------------------------------
    def _run(self, input: Tensor, h0: Tensor, c0: Optional[Tensor], batch_sizes=None):
        """Time-major input (T, B, F) -> (output (T, B, D*H_out), h_n, c_n); or, with
        `batch_sizes` (a list of ints), a PackedSequence's data (rows, F) -> (output rows,
        h_n, c_n), each sequence's states taken at its own length."""
        num_directions = 2 if self.bidirectional else 1
        packed = batch_sizes is not None
        if packed:
            sizes, layer_input = list(batch_sizes), input
        else:  # a padded batch is the packed case with every sequence of length T
            sizes = [input.size(1)] * input.size(0)
            layer_input = input.reshape(input.size(0) * input.size(1), input.size(2))
        starts = [0]
        for bs in sizes:
            starts.append(starts[-1] + bs)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                params = [getattr(self, n) for n in self._all_weights[idx]]
                w_ih, w_hh = params[0], params[1]
                b_ih = params[2] if self.bias else None
                b_hh = params[3] if self.bias else None
                w_hr = params[-1] if self.proj_size > 0 else None
                gi_all = F.linear(layer_input, w_ih, b_ih)  # one matmul for all time steps
                h, c = _recur(self.mode, gi_all, sizes, starts, h0[idx],
                              c0[idx] if c0 is not None else None, w_hh, b_hh, w_hr,
                              outs, direction == 1)
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            layer_output = outs[0] if num_directions == 1 else _jt.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output
        if not packed:
            layer_input = layer_input.reshape(input.size(0), input.size(1),
                                              layer_input.size(-1))
        return layer_input, _jt.stack(h_n, 0), (_jt.stack(c_n, 0) if c_n else None)

    def _forward_packed(self, input: PackedSequence, hx):
        """`forward` on a PackedSequence: (packed output, h_n) or (packed output, (h_n, c_n))."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = [int(b) for b in batch_sizes.tolist()]
        lstm = self.mode == "LSTM"
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        num_directions = 2 if self.bidirectional else 1
        if hx is None:
            def zeros(size):
                return _jt.zeros((self.num_layers * num_directions, sizes[0], size),
                                 dtype=data.dtype, device=data.device)
            hx = (zeros(real_hidden), zeros(self.hidden_size)) if lstm else zeros(real_hidden)
        else:  # given in the batch's original order
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        h0, c0 = hx if lstm else (hx, None)
        res = _eager_compiled.rnn(self, data, (h0, c0) if lstm else (h0,), sizes)
        if res is not None:  # the fused loops (the packed rows of every step, one node)
            output, h_n, c_n = res[0], res[1], res[2] if lstm else None
        else:
            output, h_n, c_n = self._run(data, h0, c0, sizes)
        output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        hidden = (h_n, c_n) if lstm else h_n
        return output, self.permute_hidden(hidden, unsorted_indices)

    def _prepare(self, input: Tensor):
        """Unbatched inputs get a batch dim; returns (input (B-first or T-first), batched?)."""
        name = self._get_name()
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"tensor instead")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, is_batched

    def _zeros_hidden(self, input: Tensor, size: int) -> Tensor:
        num_directions = 2 if self.bidirectional else 1
        batch = input.size(0) if self.batch_first else input.size(1)
        return _jt.zeros((self.num_layers * num_directions, batch, size), dtype=input.dtype)

    def _time_major(self, input: Tensor) -> Tensor:
        return input.transpose(0, 1) if self.batch_first else input

    def _finish(self, output: Tensor, is_batched: bool) -> Tensor:
        if self.batch_first:
            output = output.transpose(0, 1)
        return self._unbatch(output, is_batched)

    def _unbatch(self, output: Tensor, is_batched: bool) -> Tensor:
        return output if is_batched else output.squeeze(0 if self.batch_first else 1)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, (hx,), is_batched = self._prepare_call(input, hx)
        res = _eager_compiled.rnn(self, input, (hx,))
        if res is not None:  # the whole sequence compiled (batch-first as the input)
            return self._finish_call(is_batched, self._unbatch(res[0], is_batched), res[1])
        output, h_n, _ = self._run(self._time_major(input), hx, None)
        return self._finish_call(is_batched, self._finish(output, is_batched), h_n)

class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's gate equations, reset gate applied after W_hn h + b_hn)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    forward = RNN.forward


class LSTM(RNNBase):
    """Long short-term memory; `proj_size > 0` projects h_t with `weight_hr_l{k}`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, (h0, c0), is_batched = self._prepare_call(input, hx)
        res = _eager_compiled.rnn(self, input, (h0, c0))
        if res is not None:  # the whole sequence compiled (batch-first as the input)
            return self._finish_call(is_batched, self._unbatch(res[0], is_batched), *res[1:])
        output, h_n, c_n = self._run(self._time_major(input), h0, c0)
        return self._finish_call(is_batched, self._finish(output, is_batched), h_n, c_n)

    def _prepare_call(self, input, hx=None):
        """Checks and defaults of a call: (batched input, (h_0, c_0), is_batched)."""
        input, is_batched = self._prepare(input)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (self._zeros_hidden(input, real_hidden),
                  self._zeros_hidden(input, self.hidden_size))
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            d0, d1 = hx[0].dim(), hx[1].dim()
            if is_batched and (d0 != 3 or d1 != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({d0}-D, {d1}-D) tensors")
            if not is_batched:
                if d0 != 2 or d1 != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({d0}-D, {d1}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        return input, tuple(hx), is_batched

    def _finish_call(self, is_batched, output, h_n, c_n=None):
        if not is_batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# --- cells -------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters `weight_ih`, `weight_hh`, `bias_ih`, `bias_hh` of one recurrent cell."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(_jt.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_jt.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(_jt.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_jt.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # The cells' forwards are written in the script subset (no helper calls returning tuples,
    # no lists of states), so `jitorch.jit.script` compiles them, e.g. inside a time loop.
    def _check_input(self, input: Tensor) -> None:
        if input.dim() != 1 and input.dim() != 2:
            raise ValueError(f"{self._get_name()}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")

    def _check_state(self, input: Tensor, state: Tensor, label: str) -> None:
        """`input` and `state` already batched (2-D)."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"{self._get_name()}: input has inconsistent input_size: got "
                               f"{input.size(1)} expected {self.input_size}")
        if state.dim() != 2 or state.size(0) != input.size(0) or \
                state.size(1) != self.hidden_size:
            raise RuntimeError(f"{self._get_name()}: {label} has inconsistent size: got "
                               f"{list(state.shape)}, expected [{input.size(0)}, "
                               f"{self.hidden_size}]")

    def _batched_state(self, input: Tensor, hx: Optional[Tensor], is_batched: bool,
                       label: str) -> Tensor:
        if hx is None:
            return _jt.zeros((input.size(0), self.hidden_size), dtype=input.dtype)
        if hx.dim() != 1 and hx.dim() != 2:
            raise ValueError(f"{self._get_name()}: Expected {label} to be 1D or 2D, got "
                             f"{hx.dim()}D instead")
        return hx if is_batched else hx.unsqueeze(0)


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_input(input)
        is_batched = input.dim() == 2
        x = input if is_batched else input.unsqueeze(0)
        h = self._batched_state(x, hx, is_batched, "hidden state")
        self._check_state(x, h, "hidden")
        pre = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh,
                                                                   self.bias_hh)
        h_new = _jt.tanh(pre) if mode == "RNN_TANH" else _jt.relu(pre)
        return h_new if is_batched else h_new.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tensor]:
        self._check_input(input)
        is_batched = input.dim() == 2
        x = input if is_batched else input.unsqueeze(0)
        if hx is None:
            h = self._batched_state(x, None, is_batched, "hx[0]")
            c = h
        else:
            h = self._batched_state(x, hx[0], is_batched, "hx[0]")
            c = self._batched_state(x, hx[1], is_batched, "hx[1]")
        self._check_state(x, h, "hidden0")
        self._check_state(x, c, "hidden1")
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh,
                                                                     self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        c_new = _jt.sigmoid(f) * c + _jt.sigmoid(i) * _jt.tanh(g)
        h_new = _jt.sigmoid(o) * _jt.tanh(c_new)
        # conditional expressions, not an early return in an `if`: scripted modules lose the
        # gradient link of tuple outputs returned from inside an `if` (compiler bug, reported)
        return (h_new if is_batched else h_new.squeeze(0),
                c_new if is_batched else c_new.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self._check_input(input)
        is_batched = input.dim() == 2
        x = input if is_batched else input.unsqueeze(0)
        h = self._batched_state(x, hx, is_batched, "hidden state")
        self._check_state(x, h, "hidden")
        i_r, i_z, i_n = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, 1)
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, 1)
        r = _jt.sigmoid(i_r + h_r)
        z = _jt.sigmoid(i_z + h_z)
        h_new = (1 - z) * _jt.tanh(i_n + r * h_n) + z * h
        return h_new if is_batched else h_new.squeeze(0)
