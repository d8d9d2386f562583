"""The same misuse fails the same way as with torch.utils.benchmark: harness's exception
is an instance of the type torch raises (harness may say more, and keep its own
subclass). The differences the README lists on purpose are asserted as such."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
import torch.utils.benchmark as tb
from torch.utils.benchmark.utils.valgrind_wrapper import timer_interface as torch_stats

import harness
from harness.measure.callgrind import stats as harness_stats

SAME_AS_TORCH = {
    "stmt not a string": lambda m: m.Timer(stmt=1),
    "unknown language": lambda m: m.Timer(language="rust"),
    "stmt syntax error": lambda m: m.Timer("x = = 1"),
    "setup syntax error": lambda m: m.Timer("pass", setup="def f(:"),
    "stmt raises": lambda m: m.Timer("1 / 0").timeit(10),
    "stmt raises in blocked_autorange": lambda m: m.Timer("1 / 0").blocked_autorange(min_run_time=0.01),
    "undefined name": lambda m: m.Timer("y + 1").timeit(5),
    "setup raises": lambda m: m.Timer("pass", setup="raise KeyError('k')").timeit(5),
    "repeat": lambda m: m.Timer().repeat(),
    "autorange": lambda m: m.Timer().autorange(),
    "C++ with globals": lambda m: m.Timer("x;", language="c++", globals={"x": 1}),
    "Compare of a non-Measurement": lambda m: m.Compare([1]),
    "collect_callgrind repeats=0": lambda m: m.Timer("pass").collect_callgrind(repeats=0),
    "collect_callgrind unwrapped tensor": lambda m: m.Timer("x", globals={"x": torch.ones(1)}).collect_callgrind(),
    "collect_callgrind replaced torch": lambda m: m.Timer("pass", globals={"torch": 1}).collect_callgrind(),
    "collect_callgrind unwrapped int": lambda m: m.Timer("pass", globals={"x": 1}).collect_callgrind(
        collect_baseline=False
    ),
    "C++ Timer of a swapped _timer_cls": lambda m: type("Swapped", (m.Timer,), {"_timer_cls": object})(
        "x;", language="c++"
    ),
    "merge inclusive and exclusive": lambda m: (
        (torch_stats if m is tb else harness_stats).FunctionCounts((), True)
        - (torch_stats if m is tb else harness_stats).FunctionCounts((), False)
    ),
}


def _raised(fn, module) -> BaseException:
    with pytest.raises(BaseException) as info:
        fn(module)
    return info.value


@pytest.mark.parametrize("case", SAME_AS_TORCH)
def test_misuse_raises_what_torch_raises(case):
    theirs = _raised(SAME_AS_TORCH[case], tb)
    ours = _raised(SAME_AS_TORCH[case], harness)
    assert isinstance(ours, type(theirs)), f"torch raises {type(theirs).__name__}, harness {type(ours).__mro__}"


def test_unwrapped_globals_are_refused_with_torchs_sentence_unless_asked():
    """torch's tests match its sentence; plain_globals=True (harness only) is the way past it."""
    with pytest.raises(ValueError, match=r"`collect_callgrind` requires that globals be wrapped in `CopyIfCallgrind` "
                       r"so that serialization is explicit\..*plain_globals=True"):
        harness.Timer("pass", globals={"x": 1}).collect_callgrind(collect_baseline=False)
    with pytest.raises(ValueError, match="does not support mocking out `torch`"):
        harness.Timer("pass", globals={"torch": 1}).collect_callgrind(plain_globals=True)


def test_a_syntax_error_chains_the_original_exception():
    """docs/python-api.md: "with the original exception chained"."""
    with pytest.raises(SyntaxError) as info:
        harness.Timer("x = = 1")
    assert isinstance(info.value, harness.StatementError)
    assert isinstance(info.value.__cause__, SyntaxError) and info.value.__cause__.lineno == 1


def test_statement_errors_are_the_statements_own_type_and_name_the_line():
    with pytest.raises(ZeroDivisionError) as info:
        harness.Timer("a = 1\nb = a / 0").timeit(5)
    assert isinstance(info.value, harness.StatementError)
    assert str(info.value) == "stmt line 2 ('b = a / 0') raised ZeroDivisionError: division by zero"
    with pytest.raises(KeyError) as info:
        harness.Timer("pass", setup="raise KeyError('k')").timeit(5)
    assert str(info.value).startswith("setup line 1")  # our message, not KeyError's quoted repr


@pytest.mark.parametrize(
    "stricter",
    [
        lambda m: m.Timer("pass").timeit(0),
        lambda m: m.Timer("pass").blocked_autorange(min_run_time=0),
        lambda m: m.Timer("pass", setup=1),
    ],
)
def test_listed_stricter_checks(stricter):
    """Documented in the README: torch measures nonsense (or fails with TypeError deep inside)."""
    with pytest.raises(harness.UsageError):
        stricter(harness)


def test_custom_clock_is_honoured_as_torch_honours_it():
    def fake_clock():
        fake_clock.reads += 1
        return fake_clock.reads * 1.0  # each read advances one second

    results = []
    for module in (tb, harness):
        fake_clock.reads = 0
        t = module.Timer("pass", timer=fake_clock)
        one = t.timeit(10)
        adaptive = t.adaptive_autorange(min_run_time=5)
        results.append((one.raw_times, one.number_per_run, adaptive.median, adaptive.number_per_run))
    assert results[0] == results[1]


def test_copy_if_callgrind_setup_rebuilds_a_class_of_the_calling_script(tmp_path):
    """A module whose class is defined in the script itself, copied to the measuring process
    by CopyIfCallgrind(setup=<the class>), as torch documents. Under valgrind: about 30 s."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent('''
        import torch
        from torch.utils.benchmark import CopyIfCallgrind
        import harness

        CLASS = """
        class Doubler(torch.nn.Module):
            def forward(self, x):
                return x * 2
        """
        exec(CLASS)

        try:
            harness.Timer("m(torch.ones(4))", globals={"m": CopyIfCallgrind(Doubler())}).collect_callgrind(number=1)
        except OSError as e:  # torch's type when the measuring process cannot load a global
            print("refused", type(e).__name__, "Can't get attribute 'Doubler'" in str(e), "setup=" in str(e))
            print(e)

        g = {"m": CopyIfCallgrind(Doubler(), setup=CLASS), "n": CopyIfCallgrind(4)}
        stats = harness.Timer("m(torch.ones(n))", globals=g).collect_callgrind(number=10)
        print("counted", stats.counts() > 0)

        # harness only: builtins unwrapped, when asked (same worker: no second start-up)
        plain = harness.Timer("m(torch.ones(n))", globals={"m": g["m"], "n": 4})
        try:
            plain.collect_callgrind(number=10)
        except ValueError as e:
            print("unwrapped refused", "CopyIfCallgrind" in str(e))
        print("plain counted", plain.collect_callgrind(number=10, plain_globals=True).counts() == stats.counts())
    '''))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "counted True" in proc.stdout
    assert "unwrapped refused True" in proc.stdout and "plain counted True" in proc.stdout, proc.stdout
    assert "refused CallgrindFailed True True" in proc.stdout, proc.stdout
