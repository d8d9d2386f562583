"""Compile-time benchmarks: how much torch.compile spends compiling fixed cases.

Cases subclass ``CompileTimeBenchmark``; ``collect`` runs one; the suite in
``benchmarks/compile_time/`` expands the standard cases into Tasks whose
runner (``harness.compile_time.runner``) measures instructions and wall time.
"""

from __future__ import annotations

from .benchmark import CompileTimeBenchmark
from .collect import Collection, collect, wall_seconds

__all__ = ["Collection", "CompileTimeBenchmark", "collect", "wall_seconds"]
