"""Defining benchmarks: suites, their discovery, and the definitions that expand into tasks.

Lives here: ``suite`` (Suite, TimerDefinition), ``discovery`` (finding
suite files the way pytest finds tests), ``loading`` (importing suite files
and references to objects that another process must find), ``selection``
(``-k``, ``--only``, ``--mode``), ``grouped`` and ``grouped_variants``
(one op in Python and C++, eager and TorchScript), ``torchscript``
(signatures, scripting and saving models), ``fuzzer`` (torch's Fuzzer and
op fuzzers).
May import: ``harness.model``, ``harness.files``, ``harness.errors``,
``harness.options``.
Imported by: ``harness.kinds``, ``harness.run``, ``harness.bench``, the
CLI, the public API, the suites.
"""
