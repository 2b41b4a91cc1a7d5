"""The lifted C of a version's huge functions, kept on disk (issue 30 points 1-2).

Lifting ffmpeg's 223 KB function takes ~90 ms of CPU even with the compiled lifter, and
structured C needs the whole body, so the first screen of its C in a fresh process (the TUI,
a studio on a new server, MCP ``get_lifted_c``) waited for it. The C of a function whose
body is at least :data:`MIN_BODY` bytes is kept in one file per (kept preparation's file
key, function index) beside the kept preparations (:mod:`kbtool.services.code_store`), and
served only when everything the C depends on is the same, else lifted as before:

- the file key of the version's kept preparation (KB file path, device, inode, version id,
  module SHA-256, ingest and data-model times, the store's format);
- the KB's change token **exactly** as when it was lifted, and the annotation decision it
  ends with (:func:`kbtool.kb.queries.code_labels.event_stamp`): any annotation write,
  analysis run or ingest is a miss (conservative on purpose: a rename of a callee must show);
- the code that makes the C: a SHA-256 over the sources of ``kbtool/lift`` (the pure
  lifter, which the compiled twin is built from and gives identical C), ``kbtool/wasm`` and
  the services that give the lifter its names and types, with :data:`FORMAT`;
- the view (:data:`VIEW`: the C the code views show).

Written atomically with a BLAKE2b digest like the preparations (a damaged file is a miss),
after a first lift of such a function and by ``python -m kbtool.services.code_store``
(:func:`keep_version`: the version's :data:`PER_VERSION` largest); at most
:data:`PER_KB` files per KB file and :data:`TOTAL_BYTES` in all (least recently used go).

Their whole disassembly is kept the same way (:func:`load_listing`, files ending
:data:`LISTING_SUFFIX`, judged by the same key, with the renderer's sources in the digest):
the whole-function ``GET /api/disasm`` of ffmpeg's largest function decoded and rendered
65,907 instructions (~630 ms of CPU) in a fresh process; kept, it is a file read. A listing
is kept zlib-compressed at :data:`LISTING_LEVEL` (the marshalled value deflated, then framed
and digested like the C under :data:`LISTING_MAGIC`): ffmpeg's 32 MB a version are 4.7 MB.
Every reader wants the whole text (the whole answer, or all its lines held for the next
windows), so it is one stream, not slices; a file that does not inflate is a miss.
"""

from __future__ import annotations

import hashlib
import marshal
import zlib
from pathlib import Path
from typing import Any

from kbtool.services import code_store, disk_cap

FORMAT = 1  # bump when what is kept changes
VIEW = "c"  # the C of the code views (annotate_c over the lifter's text)
MIN_BODY = 32 << 10  # a body this big (bytes) has its C kept
PER_VERSION = 16  # the largest this many of a version kept by `keep_version`
PER_KB = code_store.DISK_FILES * PER_VERSION
TOTAL_BYTES = 256 << 20
MAGIC = b"KBTOOL-KEPT-C\n"
SUFFIX = ".cc"
LISTING_VIEW = "wasm"  # the whole disassembly (render_listing) and its call lines
LISTING_SUFFIX = ".cw"
LISTING_MAGIC = b"KBTOOL-KEPT-W-ZLIB\n"  # a listing's file: compressed (an older one is a miss)
LISTING_LEVEL = 1  # zlib level: 6.3x smaller, 33 ms for 4.3 MB (level 6: 8x, 97 ms)
_SOURCE_DIGEST: list[str] = []
_LISTING_DIGEST: list[str] = []

Lifted = tuple[str, bool, "str | None"]


def _source_digest() -> str:
    """SHA-256 over the sources the C is made by (computed once per process)."""
    if not _SOURCE_DIGEST:
        root = Path(__file__).resolve().parent.parent
        files = sorted(
            [*(root / "lift").rglob("*.py"), *(root / "wasm").rglob("*.py")]
            + [root / "services" / n for n in ("code_prepared.py", "code_function.py")]
            + sorted((root / "services").glob("code_structs*.py"))
            + sorted((root / "services").glob("types*.py"))
            + [root / "services" / "knowledge.py"]
        )
        h = hashlib.sha256()
        for f in files:
            try:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
            except OSError:
                h.update(str(f).encode() + b"\0missing\0")
        _SOURCE_DIGEST.append(h.hexdigest())
    return _SOURCE_DIGEST[0]


