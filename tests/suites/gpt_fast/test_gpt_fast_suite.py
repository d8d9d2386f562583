"""The gpt-fast registry, suite definition and CLI (`bench gpt_fast --only ... --output x.csv`), run as users
run them."""

from __future__ import annotations

import csv
import json

import pytest

from harness.errors import UsageError
from harness.suites.gpt_fast.definition import GptFastExperiments
from harness.suites.gpt_fast.experiment import get_experiment, register_experiment, registered, unregister

BUILTIN = ["mlp_layer_norm_gelu", "layer_norm", "gather_gemv", "gemv", "llama", "mixtral_moe"]


def test_builtin_experiments_registered():
    assert list(registered())[:6] == BUILTIN


def test_register_and_duplicate_names():
    def mine(ctx):
        return []

    try:
        register_experiment()(mine)
        assert get_experiment("mine") is mine
        register_experiment("mine")(mine)  # the same function again is harmless

        def other(ctx):
            return []

        with pytest.raises(UsageError, match="registered twice"):
            register_experiment("mine")(other)
    finally:
        unregister("mine")


def test_unknown_experiment_lists_available():
    with pytest.raises(UsageError) as err:
        get_experiment("gemm")
    assert "unknown gpt-fast experiment 'gemm'" in str(err.value)
    assert all(name in str(err.value) for name in BUILTIN)


def test_definition_expands_to_gpt_fast_tasks():
    tasks = GptFastExperiments(size="tiny").expand("gpt_fast")
    assert [t.name for t in tasks] == BUILTIN
    assert {t.kind for t in tasks} == {"gpt_fast"}
    assert tasks[0].params["experiment"] == "mlp_layer_norm_gelu" and tasks[0].params["size"] == "tiny"
    assert [t.name for t in GptFastExperiments(names=["gemv"]).expand("s")] == ["gemv"]
    with pytest.raises(UsageError, match="available: mlp_layer_norm_gelu"):
        GptFastExperiments(names=["nope"]).expand("s")
    with pytest.raises(UsageError, match="size 'huge'"):
        GptFastExperiments(size="huge").expand("s")


def test_cli_lists_the_suite(cli):
    r = cli("list", "gpt_fast")
    assert r.returncode == 0, r.stderr
    assert all(f"  {name}" in r.stdout for name in BUILTIN)


def test_cli_unknown_only_is_a_usage_error(cli):
    r = cli("bench", "gpt_fast", "--only", "nope")
    assert r.returncode == 2
    assert "--only 'nope': no such benchmark; available: " + ", ".join(BUILTIN) in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_unknown_output_format_is_refused_before_running(cli, tmp_path):
    r = cli("bench", "gpt_fast", "--only", "gemv", "-o", str(tmp_path / "x.txt"))
    assert r.returncode == 2 and "unknown record format '.txt'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.txt").exists()


def test_cli_bad_size_env(cli):
    r = cli("list", "gpt_fast", env={"HARNESS_GPT_FAST_SIZE": "huge"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "HARNESS_GPT_FAST_SIZE='huge': use one of auto, tiny, cpu, gpu" in r.stderr


def test_cli_only_with_csv_output_appends(cli, tmp_path):
    """One tiny experiment through the CLI: the CSV keeps an earlier row, JSON lines and run record beside it."""
    out = tmp_path / "results" / "gpt.csv"
    out.parent.mkdir()
    earlier = "gemv,memory_bandwidth(GB/s),990.0,1.5,int8,cpu,Old CPU,False"
    out.write_text("name,metric,target,actual,dtype,device,arch,is_model\n" + earlier + "\n")
    # One compile thread: a fresh process would otherwise start inductor's
    # compile-worker pool, which costs more than this one tiny kernel.
    env = {"HARNESS_GPT_FAST_SIZE": "tiny", "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
           "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    r = cli("bench", "gpt_fast", "--only", "layer_norm", "--min-run-time", "0.01", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    assert "layer_norm" in r.stdout and "skipped (CUDA graphs need a CUDA device" in r.stdout
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["name", "metric", "target", "actual", "dtype", "device", "arch", "is_model"]
    assert ",".join(rows[1]) == earlier
    assert len(rows) == 3 and rows[2][:2] == ["layer_norm", "memory_bandwidth(GB/s)"] and rows[2][4] == "bfloat16"
    assert float(rows[2][3]) > 0 and float(rows[2][2]) > 0
    (line,) = (tmp_path / "results" / "gpt.jsonl").read_text().splitlines()
    assert json.loads(line)["metric"]["benchmark_values"][0] == pytest.approx(float(rows[2][3]), rel=1e-5)
    record = json.loads((tmp_path / "results" / "gpt.run.json").read_text())
    (result,) = record["results"]
    assert result["task"]["kind"] == "gpt_fast" and result["status"] == "ok"
    (row,) = result["extra"]["rows"]
    assert [s["D"] for s in row["shapes"]] == [64]
    assert result["extra"]["context"]["peaks"]["source"] == "measured"
    assert result["extra"]["skipped"][0]["name"] == "layer_norm[cuda_graph]"
