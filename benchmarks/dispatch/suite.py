"""Dispatch overhead: small ops from Python eager, TorchScript and C++.

Every definition is tiny on purpose (4x4 tensors): the kernels cost almost
nothing, so the figures are the cost of getting to them. The table puts
Python eager next to C++ eager; their difference is what Python (argument
parsing, the Python/C++ boundary, the interpreter) adds per call.
Definitions with autograd=True have a scalar output so that `y.backward()`
needs no gradient argument; each timed run does a fresh forward, so each
backward has its own graph and the inputs' gradients accumulate.
"""

import harness
from harness import GroupedModules, GroupedSetup, GroupedStmts

suite = harness.Suite(
    description="Python vs C++ vs TorchScript dispatch overhead of small ops",
    table="grouped",
)

NONE = GroupedSetup()
SQUARE = GroupedSetup(
    py_setup="""
        x = torch.ones(4, 4)
        w = torch.ones(4, 4)
    """,
    cpp_setup="""
        auto x = torch::ones({4, 4});
        auto w = torch::ones({4, 4});
    """,
)
# The reference's `y = x * w` with w requiring grad (also the agreement check in benchmarks/cpp_build.py).
SQUARE_GRAD = GroupedSetup(
    py_setup="""
        x = torch.ones(4, 4)
        w = torch.ones(4, 4, requires_grad=True)
    """,
    cpp_setup="""
        auto x = torch::ones({4, 4});
        auto w = torch::ones({4, 4});
        w.set_requires_grad(true);
    """,
)
# The mask is fixed, not drawn (x > 0.5 was): how many elements x[mask] selects decides its work,
# so a random mask counted 0.4-1.8% apart from one worker to the next.
INDEXING = GroupedSetup(
    py_setup="""
        x = torch.rand(4, 4)
        mask = torch.arange(16).reshape(4, 4) % 2 == 0
        idx = torch.tensor([0, 2])
    """,
    cpp_setup="""
        auto x = torch::rand({4, 4});
        auto mask = torch::arange(16).reshape({4, 4}).remainder(2) == 0;
        auto idx = torch::tensor({0, 2});
    """,
)
BATCHED = GroupedSetup(
    py_setup="""
        a = torch.ones(2, 4, 4)
        b = torch.ones(2, 4, 4)
    """,
    cpp_setup="""
        auto a = torch::ones({2, 4, 4});
        auto b = torch::ones({2, 4, 4});
    """,
)
BROADCAST = GroupedSetup(
    py_setup="""
        x = torch.ones(4, 4)
        row = torch.ones(4)
        col = torch.ones(4, 1)
    """,
    cpp_setup="""
        auto x = torch::ones({4, 4});
        auto row = torch::ones({4});
        auto col = torch::ones({4, 1});
    """,
)
CUBE = GroupedSetup(py_setup="z = torch.ones(2, 3, 4)", cpp_setup="auto z = torch::ones({2, 3, 4});")
MATRIX_2D = GroupedSetup(py_setup="x = torch.ones(3, 4)", cpp_setup="auto x = torch::ones({3, 4});")
IMAGE = GroupedSetup(py_setup="x = torch.ones(1, 4, 4, 4)", cpp_setup="auto x = torch::ones({1, 4, 4, 4});")
SEQUENCE = GroupedSetup(py_setup="x = torch.ones(1, 1, 4)", cpp_setup="auto x = torch::ones({1, 1, 4});")
TRAINING = GroupedSetup(
    py_setup="""
        x = torch.ones(4, 4)
        w0 = torch.ones(4, 4, requires_grad=True)
        w1 = torch.ones(4, 4, requires_grad=True)
        b = torch.zeros(4, requires_grad=True)
    """,
    cpp_setup="""
        auto x = torch::ones({4, 4});
        auto w0 = torch::ones({4, 4}).requires_grad_();
        auto w1 = torch::ones({4, 4}).requires_grad_();
        auto b = torch::zeros({4}).requires_grad_();
    """,
)


def stmts(name, py, cpp, setup=NONE, **kwargs):
    suite.add(GroupedStmts(py, cpp, setup=setup, name=name, **kwargs))


def module(name, py_model, cpp_model, setup, **kwargs):
    suite.add(GroupedModules(py_model, cpp_model, setup=setup, name=name, **kwargs))


# -- baseline and creation ---------------------------------------------------
stmts("empty", "pass", ";")
stmts("scalar_tensor", "torch.tensor(1.0)", "torch::tensor(1.0);")
stmts("empty_tensor", "torch.empty(4)", "torch::empty({4});")
stmts("zeros", "torch.zeros(4, 4)", "torch::zeros({4, 4});")
stmts("ones", "torch.ones(4, 4)", "torch::ones({4, 4});")
stmts("arange", "torch.arange(16)", "torch::arange(16);")
stmts("from_list", "torch.tensor([1.0, 2.0, 3.0, 4.0])", "torch::tensor({1.0, 2.0, 3.0, 4.0});")

# -- indexing -------------------------------------------------------------------
stmts("index_int", "x[0]", "x.index({0});", INDEXING)
stmts("index_slice", "x[1:3]", "x.index({torch::indexing::Slice(1, 3)});", INDEXING)
stmts("index_bool_mask", "x[mask]", "x.index({mask});", INDEXING)
stmts("index_tensor", "x[idx]", "x.index({idx});", INDEXING)
stmts("setitem_int", "x[0] = 1.0", "x.index_put_({0}, 1.0);", INDEXING)

