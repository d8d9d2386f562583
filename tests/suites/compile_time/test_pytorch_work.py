"""Every case carrying a PyTorch pr_time_benchmarks name does PyTorch's work.

A fingerprint of the work is read by running the case once with dynamo's
graphs recorded instead of compiled (tracing only: no inductor, no AOT, so
this stays cheap): the number of graphs, the ops in them and the shapes of
their tensor inputs; for torch.export cases the exported graph. REFERENCE
holds what PyTorch's case files (benchmarks/dynamo/pr_time_benchmarks/
benchmarks/*.py, read at the commits benchmarks/compile_time/README.md
names) imply, worked out by hand from their loops and sizes.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import pytest
import torch

from harness.suites.compile_time.benchmark import CompileTimeBenchmark
from harness.suites.compile_time.cases import standard_cases
from harness.suites.compile_time.collect import collect, wall_seconds

RECORDER = "harness_fingerprint"
_graphs: list[tuple[int, list[tuple[int, ...]]]] = []


def _recorder(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    # Tensor ops only: dynamic shapes add size arithmetic on SymInts, which is not the work's.
    ops = sum(
        1 for n in gm.graph.nodes
        if n.op in ("call_function", "call_method", "call_module")
        and isinstance(n.meta.get("example_value"), torch.Tensor)
    )
    shapes = [tuple(x.shape) for x in example_inputs if isinstance(x, torch.Tensor)]
    _graphs.append((ops, shapes))
    return gm.forward


torch._dynamo.register_backend(_recorder, name=RECORDER)

V1000 = (1000,)
# name -> fingerprint. "graphs": dynamo graphs compiled by one work(); "ops": ops over them;
# "inputs": tensor input shapes of the first graph (dynamo lifts parameters, so modules list theirs).
REFERENCE: dict[str, dict[str, Any]] = {
    # add_loop.py: clone, then i in range(1000): 334 x add, 333 x (mul, add), 333 x sin.
    "add_loop_eager": {"graphs": 1, "ops": 1 + 334 + 2 * 333 + 333, "inputs": [V1000, V1000]},
    "add_loop_eager_dynamic": {"graphs": 1, "ops": 1334, "inputs": [V1000, V1000]},
    "add_loop_inductor": {"graphs": 1, "ops": 1334, "inputs": [V1000, V1000]},
    # aotdispatcher.py: 100 inputs of 100 elements, one add each.
    **{
        f"aotdispatcher_{m}_{s}_cpu": {"graphs": 1, "ops": 100, "inputs": [(100,)] * 100}
        for m in ("inference", "training") for s in ("nosubclass", "subclass")
    },
    # aotdispatcher_partitioner.py: 100 weights x (matmul, sin, sin) on a 16x16 input.
    "aotdispatcher_partitioner_cpu": {"graphs": 1, "ops": 300, "inputs": [(16, 16)] * 101},
    # aotdispatcher_partitioner2.py: 16 x (x + i), 16 x (x + tmp), 12 x (sin, mul, 3 subs), sum: 0 + 16 adds.
    "aotdispatcher_partitioner_cpu2": {"graphs": 1, "ops": 16 + 16 + 12 * 5 + 16, "inputs": [(4, 4)]},
    # basic_modules_benchmarks.py: 20 steps of linear + linear + add; 20 weights (10, 10), 20 biases (10,).
    **{
        f"basic_modules_ListOfLinears_{b}": {
            "graphs": 1, "ops": 60, "inputs_sorted": sorted([(10,)] * 21 + [(10, 10)] * 20)}
        for b in ("eager", "inductor")
    },
    # nested_module.py: a node is relu, its children, add, relu, add, add 2 (5 ops); leaves have 4 ReLUs:
    # depth 0: 9, depth 1: 5 + 4 * 9 = 41, depth 2: 169, depth 3: 681.
    "basic_NestedModule_eager": {"graphs": 1, "ops": 681, "inputs": [(10,)]},
    # deep_nested_module.py: 41 linears on a (1, 10) input.
    "deep_nested_module_cpu": {"graphs": 1, "ops": 41},
    # dynamo_inline.py: 1000 x fn9 -> ... -> fn0 (x + 1): 1000 adds on ones(10).
    "basic_InlineMod_eager": {"graphs": 1, "ops": 1000, "inputs": [(10,)]},
    # mm_loop.py: mm, then 200 more, of 10x10.
    "mm_loop_inductor": {"graphs": 1, "ops": 201, "inputs": [(10, 10), (10, 10)]},
    "mm_loop_inductor_dynamic": {"graphs": 1, "ops": 201},
    # symint_sum.py: one graph over a randint(10, (200,)).
    "symint_sum": {"graphs": 1, "inputs": [(200,)]},
    "symint_sum_loop": {"graphs": 1, "inputs": [(200,)]},
    # update_hint_benchmark.py: 20 split sizes.
    "update_hint_regression": {"graphs": 1},  # inputs: (sum of the splits,) and (20,), added below
    # nn_module_guard_eval.py (compiled once in prepare_once): 20 layers x (add eps, mul, add bias).
    "nn_module_guard_eval": {"graphs": 1, "ops": 60},
    "nn_module_guard_eval_dynamic": {"graphs": 1, "ops": 60},
    # runtime_overhead.py: a + 1 on ones(2), compiled once (plus a backward graph where it runs backward).
    **{
        name: {"graphs": 1, "ops": 1, "inputs": [(2,)]}
        for name in (
            "runtime_overhead_inductor", "runtime_overhead_inductor_inference_mode",
            "runtime_overhead_inductor_requires_grad", "runtime_overhead_inductor_requires_grad_backward",
            "runtime_overhead_inductor_dynamic", "runtime_overhead_inductor_inference_mode_dynamic",
            "runtime_overhead_inductor_requires_grad_dynamic",
            "runtime_overhead_inductor_requires_grad_backward_dynamic",
        )
    },
    # float_args.py: x + y on arange(3), 8 floats: a graph with the first float baked in, then one
    # recompile with y symbolic (automatic dynamic) that serves the other 7.
    "float_args": {"graphs": 2, "ops_per_graph": 1, "inputs": [(3,)]},
    # disable_overhead.py, autograd_function.py: no graph; their inputs are checked below.
    "disable_overhead": {"graphs": 0},
    "autograd_function_apply_13_in_2_out_no_save": {"graphs": 0},
}
# torch.export cases: counts of ops in the exported graph.
EXPORT_REFERENCE: dict[str, dict[str, int]] = {
    # sum_floordiv.py: 100 scalar inputs, one item() each.
    "sum_floordiv_regression": {
        "placeholders": 100, "aten.item.default": 100, "<built-in function add>": 99,
        "<built-in function floordiv>": 1,
    },
}
# unbind_split_flip_cat.py: per iteration one cat of `batch` flips; 2 inputs per iteration. Exporting
# PyTorch's 40 x 128 takes minutes, so its sizes are read from the case and the graph's shape from
# harness's reduced 4 x 16 (same code, named by PyTorch's rule).
UNBIND = {"loop_iterations": 40, "batch": 128, "inputs": 40 * [(128,)]}
UNBIND_REDUCED = {"placeholders": 2 * 4, "aten.flip.default": 4 * 16, "aten.cat.default": 4}


@pytest.fixture(autouse=True)
def _restore_torch_state():
    """Cases set process-wide state as PyTorch's do (matmul precision); other tests must not see it."""
    precision = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(precision)
    torch._dynamo.reset()


