"""Compile-time suite: instructions and wall time torch.compile spends on fixed cases.

Long under callgrind, so `bench` without suite names skips it; run it with
`python -m harness bench compile_time --jobs 2 --output results.csv` and gate
the result with `python -m harness check results.csv --expected
benchmarks/compile_time/expected_results.csv`. CUDA variants appear only
on a machine with a GPU.
"""

import harness
from harness.suites.compile_time.cases import standard_cases

suite = harness.Suite(description="torch.compile compile time: dynamo, AOT autograd, inductor", default=False)

for case in standard_cases():
    suite.add(case)
