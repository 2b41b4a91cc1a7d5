"""A KB created by ingesting a big module gets bigger SQLite pages; others keep the default."""

from __future__ import annotations

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.schema import BIG_MODULE_BYTES, BIG_PAGE_SIZE, new_kb_page_size


def _page_size(path) -> int:
    conn = open_ro(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def test_page_size_is_chosen_by_the_first_module():
    assert new_kb_page_size(BIG_MODULE_BYTES + 1) == BIG_PAGE_SIZE
    assert new_kb_page_size(BIG_MODULE_BYTES) is None
    assert new_kb_page_size(600_000) is None


def test_a_new_kb_takes_the_page_size_an_existing_one_keeps_its_own(tmp_path):
    big, small = tmp_path / "big.db", tmp_path / "small.db"
    open_rw(big, page_size=BIG_PAGE_SIZE).close()
    open_rw(small).close()
    assert _page_size(big) == BIG_PAGE_SIZE
    assert _page_size(small) == 4096
    open_rw(small, page_size=BIG_PAGE_SIZE).close()  # existing: unchanged, still a KB
    assert _page_size(small) == 4096
    conn = open_rw(big)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'kind'").fetchone()[0]
    finally:
        conn.close()
