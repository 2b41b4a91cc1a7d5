"""Helpers shared by the tests and the benchmarks (not test modules: pytest collects none).

``paths``: the repository, the bundled demo releases and the corpus. ``kb``: small KBs built
through the real write paths (``kbtool.kb.store`` for rows, ``kbtool.kb.gate`` for names).
``tui_kb``: the seeded KB of the TUI tests; ``tui``: Pilot helpers for them.
"""
