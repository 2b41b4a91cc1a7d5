"""Toolchain detection: from the producers section, else from evidence in the module.

Returns a short text (``"clang 22.1.8"``, ``"rustc 1.83.0"``,
``"rustc 90b35a623 (from runtime strings)"``, ``"go1.21.3"``, ``"emscripten"``,
``"emscripten (minified imports)"``) or None. Every evidence-based answer names what it
was derived from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .reader import Module

_RUSTC_PATH = re.compile(rb"/rustc/([0-9a-f]{40})/library/")
_GO_VERSION = re.compile(rb"\bgo1\.(\d{1,2})(?:\.(\d{1,2}))?\b")
_PREFERENCE = ("emscripten", "rustc", "go", "tinygo", "clang", "zig")


def _short(entry: str) -> str:
    """``"rustc 1.83.0 (90b35a623 2024-11-26)"`` -> ``"rustc 1.83.0"``."""
    parts = entry.split()
    if len(parts) >= 2 and re.match(r"v?\d", parts[1]):
        return f"{parts[0]} {parts[1]}"
    if len(parts) >= 2 and re.match(r"go\d", parts[1]):  # "Go go1.21.3"
        return parts[1]
    return parts[0] if parts else entry


def _from_producers(m: Module) -> str | None:
    tools = m.producers.get("processed-by") or []
    if not tools:
        return None
    lowered = [(t.split()[0].lower() if t.split() else "", t) for t in tools]
    langs = [x.lower() for x in m.producers.get("language", [])]
    if any(x.startswith("rust") for x in langs):
        for name, t in lowered:
            if name == "rustc":
                return _short(t)
    for want in _PREFERENCE:
        for name, t in lowered:
            if name == want:
                return _short(t)
    return _short(tools[0])


def _data_blobs(m: Module) -> Iterable[bytes]:
    for s in m.data_segments:
        yield s.data


def detect_toolchain(module: Module, strings_sample: Iterable[str] = ()) -> str | None:
    """Best guess of the producing toolchain, or None without evidence."""
    m = module
    found = _from_producers(m)
    if found:
        return found
    sample = list(strings_sample)

    # Rust: panic locations of the standard library carry the compiler's commit hash
    for s in sample:
        mt = _RUSTC_PATH.search(s.encode("utf-8", "ignore"))
        if mt:
            return f"rustc {mt.group(1)[:9].decode()} (from runtime strings)"
    for blob in _data_blobs(m):
        mt = _RUSTC_PATH.search(blob)
        if mt:
            return f"rustc {mt.group(1)[:9].decode()} (from runtime strings)"

    import_modules = {i.module for i in m.imports}
    import_fields = {i.field for i in m.imports}

    # Go: js/wasm imports from "gojs"/"go", or wasip1 with Go runtime strings
    go_runtime = "gojs" in import_modules or "go" in import_modules
    if not go_runtime:
        go_runtime = sum(1 for s in sample if s.startswith("runtime.")) >= 3
        if not go_runtime:
            # (one scan of a blob without ``runtime.``: both names start with it)
            go_runtime = any(
                b"runtime." in blob and (b"runtime.gopanic" in blob or b"runtime.main" in blob)
                for blob in _data_blobs(m)
            )
    if go_runtime:
        for blob in _data_blobs(m):
            mt = _GO_VERSION.search(blob)
            if mt:
                return mt.group(0).decode()
        return "go (from runtime)"

    # Emscripten: its JS glue imports from "env" (+ WASI), with emscripten_* helpers;
    # release builds minify the import module to "a" and the fields to short names.
    if import_modules and import_modules <= {
        "env",
        "wasi_snapshot_preview1",
        "GOT.mem",
        "GOT.func",
    }:
        if any(
            f.startswith(
                ("emscripten_", "_emscripten_", "__syscall_", "_embind_", "invoke_", "__cxa_")
            )
            for f in import_fields
        ):
            return "emscripten"
    if import_modules == {"a"} and all(len(f) <= 3 for f in import_fields):
        return "emscripten (minified imports)"
    return None
