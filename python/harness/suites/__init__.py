"""The suites that ship with harness, on top of everything else.

Lives here: ``compile_time/`` (torch.compile's compile time on fixed cases)
and ``gpt_fast/`` (micro-kernels and models against the device's peaks).
Each registers its kind in ``harness.kinds`` by reference, so nothing below
imports it.
May import: any floor below; today ``harness.present``, ``harness.records``,
``harness.define``, ``harness.measure``, ``harness.model``, ``harness.files``,
``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: the suite files in ``benchmarks/`` and, through references, the
kind registry.
"""
