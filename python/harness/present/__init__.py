"""Presenting results: terminal tables, comparisons, the gate, the HTML report. Nothing here measures.

Lives here: ``table`` (result tables, by kind), ``grouped_table`` and
``grouped_report`` (the dispatch-overhead table and report section of
grouped results), ``layer_table`` (instructions per PyTorch layer: the
table, the rule behind each function, the change between two results),
``compare_table`` (torch's Compare of Measurements),
``run_comparison`` (two runs: change, significance, verdict), ``check`` and
``check_table`` (the expected-values gate), ``html_report``,
``html_parts`` and ``plots`` (the HTML report), ``progress`` (a run's
progress on the terminal), ``reference`` (a run next to published values),
``history_table`` and ``trends`` (the history's tables and charts),
``workers`` (the kept workers, listed), ``cache_table`` (cache figures of
``--cache-sim`` counts), ``flame_graph`` (the report's flame graphs),
``phase_table`` (compile phases), ``noise_table`` (the noise command's
table), ``markdown`` (markdown for a pull request), ``propose`` (``check
--propose``: the expected file as it should be).
May import: ``harness.kinds``, ``harness.history`` (its tables and trends),
``harness.measure`` (the layer names), ``harness.workers`` (the kept workers' directory),
``harness._version``,
``harness.records``, ``harness.define``, ``harness.model``,
``harness.files``, ``harness.errors``, ``harness.options``.
Imported by: the CLI, the pytest plugin, the public API (Compare), the suites' tables.
"""
