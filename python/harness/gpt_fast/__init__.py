"""gpt-fast: micro-kernel efficiency and small-model decoding against per-device peaks.

Importing this package is cheap; the experiments (and torch) load with
``load_builtin_experiments()``, which the registry calls on first use.
"""

from __future__ import annotations

import importlib

BUILTIN_MODULES = ("harness.gpt_fast.kernels", "harness.gpt_fast.decode")


def load_builtin_experiments() -> None:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
