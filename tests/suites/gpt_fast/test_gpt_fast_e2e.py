"""Every gpt-fast experiment end to end at tiny shapes: the real runner, real torch.compile, real timing.

Costs about a minute and a half on a 2-core machine (11 compiled graphs).
"""

from __future__ import annotations

import math
import statistics

import pytest
import torch

from harness.model.task import Task
from harness.run.dispatch import run_task
from harness.suites.gpt_fast.kernels import DIMS
from harness.suites.gpt_fast.runner import experiments_of, skipped_of

ON_CUDA = torch.cuda.is_available()
MODEL_METRICS = {"token_per_sec", "memory_bandwidth(GB/s)", "compilation_time(s)"}
EXPECTED = {
    "mlp_layer_norm_gelu": {("mlp_layer_norm_gelu", "bfloat16"), ("mlp_layer_norm_gelu[tokens=4]", "bfloat16")},
    "layer_norm": {("layer_norm", "bfloat16")},
    "gather_gemv": {("gather_gemv", "int8"), ("gather_gemv", "bfloat16")},
    "gemv": {("gemv", "int8"), ("gemv", "bfloat16")},
}


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def run(name: str):
    task = Task("gpt_fast", name, "gpt_fast", {"experiment": name, "size": "tiny", "cuda_graph": True})
    result = run_task(task, min_run_time=0.01)
    assert result.ok, result.error
    return result


@pytest.mark.parametrize("name", list(EXPECTED))
def test_micro_kernel(name):
    result = run(name)
    rows = experiments_of(result)
    plain = {(r.name, r.dtype) for r in rows if "[cuda_graph]" not in r.name}
    assert plain == EXPECTED[name]
    for r in rows:
        assert r.device == ("cuda" if ON_CUDA else "cpu") and not r.is_model
        assert [s["D"] for s in r.shapes] == list(DIMS["tiny"])
        values = [s["value"] for s in r.shapes]
        assert all(v > 0 and math.isfinite(v) for v in values)
        assert r.actual == pytest.approx(sum(values) / len(values))
        assert r.target is not None and r.target > 0
        for s in r.shapes:
            assert s["seconds"] > 0 and s["samples"] >= 3
            if r.metric == "memory_bandwidth(GB/s)":
                assert s["value"] == pytest.approx(s["bytes"] / s["seconds"] / 1e9)
            else:
                assert s["value"] == pytest.approx(
                    s["flops"] / s["seconds"] / result.extra["context"]["peaks"]["flops_per_s"]
                )
                assert s["flops"] == 2 * (2 * s["tokens"] * s["D"] * s["hidden"])
    skipped = skipped_of(result)
    if ON_CUDA:
        assert not skipped and {r.name for r in rows} >= {f"{n}[cuda_graph]" for n, _ in EXPECTED[name]}
    else:
        assert {(s.name, s.dtype) for s in skipped} == {(f"{n}[cuda_graph]", d) for n, d in EXPECTED[name]}
        assert all("CUDA graphs need a CUDA device" in s.reason for s in skipped)
        assert result.extra["context"]["peaks"]["source"] in ("measured", "cached")


@pytest.mark.parametrize("name", ["llama", "mixtral_moe"])
def test_model(name):
    result = run(name)
    rows = experiments_of(result)
    assert {(r.metric, r.dtype) for r in rows} == {(m, d) for m in MODEL_METRICS for d in ("bfloat16", "int8")}
    assert all(r.is_model and r.name == name and r.actual > 0 for r in rows)
    for dtype in ("bfloat16", "int8"):
        by_metric = {r.metric: r for r in rows if r.dtype == dtype}
        tps, gbps = by_metric["token_per_sec"], by_metric["memory_bandwidth(GB/s)"]
        (shape,) = tps.shapes
        assert shape["config"]["name"].endswith("tiny") and shape["new_tokens"] == 8
        assert gbps.actual == pytest.approx(shape["bytes_per_token"] * tps.actual / 1e9)
        assert len(shape["repeats"]) == 2 and tps.actual == pytest.approx(statistics.median(shape["repeats"]))
        if not ON_CUDA:
            assert by_metric["compilation_time(s)"].target is None
    bf16_bytes = next(r for r in rows if r.dtype == "bfloat16").shapes[0]["bytes_per_token"]
    int8_bytes = next(r for r in rows if r.dtype == "int8").shapes[0]["bytes_per_token"]
    assert int8_bytes < bf16_bytes
