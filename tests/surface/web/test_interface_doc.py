"""docs/interface.md stays true: every MCP tool and every web route in the code is named there,
and every tool or route it names exists."""

from __future__ import annotations

import re

from kbtool.mcp import registry
from kbtool.web import router
from tests.support.paths import ROOT

DOC = (ROOT / "docs" / "interface.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end >= 0 else None]


def _doc_paths() -> set[str]:
    """The paths of the web section's table, ``{param}`` and ``NAME`` made concrete."""
    out = set()
    for p in re.findall(r"^\| `(/[^`\s]*)`", _section("## The web dashboard"), re.M):
        out.add(re.sub(r"\{[^}]+\}|NAME", "1", p))
    return out


def test_every_mcp_tool_is_in_the_interface_doc_and_no_other():
    code = {t.name for t in registry.load()}
    doc = set(re.findall(r"^\| `(\w+)`", _section("## MCP tools"), re.M))
    assert code - doc == set(), "MCP tools missing from docs/interface.md"
    assert doc - code == set(), "docs/interface.md names MCP tools that do not exist"


def test_every_web_route_is_in_the_interface_doc_and_no_other():
    paths = _doc_paths()
    patterns = [r.pattern for r in router.ROUTES]
    missing = [p.pattern for p in patterns if not any(p.match(d) for d in paths)]
    missing += [page for page in router.PAGES if page not in paths]
    if not any(d.startswith(router.STATIC_PREFIX) for d in paths):
        missing.append(router.STATIC_PREFIX)
    assert missing == [], "web routes missing from docs/interface.md"
    stale = [
        d
        for d in paths
        if d not in router.PAGES
        and not d.startswith(router.STATIC_PREFIX)
        and not any(p.match(d) for p in patterns)
    ]
    assert stale == [], "docs/interface.md names routes the router does not have"


def test_the_doc_answers_like_the_router_for_each_path_it_names(tmp_path):
    """A named path is routed (not the router's 404 "no route"), even on a missing KB."""
    for d in sorted(_doc_paths()):
        status, _ctype, body = router.route(str(tmp_path / "none.db"), d, {})
        assert not (status == 404 and b"no route" in body), d
