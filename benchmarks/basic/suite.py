"""A quick suite of small Python statements: the smoke test of `python -m harness bench`."""

import harness

suite = harness.Suite(description="Small eager-mode statements timed from Python")

suite.timer("empty", "pass")
suite.timer("tensor_mul_4x4", "y = x * w", setup="x = torch.ones(4, 4)\nw = torch.ones(4, 4)")
suite.timer("tensor_add_scalar", "y = x + 1", setup="x = torch.ones(16)")
suite.timer("torch_empty", "torch.empty(4)")
suite.timer("tensor_sum_1k", "x.sum()", setup="x = torch.randn(1024)", num_threads=(1, 2))
suite.timer("index_int", "x[0]", setup="x = torch.randn(8, 8)")
suite.timer(
    "add_inplace_fresh_input",
    "item.add_(1)",
    setup="import torch",
    batch_setup="batch = [torch.zeros(8) for _ in range(number)]",
)
