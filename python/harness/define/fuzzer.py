"""Fuzzed inputs: torch's Fuzzer and op fuzzers, with custom distributions accepted again.

``harness.Fuzzer``, ``FuzzedTensor``, ``FuzzedSparseTensor`` and
``ParameterAlias`` are torch's own (they generate inputs, not timings; what
they generate runs through ``harness.Timer``). ``FuzzedParameter`` is torch's
with the distribution check corrected: torch 2.13's ``_check_distribution``
raises "Distribution is not normalized" for every dict whose probabilities
do sum to one (its test is inverted), so no custom distribution can be built,
and every op fuzzer torch ships (they all use one) fails on construction.
Here a dict is accepted when its probabilities are non-negative and sum to
one within 1e-5, and refused with torch's messages otherwise; the sampling is
torch's, so a seed generates what it generates with torch.

The op fuzzers (``BinaryOpFuzzer``, ``UnaryOpFuzzer``, ``SpectralOpFuzzer``,
``BinaryOpSparseFuzzer``, ``UnaryOpSparseFuzzer``) are torch's classes built
with this ``FuzzedParameter``: their parameters are torch's, read from the
installed torch. Importing this module imports torch.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from torch.utils.benchmark.op_fuzzers import binary, sparse_binary, sparse_unary, spectral, unary
from torch.utils.benchmark.utils import fuzzer as torch_fuzzer
from torch.utils.benchmark.utils.fuzzer import FuzzedTensor, Fuzzer, ParameterAlias
from torch.utils.benchmark.utils.sparse_fuzzer import FuzzedSparseTensor

NORMALIZED_WITHIN = 1e-5

__all__ = [
    "BinaryOpFuzzer",
    "BinaryOpSparseFuzzer",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "ParameterAlias",
    "SpectralOpFuzzer",
    "UnaryOpFuzzer",
    "UnaryOpSparseFuzzer",
]


class FuzzedParameter(torch_fuzzer.FuzzedParameter):
    """torch's FuzzedParameter, whose custom distributions (dicts) can be built."""

    def _check_distribution(self, distribution: Any) -> Any:
        if not isinstance(distribution, dict):
            return super()._check_distribution(distribution)
        # torch's messages, for torch's conditions the right way round.
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > NORMALIZED_WITHIN:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution


_swap_lock = threading.Lock()


@contextlib.contextmanager
def _corrected(module: ModuleType) -> Iterator[None]:
    """While torch's op fuzzer in ``module`` builds its parameters, they are this FuzzedParameter."""
    with _swap_lock:
        original = module.FuzzedParameter
        module.FuzzedParameter = FuzzedParameter
        try:
            yield
        finally:
            module.FuzzedParameter = original


def _corrected_class(base: type, module: ModuleType) -> type:
    """torch's op fuzzer ``base`` (of ``module``), built with the corrected ``FuzzedParameter``."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        with _corrected(module):
            base.__init__(self, *args, **kwargs)

    return type(base.__name__, (base,), {"__init__": __init__, "__module__": __name__, "__doc__": base.__doc__})


BinaryOpFuzzer = _corrected_class(binary.BinaryOpFuzzer, binary)
UnaryOpFuzzer = _corrected_class(unary.UnaryOpFuzzer, unary)
SpectralOpFuzzer = _corrected_class(spectral.SpectralOpFuzzer, spectral)
BinaryOpSparseFuzzer = _corrected_class(sparse_binary.BinaryOpSparseFuzzer, sparse_binary)
UnaryOpSparseFuzzer = _corrected_class(sparse_unary.UnaryOpSparseFuzzer, sparse_unary)
