"""C++ statements: from the user's code to a loaded native sampler.

Lives here: ``statement`` (CppStatement and its content key), ``balance``
(brackets checked before a batch), ``toolchain`` (compiler, flags, torch:
the cache key), ``codegen`` (the translation units), ``include_set``
(lean, lean+api, frontend, script or full headers, and why), ``api_headers``
(the headers of torch's C++ API that define each of its names), ``runtime`` (the extension that loads
statement modules, built once per toolchain), ``pch`` (a precompiled header
per include set, built at set-up or in the background), ``diagnostics`` (compile
errors mapped to the user's lines), ``log`` (the build log), ``build`` (the
content-addressed cache and batched builds), ``ninja_build`` (statement
modules built by ninja from cpp_extension's rules, without ``import torch``),
``block`` (CppBlock, the C++ block a Timer times).
May import: ``harness.files``, ``harness.core``, ``harness.errors``, ``harness.options``.
Imported by: ``harness.measure.timer``, ``harness.measure.callgrind`` (``collect``), ``harness.run``.
"""