# -- arithmetic -------------------------------------------------------------------
stmts("mul", "y = x * w", "auto y = x * w;", SQUARE_GRAD, signature="f(x, w) -> y", torchscript=True)
stmts("add", "y = x + w", "auto y = x + w;", SQUARE, signature="f(x, w) -> y", torchscript=True)
stmts("add_scalar", "x + 1", "x + 1;", SQUARE)
stmts("add_inplace", "x += 1", "x += 1;", SQUARE)
stmts("mul_inplace", "x.mul_(1.0)", "x.mul_(1.0);", SQUARE)
stmts("broadcast_row", "y = x + row", "auto y = x + row;", BROADCAST, signature="f(x, row) -> y", torchscript=True)
stmts("broadcast_col", "x * col", "x * col;", BROADCAST)

# -- type and device conversion ------------------------------------------------------
stmts("to_float64", "x.to(torch.float64)", "x.to(torch::kFloat64);", SQUARE)
stmts("to_int32", "x.int()", "x.to(torch::kInt);", SQUARE)
stmts("to_same_device", "x.to('cpu')", "x.to(torch::kCPU);", SQUARE)

# -- views and reshapes ------------------------------------------------------------------
stmts("view", "x.view(-1)", "x.view({-1});", SQUARE)
stmts("reshape", "y = x.reshape(2, 8)", "auto y = x.reshape({2, 8});", SQUARE,
      signature="f(x) -> y", torchscript=True)
stmts("transpose", "x.transpose(0, 1)", "x.transpose(0, 1);", SQUARE)
stmts("permute", "z.permute(2, 0, 1)", "z.permute({2, 0, 1});", CUBE)
stmts("contiguous", "x.t().contiguous()", "x.t().contiguous();", SQUARE)

# -- reductions -------------------------------------------------------------------------------
stmts("sum", "y = x.sum()", "auto y = x.sum();", SQUARE, signature="f(x) -> y", torchscript=True)
stmts("mean_dim", "x.mean(0)", "x.mean(0);", SQUARE)
stmts("max", "x.max()", "x.max();", SQUARE)

# -- matrix products -------------------------------------------------------------------------
stmts("matmul", "y = torch.matmul(x, w)", "auto y = torch::matmul(x, w);", SQUARE,
      signature="f(x, w) -> y", torchscript=True)
stmts("mm", "y = torch.mm(x, w)", "auto y = torch::mm(x, w);", SQUARE, signature="f(x, w) -> y", torchscript=True)
stmts("bmm", "y = torch.bmm(a, b)", "auto y = torch::bmm(a, b);", BATCHED, signature="f(a, b) -> y", torchscript=True)

# -- nn modules ------------------------------------------------------------------------------
module("nn.Linear", "model = nn.Linear(4, 2)", "auto model = torch::nn::Linear(4, 2);", MATRIX_2D,
       signature="f(x) -> y", torchscript=True)
module("nn.Conv2d", "model = nn.Conv2d(4, 4, 1)", "auto model = torch::nn::Conv2d(4, 4, 1);", IMAGE,
       signature="f(x) -> y", torchscript=True)
module("nn.LayerNorm", "model = nn.LayerNorm(4)",
       "auto model = torch::nn::LayerNorm(torch::nn::LayerNormOptions({4}));", MATRIX_2D,
       signature="f(x) -> y", torchscript=True)
module(
    "mlp",
    """
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    model = MLP()
    """,
    """
    auto model = torch::nn::Sequential(
        torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
    """,
    MATRIX_2D,
    signature="f(x) -> y",
    torchscript=True,
)
# One step of a one-layer LSTM (zero initial state); y is (output, (h, c)). Not
# TorchScripted: nn.LSTM's forward is overloaded (Tensor or PackedSequence), so
# its scripted form has no `forward` to call. nn.LSTMCell is the scripted step.
module("nn.LSTM_step", "model = nn.LSTM(4, 8)", "auto model = torch::nn::LSTM(4, 8);", SEQUENCE,
       signature="f(x) -> y")
module("nn.LSTMCell", "model = nn.LSTMCell(4, 8)", "auto model = torch::nn::LSTMCell(4, 8);", MATRIX_2D,
       signature="f(x) -> y", torchscript=True)

# -- autograd: forward + backward ------------------------------------------------------------
stmts("mul_sum", "y = (x * w).sum()", "auto y = (x * w).sum();", SQUARE_GRAD,
      signature="f(x, w) -> y", torchscript=True, autograd=True)
stmts(
    "linear_sum",
    "y = torch.nn.functional.linear(x, w0, b).sum()",
    "auto y = torch::nn::functional::linear(x, w0, b).sum();",
    TRAINING,
    signature="f(x, w0, b) -> y",
    torchscript=True,
    autograd=True,
)
stmts(
    "two_layer",
    *harness.parse_stmts(
        r"""
        Python                                        | C++
        --------------------------------------------- | ---------------------------------------------
        a0 = torch.relu(torch.mm(x, w0) + b)          | auto a0 = torch::relu(torch::mm(x, w0) + b);
        y = torch.mm(a0, w1).sum()                    | auto y = torch::mm(a0, w1).sum();
        """
    ),
    TRAINING,
    signature="f(x, w0, w1, b) -> y",
    torchscript=True,
    autograd=True,
)
stmts(
    "layer_norm_sum",
    "y = torch.nn.functional.layer_norm(x, (4,), w1[0], b).sum()",
    "auto y = torch::layer_norm(x, {4}, w1[0], b).sum();",
    TRAINING,
    signature="f(x, w1, b) -> y",
    torchscript=True,
    autograd=True,
)
