"""Worker processes: starting them, talking to them, pooling and keeping them.

Lives here: ``protocol`` (the JSON-lines requests and answers, what a dead
worker looks like), ``process`` (WorkerProcess: one worker and its pipes),
``pool`` (WorkerPool: tasks over N workers with timeouts and crash
isolation), ``kept`` and ``kept_server`` (a worker that outlives its run,
client and server side), ``private_dir`` (the per-user directory counting
workers live in, checked on every step), ``registry`` (the kept workers on
this machine: listed, stopped, stale ones replaced), ``worker`` (the Worker
protocol the pool and the kept workers' callers hold), ``zygote`` (a
callgrind worker's pristine fork), ``parent_death`` (workers that end with
the process they serve).
A worker runs ``python -m harness.run.worker``, named here as a string: this
layer moves tasks and results and never imports what executes them.
May import: ``harness.model``, ``harness.files``, ``harness.core``,
``harness.errors``, ``harness.options``, ``harness._version``.
Imported by: ``harness.measure`` (collect_callgrind's worker, kept counting
workers), ``harness.run`` (the executors), ``harness.cluster``,
``harness.present`` and ``harness.cli`` (``workers``).
"""
