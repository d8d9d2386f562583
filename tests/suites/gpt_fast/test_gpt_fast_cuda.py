"""CUDA paths of the gpt-fast suite: events, L2 flush, CUDA graphs, datasheet peaks. Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch

from harness.suites.gpt_fast.context import make_context
from harness.suites.gpt_fast.peaks import datasheet_peaks, device_name, peaks_for
from harness.suites.gpt_fast.timing import L2Flusher, flush_bytes, time_callable

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none visible to torch)")


def test_flush_buffer_is_twice_this_devices_l2():
    props = torch.cuda.get_device_properties(0)
    flusher = L2Flusher("cuda")
    assert flusher.nbytes == flush_bytes(props) == 2 * props.L2_cache_size
    flusher()
    torch.cuda.synchronize()


@pytest.mark.parametrize("graph", [False, True])
def test_cuda_event_timing(graph):
    w = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
    t = time_callable(lambda: w @ x, device="cuda", min_run_time=0.02, cuda_graph=graph)
    assert len(t.samples_s) >= 10 and all(s > 0 for s in t.samples_s)
    assert "cuda events" in t.method and "L2 flush" in t.method
    assert ("CUDA graph" in t.method) == graph


def test_known_gpus_use_the_datasheet():
    name = device_name("cuda")
    known = datasheet_peaks(name)
    p = peaks_for("cuda")
    if known is None:
        assert p.source in ("measured", "cached")
    else:
        assert p == known and p.source == "datasheet"


def test_tiny_context_on_cuda():
    ctx = make_context(size="tiny", min_run_time=0.01)
    assert ctx.is_cuda and ctx.arch == torch.cuda.get_device_name()
