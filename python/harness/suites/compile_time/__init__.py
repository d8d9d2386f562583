"""Compile-time benchmarks: how much torch.compile spends compiling fixed cases.

Cases subclass ``CompileTimeBenchmark``; ``collect`` runs one; the suite in
``benchmarks/compile_time/`` expands the standard cases into Tasks of kind
``compile_time``, whose runner (``runner``) measures instructions and wall
time, whose table (``table``), ``--output X.csv`` files (``output``) and
report section (``report``) ``harness.kinds`` names.
Lives here: ``benchmark``, ``cases``, ``pytorch_cases``,
``pytorch_runtime_cases``, ``pytorch_modules``, ``modules``, ``import_time``,
``region``, ``collect``, ``phases``, ``runner``, ``table``, ``output``,
``report`` (docs/architecture.md says what each is).
May import: every floor of harness below ``suites``; today ``harness.present``, ``harness.records``,
``harness.define``, ``harness.measure``, ``harness.model``, ``harness.core``,
``harness.errors``.
Imported by: suite files (``benchmarks/compile_time/suite.py``, users' own
cases); the kind registry by reference.
"""

from __future__ import annotations

from harness.suites.compile_time.benchmark import CompileTimeBenchmark
from harness.suites.compile_time.collect import Collection, collect, wall_seconds

__all__ = ["Collection", "CompileTimeBenchmark", "collect", "wall_seconds"]