def _pytorch_named() -> list[CompileTimeBenchmark]:
    """Cases with PyTorch's names; CUDA ones are fingerprinted through their CPU twins (same work, `_cpu`)."""
    return [
        c for c in standard_cases() if c.device == "cpu" and _reference_name(c) in {**REFERENCE, **EXPORT_REFERENCE}
    ]


def _reference_name(case: CompileTimeBenchmark) -> str:
    name = case.name()
    twins = ("runtime_overhead_", "autograd_function_apply_", "dtensor_dispatch_")
    return name.removesuffix("_cpu") if name.startswith(twins) else name


def test_every_pytorch_named_case_has_a_reference_fingerprint() -> None:
    from harness.suites.compile_time.pytorch_cases import pytorch_cases

    names = {_reference_name(c) for c in pytorch_cases() if c.device == "cpu"}
    assert names == (set(REFERENCE) | set(EXPORT_REFERENCE) | set(DTENSOR) | {"unbind_split_flip_cat_iter40_batch128"}
                     | set(DIT) | set(IMPORT_TIME))
# import_time.py: the work is the child's command line, five children, as PyTorch's.
IMPORT_TIME = {"import_time_torch__dynamo": "torch._dynamo", "import_time_torch__inductor": "torch._inductor",
               "import_time_triton": "triton"}


def test_import_time_cases_do_pytorchs_work() -> None:
    import sys

    from harness.suites.compile_time.import_time import ImportTime, importtime_command
    from harness.suites.compile_time.pytorch_cases import pytorch_cases

    cases = [c for c in pytorch_cases() if isinstance(c, ImportTime)]
    assert {c.name(): c.module for c in cases} == IMPORT_TIME
    for c in cases:
        assert importtime_command(c.module) == [sys.executable, "-X", "importtime", "-c", f"import {c.module}"]
        assert c.iterations == 5 and c.region == "import"


