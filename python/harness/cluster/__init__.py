"""Ray, the distributed engine: a run's tasks as Ray tasks, each in harness's own worker process.

Lives here: ``executor`` (the driver side: starting or joining Ray, submitting
wall-time then instruction-count tasks, streaming results, per-node
progress, Ctrl-C), ``remote`` (what runs on a node: the environment check,
harness's worker process kept per Ray worker, the node and times a result
records), ``tracker`` (the actor that tells the driver which node runs what),
``kept_actors`` (detached actors, one per CPU, that serve the instruction-count
tasks of runs on a cluster that stays up, run after run), ``profiles`` (kept
profiles written on a node, sent back and written by the driver).
Named ``cluster``, not ``ray``, so it can never shadow the real ``ray``.
Ray is imported only inside the functions that need it: ``import harness``
and every run without ``--executor ray`` never load it.
May import: ``harness.workers``, ``harness.records``, ``harness.kinds``,
``harness.measure`` (the instruction counter), ``harness.model``, and of the
foundation ``harness.errors``, ``harness.options``.
Imported by: ``harness.run.executors`` (only when the executor is "ray").
"""
