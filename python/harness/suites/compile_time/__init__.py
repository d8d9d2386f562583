"""Compile-time benchmarks: how much torch.compile spends compiling fixed cases.

Cases subclass ``CompileTimeBenchmark``; ``collect`` runs one; the suite in
``benchmarks/compile_time/`` expands the standard cases into Tasks of kind
``compile_time``, whose runner (``runner``) measures instructions and wall
time, whose table (``table``), ``--output X.csv`` files (``output``) and
report section (``report``) ``harness.kinds`` names.
May import: every layer of harness below ``suites``.
Imported by: suite files (``benchmarks/compile_time/suite.py``, users' own
cases); the kind registry by reference.
"""

from __future__ import annotations

from harness.suites.compile_time.benchmark import CompileTimeBenchmark
from harness.suites.compile_time.collect import Collection, collect, wall_seconds

__all__ = ["Collection", "CompileTimeBenchmark", "collect", "wall_seconds"]