def _listing_digest() -> str:
    """SHA-256 over what the C is made by and the disassembly's renderer (``kbtool/render``)."""
    if not _LISTING_DIGEST:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256(_source_digest().encode())
        for f in sorted((root / "render").glob("*.py")):
            try:
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
            except OSError:
                h.update(f.name.encode() + b"\0missing\0")
        _LISTING_DIGEST.append(h.hexdigest())
    return _LISTING_DIGEST[0]


def body_size(lm: Any, func_index: int) -> int:
    """Bytes of a defined function's body (0 for an import or out of range)."""
    m = lm.module
    k = func_index - m.num_func_imports
    if not 0 <= k < len(m.code):
        return 0
    start, end = m.code[k]  # the body's file offsets
    return end - start


_LEAST: dict[int, tuple[Any, int]] = {}  # id(module) -> (module, least size kept)


def _least(module: Any) -> int:
    """The smallest body size among the module's :data:`PER_VERSION` largest."""
    hit = _LEAST.get(id(module))
    if hit is not None and hit[0] is module:
        return hit[1]
    sizes = sorted((end - start for start, end in module.code), reverse=True)
    least = max(MIN_BODY, sizes[PER_VERSION - 1] if len(sizes) >= PER_VERSION else 0)
    if len(_LEAST) >= 8:
        _LEAST.clear()
    _LEAST[id(module)] = (module, least)
    return least


def warm(cm: Any) -> None:
    """Compute once what a first :func:`kept` of ``cm``'s version needs (the sources' digest
    and the version's size bar, ~10-25 ms on ffmpeg) at a front end's idle moment
    (:func:`kbtool.services.code.warm_views`), not in a huge function's first open."""
    if cm.c_key is not None:
        _source_digest()
        _least(cm.lm.module)


def wanted(cm: Any, func_index: int) -> bool:
    """The function's C is looked up and kept: a version kept on disk, a body of at least
    :data:`MIN_BODY` bytes among the version's :data:`PER_VERSION` largest."""
    if cm.c_key is None:
        return False
    size = body_size(cm.lm, func_index)
    return size >= MIN_BODY and size >= _least(cm.lm.module)


def _file(skey: tuple, func_index: int, suffix: str = SUFFIX) -> Path | None:
    directory = code_store.store_dir()
    if directory is None:
        return None
    prefix = hashlib.sha256(repr(skey[1:4]).encode()).hexdigest()[:12]
    what = (skey, func_index) if suffix == SUFFIX else (skey, func_index, suffix)
    digest = hashlib.sha256(repr(what).encode()).hexdigest()[:32]
    return directory / f"{prefix}-{digest}{suffix}"


def _header(c_key: tuple, func_index: int) -> list:
    skey, token, stamp = c_key
    return [FORMAT, VIEW, _source_digest(), list(skey), func_index, list(token), stamp]


def load(c_key: tuple, func_index: int) -> Lifted | None:
    """The kept C of ``func_index`` under ``c_key`` ((file key, change token, its decision's
    stamp)), or None (none kept, another token, lifter or view, unreadable, damaged)."""
    path = _file(c_key[0], func_index)
    if path is None:
        return None
    value = disk_cap.read_framed(path, MAGIC)
    if not isinstance(value, list) or len(value) != 2 or value[0] != _header(c_key, func_index):
        return None
    c = value[1]
    if not (
        isinstance(c, list)
        and len(c) == 3
        and isinstance(c[0], str)
        and isinstance(c[1], bool)
        and (c[2] is None or isinstance(c[2], str))
    ):
        return None
    disk_cap.touch(path)
    return c[0], c[1], c[2]


def save(c_key: tuple, func_index: int, c: Lifted) -> bool:
    """Keep ``c`` for ``func_index`` under ``c_key`` (atomically); False when not written."""
    return _save(_file(c_key[0], func_index), [_header(c_key, func_index), list(c)], SUFFIX)


def _save(path: Path | None, value: Any, suffix: str, magic: bytes = MAGIC) -> bool:
    if path is None:
        return False
    tmp = f".{suffix[1:]}-"
    try:
        if not disk_cap.write_framed(path, magic, value, tmp):
            return False
        disk_cap.prune(
            path.parent,
            kb_pattern=f"{path.name.split('-', 1)[0]}-*{suffix}",
            all_pattern=f"*{suffix}",
            tmp_pattern=f"{tmp}*.tmp",
            per_kb=PER_KB,
            total_bytes=TOTAL_BYTES,
        )
    except OSError:
        return False
    return True


