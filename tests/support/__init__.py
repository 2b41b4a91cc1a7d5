"""Helpers shared by the tests and the benchmarks (not test modules: pytest collects none).

``paths``: every directory a test needs (ROOT, TESTS_DIR, FIXTURES, SNAPSHOTS, BENCHMARKS,
DOCS, DEMO_DIR, CORPUS): no test computes a path from its own location. ``kb``: small KBs
built through the real write paths (``kbtool.kb.store`` for rows, ``kbtool.kb.gate`` for
names). ``tui_kb``: the seeded KB of the TUI tests; ``tui``: Pilot helpers for them. ``mcp``:
the MCP SDK's stdio client against a ``kbtool mcp`` subprocess. ``cli``: ``kbtool`` as a
subprocess. ``concurrency``: concurrent writers through the gate. ``diff_kb``: the two-version
KB of the diff-cache tests. ``records``: hand-made FuncRecords for the matcher. ``wat``: shared
wasm text. ``lift_sem``: lifted C built with gcc and run against wasmtime.

Tests import from here, never from one another.
"""
