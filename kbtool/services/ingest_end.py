"""The end of an ingest: what it allocated is neither walked by the collector nor freed
before its COMMIT's I/O (issue #30).

An ingest runs with the cyclic collector paused (:func:`gc_paused_aged`). When it is enabled
again, the first young collection walks every tracked object allocated meanwhile and still
alive: on a later ffmpeg ingest ~0.08-0.12 s at the very end, finding nothing to free (the
ingest makes no cycles worth collecting). Those survivors are moved to the oldest
generation instead (:func:`gc.freeze` then :func:`gc.unfreeze`: two list splices), where a
full collection finds them as it would have after they aged there.

The ingest's working data (the decoded module, both versions' records and rows, the
pairing) is freed when its functions return: ~0.1 s of deallocation on ffmpeg, CPU under
the GIL. :func:`free_meanwhile` frees it in a helper thread while this thread runs the
transaction's COMMIT, whose work (the WAL's sync, its checkpoint into the KB file) SQLite
does without holding the GIL; the caller joins the thread after the COMMIT, so nothing runs
beside the ingest once it returns.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from typing import Any

# (re-exported: the ingest's end keeps its data when the process ends right after it)
from kbtool.wasm.kept import keep_also, keep_until_exit, kept  # noqa: F401


@contextlib.contextmanager
def gc_paused_aged() -> Iterator[None]:
    """The cyclic collector paused for the block; after it, the objects alive join the oldest
    generation (not walked by the next young collection). In a process where objects are
    frozen on purpose (:mod:`kbtool.services.heap`'s policy: the TUI, the servers) the
    collector is only enabled again, as :func:`kbtool.wasm.facts.gc_paused` does."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if _nothing_frozen():  # (then unfreeze thaws only what this block left)
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def _nothing_frozen() -> bool:
    """Whether no object is frozen on purpose: :mod:`kbtool.services.heap`'s policy is off
    (asked first: counting a big frozen set walks it, tens of ms) and the count is 0."""
    heap = sys.modules.get("kbtool.services.heap")
    if heap is not None and heap.enabled():
        return False
    return gc.get_freeze_count() == 0


#: a module of fewer bytes leaves too little to free for a thread (~1 ms with its import)
THREAD_BYTES = 4_000_000


def free_meanwhile(trash: list, nbytes: int) -> Any:
    """A started thread that empties ``trash`` (:func:`empty`: the references the ingest's
    frames handed it) while the caller commits, for a module of ``nbytes`` from
    :data:`THREAD_BYTES` (the caller joins it); None below (``trash`` freed as before)."""
    if nbytes < THREAD_BYTES:
        return None
    import threading  # (here: a small module's ingest starts no thread)

    t = threading.Thread(target=empty, args=(trash,), name="kbtool-ingest-free", daemon=True)
    t.start()
    return t


#: items freed by one call of :func:`empty`: a slice of a big list (~1-2 ms of ffmpeg's rows)
SPLIT = 2048

#: a dict or list of at most this many items has each item looked into (the frames' locals,
#: an object's attributes); a bigger one is freed a slice or an item at a time as it is
LOOK = 256


def empty(trash: list) -> None:
    """Empty ``trash``, freeing what only it holds a piece at a time: a list or dict that
    nothing else refers to (or an object's attribute dict) is emptied a slice or an item at
    a time instead of freed by one call, so the thread that waits for the GIL (the
    COMMIT's, done with its I/O or about to start it) gets it within Python's switch
    interval, not after ~0.1 s of deallocation. Only what no one else can see is emptied
    (its reference count says this function holds the last reference)."""
    stack: list = [trash]
    while stack:
        box = stack.pop()
        look = len(box) <= LOOK
        if type(box) is list:
            while box:
                if len(box) > SPLIT:
                    del box[-SPLIT:]
                elif look:
                    item = box.pop()
                    _look(item, stack)
                else:
                    del box[:]
        else:
            while box:
                if look:
                    item = box.popitem()[1]
                    _look(item, stack)
                else:
                    box.popitem()
        item = box = None


def _look(item, stack: list) -> None:
    """Push ``item``'s contents on :func:`empty`'s ``stack`` when only the caller's name
    holds it (a list or dict of more than a few items, an object's attribute dict)."""
    if sys.getrefcount(item) != 3:  # (the caller's name, this argument, getrefcount's)
        return
    kind = type(item)
    if kind is list or kind is dict:
        if len(item) > 8:
            stack.append(item)
    elif getattr(kind, "__del__", None) is None:  # (a finalizer may read them)
        attrs = getattr(item, "__dict__", None)
        if type(attrs) is dict and len(attrs) > 1:
            stack.append(attrs)