# diffusion_dit.py: 4 blocks of dim 64. A block: 8 linears (qkv, self_out, cross_q, cross_kv, cross_out, 2 in
# the MLP, adaLN), 2 attentions, 3 layer_norms, 16 parameters; around them t_mlp (2 linears), norm_out (a
# layer_norm) and proj_out (a linear): 72 parameters, 3 data inputs. "full" traces it all as one graph;
# "regional" compiles each block, and the 4 share one trace; "hierarchical" is one graph calling one
# nested region 4 times; its dynamic twin also lifts norm_out's eps (PyTorch's file says why) and runs
# a second image size without a recompile.
_BLOCK = {"linear": 8, "scaled_dot_product_attention": 2, "layer_norm": 3}
_DIT_DATA = [(1, 16, 64), (1, 8, 64), (1, 64)]
DIT: dict[str, dict[str, Any]] = {
    "diffusion_dit_full_inductor": {
        "graphs": 1, "inputs": 72 + 3,
        "ops": {"linear": 4 * 8 + 3, "scaled_dot_product_attention": 8, "layer_norm": 13},
        "regions": 0, "region": None, "tokens": [16]},
    "diffusion_dit_regional_inductor": {
        "graphs": 1, "inputs": 16 + 3, "ops": _BLOCK, "regions": 0, "region": None, "tokens": [16]},
    "diffusion_dit_hierarchical_inductor": {
        "graphs": 1, "inputs": 72 + 3, "ops": {"linear": 3, "scaled_dot_product_attention": 0, "layer_norm": 1},
        "regions": 4, "region": _BLOCK, "tokens": [16]},
    "diffusion_dit_hierarchical_dynamic": {
        "graphs": 1, "inputs": 72 + 3 + 1, "ops": {"linear": 3, "scaled_dot_product_attention": 0, "layer_norm": 1},
        "regions": 4, "region": _BLOCK, "tokens": [16, 24]},
}


