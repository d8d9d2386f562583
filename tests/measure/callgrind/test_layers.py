"""Layer rules and the classifier: the shipped file, users' files, bad files, exact sums.

Cheap: no valgrind run. The torch statements counted under callgrind are in
test_layers_torch.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.measure.callgrind.layers import (
    LAYER_NAMES,
    SHIPPED_RULES,
    UNATTRIBUTED,
    LayerRulesError,
    layer_counts,
    load_rules,
    split_label,
)
from harness.measure.callgrind.profile import parse_file
from harness.measure.callgrind.stats import CallgrindStats, FunctionCounts
from harness.model.measurement import TaskSpec

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "callgrind.out.fixture"
LIB = "/site-packages/torch/lib"


def test_shipped_rules_load_and_classify_release_wheel_symbols():
    rules = load_rules()
    assert rules.path == str(SHIPPED_RULES)
    # Release wheels have no debug info: "???:" names, classified by name and object file.
    cases = {
        f"???:torch::PythonArgParser::raw_parse(_object*, _object*, _object*, _object**) [{LIB}/libtorch_python.so]":
            "bindings",
        f"???:at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&) [{LIB}/libtorch_cpu.so]": "dispatcher",
        f"???:torch::autograd::VariableType::(anonymous namespace)::mul_Tensor() [{LIB}/libtorch_cpu.so]": "autograd",
        f"???:at::TensorIteratorBase::build(at::TensorIteratorConfig&) [{LIB}/libtorch_cpu.so]": "aten",
        f"???:c10::alloc_cpu(unsigned long) [{LIB}/libc10.so]": "allocator",
        "./malloc/./malloc/malloc.c:_int_free [/usr/lib/x86_64-linux-gnu/libc.so.6]": "allocator",
        "Python/ceval_gil.h:take_gil [/usr/lib/libpython3.11.so.1.0]": "gil",
        "Python/ceval.c:_PyEval_EvalFrameDefault [/usr/lib/libpython3.11.so.1.0]": "interpreter",
        "???:_PyEval_EvalFrameDefault [/usr/bin/python3.11]": "interpreter",
        f"???:at::getStepCallbacksUnlessEmpty(at::RecordScope) [{LIB}/libtorch_cpu.so]": "profiler",
        "./elf/../sysdeps/x86_64/tls_get_addr.S:__tls_get_addr [/lib/ld-linux-x86-64.so.2]": "tls",
        "???:0x00000000049367a8 [???]": "other",
    }
    for label, layer in cases.items():
        assert rules.classify(label)[0] == layer, label


def test_split_label_keeps_the_object_file():
    assert split_label("???:f(int) [/lib/libc10.so]") == ("???:f(int)", "/lib/libc10.so")
    assert split_label("Include/object.h:Py_INCREF") == ("Include/object.h:Py_INCREF", "")


def test_layers_of_a_real_profile_add_up_exactly():
    profile = parse_file(FIXTURE)
    layering = layer_counts(profile.exclusive, number=7, total=profile.total)
    assert list(layering.counts) == list(LAYER_NAMES)
    assert layering.total == profile.total
    assert sum(layering.per_run().values()) == pytest.approx(profile.total / 7)
    # The fixture is a pure-Python loop: the interpreter is most of it.
    assert layering.counts["interpreter"] > profile.total / 2
    # A total the functions do not reach is kept in "other", not lost.
    short = layer_counts(profile.exclusive, total=profile.total + 5)
    assert short.total == profile.total + 5
    assert (UNATTRIBUTED, 5, 0) in short.symbols["other"]


def test_callgrind_stats_layers_add_up_to_counts():
    profile = parse_file(FIXTURE)
    counts = FunctionCounts.from_mapping(profile.exclusive, inclusive=False)
    base = FunctionCounts.from_mapping({k: v // 3 for k, v in list(profile.exclusive.items())[:20]}, inclusive=False)
    inclusive = FunctionCounts.from_mapping(profile.inclusive, inclusive=True)
    stats = CallgrindStats(TaskSpec("pass", "pass"), 10, False, inclusive, base, inclusive, counts, None)
    for denoise in (True, False):
        layering = stats.layering(denoise=denoise)
        expected = stats.own_counts() if denoise else (counts - base).sum()
        assert layering.total == expected == stats.own_counts(denoise=denoise)
    assert sum(stats.layers().values()) == pytest.approx(stats.own_counts() / 10)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_a_users_rules_file_replaces_the_shipped_one(tmp_path):
    rules = load_rules(_write(tmp_path, '[[rule]]\nlayer = "kernel"\nsymbol = "mul"\n'))
    assert rules.classify("???:at::_ops::mul_Tensor::call() [/x/libtorch_cpu.so]") == ("kernel", 1)
    assert rules.classify("???:at::TensorIteratorBase::build() [/x/libtorch_cpu.so]") == ("other", 0)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[[rule]]\nlayer = "kernel"\nsymbol = "("\n', 3, "not a valid regular expression"),
        (
            '[[rule]]\nlayer = "gil"\nsymbol = "x"\n\n[[rule]]\nlayer = "kernels"\nobject = "x"\n',
            6,
            "unknown layer 'kernels'",
        ),
        ('[[rule]]\nlayer = "gil"\n', 1, "neither 'symbol' nor 'object'"),
        ('[[rule]]\nlayer = "gil"\nsymbl = "x"\n', 1, "unknown key(s) symbl"),
        ('[[rule]\nlayer = "gil"\n', 1, "not valid TOML"),
    ],
)
def test_an_invalid_rules_file_names_the_line(tmp_path, text, line, message):
    path = _write(tmp_path, text)
    with pytest.raises(LayerRulesError) as info:
        load_rules(path)
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2
    assert message in str(info.value)
    if "TOML" in message:
        assert "line 1" in str(info.value)
    else:
        assert f"{path}:{line}:" in str(info.value)


def test_a_missing_rules_file_is_a_usage_error(tmp_path):
    with pytest.raises(LayerRulesError, match="cannot read layer rules"):
        load_rules(tmp_path / "nope.toml")
