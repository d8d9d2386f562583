"""torch's intra-op thread count, set for the length of a measurement."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(num_threads: int) -> Iterator[None]:
    """Run with torch's intra-op thread count set, restoring the previous one after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# torch.utils.benchmark's name for the same context manager.
set_torch_threads = torch_threads
