"""gpt-fast: micro-kernel efficiency and small-model decoding against per-device peaks.

Importing this package is cheap; the experiments (and torch) load with
``load_builtin_experiments()``, which the registry calls on first use. Tasks
are of kind ``gpt_fast``: ``runner``, ``table``, ``output`` and ``report``
are what ``harness.kinds`` names for it.
Lives here: ``experiment``, ``definition``, ``context``, ``peaks``,
``peak_check``, ``targets``, ``efficiency``, ``timing``, ``kernels``,
``models``, ``decode``, ``runner``, ``table``, ``output``, ``report``
(docs/architecture.md says what each is).
May import: every floor of harness below ``suites``; today ``harness.present``, ``harness.records``,
``harness.model``, ``harness.files``, ``harness.core``, ``harness.errors``,
``harness.options``.
Imported by: ``benchmarks/gpt_fast/suite.py``; the kind registry by reference.
"""

from __future__ import annotations

import importlib

BUILTIN_MODULES = ("harness.suites.gpt_fast.kernels", "harness.suites.gpt_fast.decode")


def load_builtin_experiments() -> None:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
