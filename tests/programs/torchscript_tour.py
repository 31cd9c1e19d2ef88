"""PyTorch's "Introduction to TorchScript" tutorial, as its users write it: a cell traced, a
decision gate with control flow (traced: the warning and the branch recorded; scripted: both
branches kept), a scripted loop, traced and scripted modules mixed, `code`/`graph`, and
save/load to a file and to a buffer. The only change to run it on jitorch is the import line."""
import io
import os
import tempfile
import warnings

import jitorch as torch


class MyCell(torch.nn.Module):
    def __init__(self):
        super(MyCell, self).__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.linear(x) + h)
        return new_h, new_h


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCellWithGate(torch.nn.Module):
    def __init__(self, dg):
        super(MyCellWithGate, self).__init__()
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class MyRNNLoop(torch.nn.Module):
    def __init__(self, scripted_gate, x, h):
        super(MyRNNLoop, self).__init__()
        self.cell = torch.jit.trace(MyCellWithGate(scripted_gate), (x, h))

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class WrapRNN(torch.nn.Module):
    def __init__(self, loop):
        super(WrapRNN, self).__init__()
        self.loop = loop

    def forward(self, xs):
        y, h = self.loop(xs)
        return torch.relu(y)


def main():
    torch.manual_seed(0)
    results = {}
    x, h = torch.rand(3, 4), torch.rand(3, 4)

    # Tracing Modules
    my_cell = MyCell()
    traced_cell = torch.jit.trace(my_cell, (x, h))
    print(traced_cell)
    print(traced_cell.graph)
    print(traced_cell.code)
    results["traced_cell"] = (my_cell(x, h)[0], traced_cell(x, h)[0])

    # Using Scripting to Convert Modules: tracing records one branch, and warns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced_gate = torch.jit.trace(MyDecisionGate(), (x,), check_trace=False)
    results["trace_warnings"] = [w for w in caught
                                 if issubclass(w.category, torch.jit.TracerWarning)]
    print(traced_gate.code)
    results["traced_gate_negative"] = (MyDecisionGate()(-x), traced_gate(-x))

    scripted_gate = torch.jit.script(MyDecisionGate())
    my_cell = MyCellWithGate(scripted_gate)
    scripted_cell = torch.jit.script(my_cell)
    print(scripted_gate.code)
    print(scripted_cell.code)
    results["scripted_cell"] = (my_cell(x, h)[0], scripted_cell(x, h)[0])
    results["scripted_gate_negative"] = (MyDecisionGate()(-x), scripted_gate(-x))

    # Mixing Scripting and Tracing
    rnn_loop = torch.jit.script(MyRNNLoop(scripted_gate, x, h))
    print(rnn_loop.code)
    print(rnn_loop.cell.code)
    xs = torch.rand(10, 3, 4)
    traced = torch.jit.trace(WrapRNN(rnn_loop), (xs,))
    print(traced.code)
    results["wrapped"] = (torch.relu(rnn_loop(xs)[0]), traced(xs))

    # Saving and Loading models
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "wrapped_rnn.pt")
        traced.save(path)
        loaded = torch.jit.load(path)
        print(loaded)
        print(loaded.code)
        results["loaded"] = (traced(xs), loaded(xs))
    buffer = io.BytesIO()
    torch.jit.save(scripted_cell, buffer)
    buffer.seek(0)
    from_buffer = torch.jit.load(buffer)
    results["from_buffer"] = (scripted_cell(x, h)[0], from_buffer(x, h)[0])
    return results


if __name__ == "__main__":
    main()