def _op_counts(gm: torch.fx.GraphModule, names: Any) -> dict[str, int]:
    found = collections.Counter(str(getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes
                                if n.op.startswith("call"))
    return {name: found[name] for name in names}


def test_diffusion_dit_cases_do_pytorchs_work() -> None:
    from harness.suites.compile_time import pytorch_modules as m

    assert (m.DIT_DIM, m.DIT_HEADS, m.DIT_MLP_RATIO, m.DIT_BLOCKS) == (64, 4, 4, 4)
    seen: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def keep(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        seen.append((gm, example_inputs))
        return gm.forward

    cases = [c for c in standard_cases() if c.name().startswith("diffusion_dit_")]
    assert {c.name() for c in cases} == set(DIT)
    for case in cases:
        ref = DIT[case.name()]
        traced = dataclasses.replace(case, backend=keep)
        seen.clear()
        traced.prepare_once()
        traced.prepare()
        traced.work()
        gm, inputs = seen[0]
        tensors = [tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]
        regions = [getattr(gm, t) for t in sorted({n.target for n in gm.graph.nodes if n.op == "get_attr"})]
        found = {
            "graphs": len(seen), "inputs": len(tensors), "ops": _op_counts(gm, ref["ops"]),
            "regions": _op_counts(gm, ["invoke_subgraph"])["invoke_subgraph"],
            "region": _op_counts(regions[0], _BLOCK) if len(regions) == 1 else None,
            "tokens": [image.shape[1] for image, _, _ in traced._inputs],  # type: ignore[attr-defined]
        }
        assert found == ref, case.name()
        data = _DIT_DATA[:1] if case.name() == "diffusion_dit_regional_inductor" else _DIT_DATA
        assert all(shape in tensors for shape in data), (case.name(), tensors)


R, S0, S1, P = "Replicate()", "Shard(dim=0)", "Shard(dim=1)", "Partial(sum)"
# dtensor.py: a mesh of 256 fake ranks; a and b are replicated 10x10 ones, except for add_backward
# (a 2x512 local shard on dim 0, b 512x2 on dim 1, both requiring grad); collectives adds a partial c.
DTENSOR: dict[str, dict[str, Any]] = {
    f"dtensor_dispatch_{op}": {"mesh": 256, "a": ((10, 10), R), "b": ((10, 10), R)}
    for op in ("detach", "to_from_local", "inplace", "view", "random", "custom_handler")
}
DTENSOR["dtensor_dispatch_collectives"] = {"mesh": 256, "a": ((10, 10), R), "b": ((10, 10), R), "c": ((10, 10), P)}
DTENSOR["dtensor_dispatch_add_backward"] = {"mesh": 256, "a": ((2 * 256, 512), S0), "b": ((512, 2 * 256), S1)}


def test_dtensor_cases_do_pytorchs_work() -> None:
    import torch.distributed as dist

    cases = [c for c in standard_cases() if c.device == "cpu" and c.name().startswith("dtensor_")]
    assert {_reference_name(c) for c in cases} == set(DTENSOR)
    try:
        for case in cases:
            case.prepare_once()
            found: dict[str, Any] = {"mesh": case._mesh.size()}  # type: ignore[attr-defined]
            for key in ("a", "b", "c"):
                t = getattr(case, f"_{key}", None)
                if t is not None:
                    found[key] = (tuple(t.shape), repr(t.placements[0]))
            assert found == DTENSOR[_reference_name(case)], case.name()
            case.work()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _export_counts(case: CompileTimeBenchmark) -> collections.Counter[str]:
    _run_once(case)
    nodes = list(case.exported.graph.nodes)  # type: ignore[attr-defined]
    counts = collections.Counter(str(n.target) for n in nodes if n.op == "call_function")
    counts["placeholders"] = sum(1 for n in nodes if n.op == "placeholder")
    return counts


def test_unbind_split_flip_cat_does_pytorchs_work() -> None:
    from harness.suites.compile_time.pytorch_cases import UnbindSplitFlipCat

    full = next(c for c in standard_cases() if c.name() == "unbind_split_flip_cat_iter40_batch128")
    full.prepare_once()
    module = full._module  # type: ignore[attr-defined]
    found = {
        "loop_iterations": module.num_iterations, "batch": module.batch_size,
        "inputs": [tuple(t.shape) for t in full._sizes],  # type: ignore[attr-defined]
    }
    assert found == UNBIND
    assert all(t.dtype == torch.int64 for t in full._data)  # type: ignore[attr-defined]
    counts = _export_counts(UnbindSplitFlipCat(loop_iterations=4, batch=16))
    assert {k: counts[k] for k in UNBIND_REDUCED} == UNBIND_REDUCED


def _run_once(case: CompileTimeBenchmark) -> None:
    collect(case, wall_seconds, 2)


@pytest.mark.parametrize("case", _pytorch_named(), ids=lambda c: c.name())
def test_case_does_pytorchs_work(case: CompileTimeBenchmark) -> None:
    name = _reference_name(case)
    if name in EXPORT_REFERENCE:
        counts = _export_counts(case)
        assert {k: counts[k] for k in EXPORT_REFERENCE[name]} == EXPORT_REFERENCE[name]
        return
    if case.backend != "export":
        case = dataclasses.replace(case, backend=RECORDER)
    _graphs.clear()
    case.iterations = 2
    case.prepare_once()
    case.prepare()
    before = len(_graphs)
    case.work()
    # Compiled in prepare_once (runtime cases) or in work (compile cases).
    graphs = _graphs[before:] or _graphs[:before]
    if case.region == "work" and name != "float_args":
        graphs = _graphs[:before]
    ref = REFERENCE[name]
    found: dict[str, Any] = {"graphs": len(graphs)}
    if graphs:
        found["ops"] = graphs[0][0] if len(graphs) == 1 else sum(g[0] for g in graphs)
        found["inputs"] = graphs[0][1]
        found["ops_per_graph"] = max(g[0] for g in graphs)
        found["inputs_sorted"] = sorted(graphs[0][1])
    if name == "update_hint_regression":
        total = int(case._splits.sum())  # type: ignore[attr-defined]
        ref = {**ref, "inputs_sorted": sorted([(20,), (total,)])}
    assert {k: found.get(k) for k in ref} == ref


def test_runtime_cases_without_a_graph_use_pytorchs_inputs() -> None:
    """disable_overhead: ones(1) through a disabled trivial function; autograd_function: 13 empty inputs, 2 outputs."""
    from harness.suites.compile_time.pytorch_runtime_cases import AutogradFunctionApply, DisableOverhead

    disable = DisableOverhead()
    disable.prepare_once()
    assert disable._a.shape == (1,) and disable._fn(disable._a) is disable._a
    apply = AutogradFunctionApply(device="cpu")
    apply.prepare_once()
    assert [tuple(a.shape) for a in apply._args] == [(0,)] * 13
    assert all(a.requires_grad for a in apply._args)
    assert len(apply._apply(*apply._args)) == 2