#: a function's whole disassembly: its text (``render_listing``) and call lines
#: (``listing_calls``), as :func:`kbtool.services.code_function.disassembly` gives them
Listing = tuple[str, list]


def _listing_header(c_key: tuple, func_index: int) -> list:
    skey, token, stamp = c_key
    return [FORMAT, LISTING_VIEW, _listing_digest(), list(skey), func_index, list(token), stamp]


def load_listing(c_key: tuple, func_index: int) -> Listing | None:
    """The kept whole disassembly of ``func_index`` under ``c_key`` (as :func:`load`), or
    None."""
    path = _file(c_key[0], func_index, LISTING_SUFFIX)
    if path is None:
        return None
    packed = disk_cap.read_framed(path, LISTING_MAGIC)
    if type(packed) is not bytes:
        return None
    try:
        value = marshal.loads(zlib.decompress(packed))
    except (zlib.error, ValueError, EOFError, TypeError, MemoryError):
        return None
    if not isinstance(value, list) or len(value) != 2:
        return None
    if value[0] != _listing_header(c_key, func_index):
        return None
    got = value[1]
    if not (
        isinstance(got, list)
        and len(got) == 2
        and isinstance(got[0], str)
        and isinstance(got[1], list)
        and all(
            isinstance(c, list) and len(c) == 2 and all(type(x) is int for x in c) for c in got[1]
        )
    ):
        return None
    disk_cap.touch(path)
    return got[0], got[1]


def save_listing(c_key: tuple, func_index: int, text: str, calls: list) -> bool:
    """Keep the whole disassembly of ``func_index`` under ``c_key``; False when not written."""
    path = _file(c_key[0], func_index, LISTING_SUFFIX)
    value = [_listing_header(c_key, func_index), [text, [list(c) for c in calls]]]
    try:
        packed = zlib.compress(marshal.dumps(value), LISTING_LEVEL)
    except (ValueError, TypeError):  # a value marshal cannot keep: nothing is kept
        return False
    return _save(path, packed, LISTING_SUFFIX, LISTING_MAGIC)


def kept_listing(cm: Any, func_index: int) -> Listing | None:
    """The function's whole disassembly kept on disk when :func:`wanted` and still valid."""
    return load_listing(cm.c_key, func_index) if wanted(cm, func_index) else None


def kept(cm: Any, func_index: int) -> Lifted | None:
    """The function's C kept on disk when :func:`wanted` and still valid, else None; never
    lifts (a huge function's first screen gives it when it is there)."""
    return load(cm.c_key, func_index) if wanted(cm, func_index) else None


def lifted(cm: Any, func_index: int, lift: Any) -> Lifted:
    """The function's C: kept on disk when :func:`wanted` and still valid, else ``lift()``
    (then kept for the next process)."""
    if not wanted(cm, func_index):
        return lift()
    kept = load(cm.c_key, func_index)
    if kept is not None:
        return kept
    c = lift()
    save(cm.c_key, func_index, c)
    return c


def largest(cm: Any, count: int = PER_VERSION) -> list[int]:
    """The indices of the version's ``count`` largest bodies of at least :data:`MIN_BODY`."""
    m = cm.lm.module
    n = m.num_func_imports
    big = [(end - start, n + k) for k, (start, end) in enumerate(m.code) if end - start >= MIN_BODY]
    return [i for _s, i in sorted(big, reverse=True)[:count]]


def keep_version(conn: Any, version_id: int) -> int:
    """Lift and keep the C of the version's largest functions not kept yet, and their whole
    disassembly; how many were lifted now (``python -m kbtool.services.code_store``)."""
    from kbtool.services.code_function import function_code, lifted_c
    from kbtool.services.code_prepared import code_module

    cm = code_module(conn, version_id)
    if cm.c_key is None:
        return 0
    done = 0
    for i in largest(cm):
        if load(cm.c_key, i) is None:
            lifted_c(conn, version_id, i)
            done += 1
        if load_listing(cm.c_key, i) is None:
            function_code(conn, version_id, i)  # keeps it (code_function._keep_listing)
    return done
