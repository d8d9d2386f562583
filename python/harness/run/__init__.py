"""Running tasks: the worker process, each kind's runner, and the executors that place them.

Lives here: ``worker`` (the worker process's main), ``dispatch``
(``run_task``: a kind's runner, failures turned into results),
``timer_task``, ``sampler_task``, ``grouped_task`` (the runners of the
built-in kinds), ``instructions`` (instruction-count runs of statements),
``prepare`` (every C++ statement of a run in one build, TorchScript models
scripted), ``executors`` (in this process, in worker pools, or on Ray
through ``harness.cluster``), ``shards`` (``--shard K/N``: balanced parts),
``repeats`` (tasks repeated in fresh workers: the noise command).
May import: ``harness.cluster`` (only for ``--executor ray``),
``harness.kinds``, ``harness.define``, ``harness.measure``,
``harness.workers``, ``harness.records``, ``harness.model``,
``harness.files``, ``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: ``harness.bench``, ``harness.cli`` (``noise``); the worker process runs ``run.worker``.
"""
