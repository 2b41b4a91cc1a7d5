"""What the glue reader returns, the shapes it recognises, and its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

NO_SHAPE_NOTE = "no Emscripten export wrapper shape recognised"

SHAPE_ARROW = "emscripten-arrow-wrapper"
SHAPE_APPLY = "emscripten-apply-wrapper"
SHAPE_LEGACY_APPLY = "emscripten-legacy-apply-wrapper"
SHAPE_DIRECT = "emscripten-direct-assign"
SHAPE_DEBUG = "emscripten-export-wrapper-debug"
SHAPE_IMPORTS = "emscripten-import-object"


@dataclass
class GlueNames:
    exports: dict[str, str] = field(default_factory=dict)  # minified export -> real name
    imports: dict[str, str] = field(default_factory=dict)  # minified import field -> real name
    import_module: str | None = None  # module the import object is passed under
    unknown: list[str] = field(default_factory=list)  # notes on shapes not understood
    shape: str | None = None  # recognised shape(s), "+"-joined


def _short_list(items: list[str], limit: int = 30) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit})" if len(items) > limit else "")


def _drop_reverse_duplicates(mapping: dict[str, str], notes: list[str], what: str) -> None:
    by_real: dict[str, list[str]] = {}
    for k, real in mapping.items():
        by_real.setdefault(real, []).append(k)
    for real, keys in by_real.items():
        if len(keys) > 1:
            for k in keys:
                del mapping[k]
            notes.append(
                f"{what}s {', '.join(repr(k) for k in sorted(keys))} all map to {real!r}; kept none"
            )
