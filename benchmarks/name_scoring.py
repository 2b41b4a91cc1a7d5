"""What the name-carrying benchmarks share: true names of a named module and the rates.

Used by ``benchmarks/diff_accuracy.py`` (releases of the shared corpus) and
``benchmarks/optlevels.py`` (opt-level pairs of the programs corpus).
"""

from __future__ import annotations

from pathlib import Path

from kbtool.wasm import analyze_module

_TRUTH: dict[Path, dict[int, str | None]] = {}


def true_names(path: Path) -> dict[int, str | None]:
    """Function index -> name-section name of the defined functions of a named module
    (cached per path)."""
    t = _TRUTH.get(path)
    if t is None:
        a = analyze_module(path.read_bytes())
        t = {f.index: f.raw_name for f in a.functions if not f.imported}
        _TRUTH[path] = t
    return t


class NameRates:
    """``precision``, ``precision_star`` (renames left out) and ``recall`` of a score with
    the fields ``reached``, ``renamed``, ``relevant`` and the right names in the field
    named by ``HITS``."""

    HITS = "correct"

    @property
    def hits(self) -> int:
        return getattr(self, self.HITS)

    @property
    def precision(self) -> float:
        return self.hits / self.reached if self.reached else 1.0

    @property
    def precision_star(self) -> float:
        n = self.reached - self.renamed
        return self.hits / n if n else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.relevant if self.relevant else 1.0
