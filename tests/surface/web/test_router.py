"""The pure router ``kbtool.web.router.route``: routes, shapes, errors, one connection per request."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from kbtool.kb import provenance, queries
from kbtool.kb.db import open_ro
from kbtool.web import router
from kbtool.web.router import route
from tests.support.web import XSS_SCRIPT, copy_kb, sha256


def get(kb, path, **query):
    status, ctype, body = route(str(kb.path), path, {k: [v] for k, v in query.items()})
    return status, ctype, body


def get_json(kb, path, **query):
    status, ctype, body = get(kb, path, **query)
    assert ctype == "application/json"
    assert b"Traceback" not in body
    return status, json.loads(body)


def ro(kb) -> sqlite3.Connection:
    return open_ro(kb.path)


# ---------------------------------------------------------------- routes and shapes


def _static(name: str) -> str:
    status, ctype, body = route("/nonexistent.db", "/static/" + name, {})
    assert status == 200, name
    return body.decode()


def test_page_is_a_shell_of_same_origin_files(kb):
    status, ctype, body = get(kb, "/")
    assert status == 200 and ctype.startswith("text/html")
    text = body.decode()
    assert "<canvas" in text
    # no inline script or style, no inline handlers or style attributes ('self' only)
    assert re.findall(r"<script[^>]*>", text) == [
        '<script src="/static/dashboard-early.js">',  # classic, no imports: the first requests
        '<script type="module" src="/static/main.js">',
    ]
    assert "</script>" in text and not re.search(r"<script[^>]*>[^<]", text)
    assert "<style" not in text
    assert not re.search(r"\son[a-z]+\s*=", text) and not re.search(r"\sstyle\s*=", text)
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)">', text) == [
        "/static/provenance.css",
        "/static/dashboard.css",
    ]
    # no CDN, no external fonts, nothing fetched from another origin
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)


def test_static_modules_import_only_whitelisted_files():
    # the pages' scripts (studio-early.js, dashboard-early.js: classic scripts with no
    # imports) and their imports
    seen, todo = set(), ["main.js", "studio.js", "studio-early.js", "dashboard-early.js"]
    while todo:
        name = todo.pop()
        seen.add(name)
        src = _static(name)
        for dep in re.findall(r"""^import [^;]*? from "\./([a-z]+\.js)";""", src, re.M):
            assert dep in router.STATIC_FILES
            if dep not in seen:
                todo.append(dep)
    assert seen == {n for n in router.STATIC_FILES if n.endswith(".js")}


@pytest.mark.parametrize("name", sorted(router.STATIC_FILES) + ["provenance.css"])
def test_static_files_are_safe(name):
    text = _static(name)
    # KB text is never parsed as HTML, no code from strings, nothing from another origin
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "http://",
        "https://",
        "@import",
        "url(",
        "@font-face",
    ):
        assert sink not in text, (name, sink)
    # one vocabulary: no provenance or classification colour is spelled outside provenance.css
    if name.endswith(".js"):
        colours = {*provenance.COLOURS.values(), *provenance.CLASSIFICATION_COLOURS.values()}
        assert not [c for c in colours if c.lower() in text.lower()], name
    elif name != "provenance.css":  # the page's stylesheet defines none of the vocabulary's names
        for p in provenance.COLOURS:
            assert f"--{p}:" not in text and f".p-{p} " not in text, (name, p)
        for c in provenance.CLASSIFICATION_COLOURS:
            assert f"--c-{c}:" not in text and f".c-{c} " not in text, (name, c)


def test_text_goes_through_the_visible_helper():
    """Every module inserts text with dom.js (el/fill/setText): no raw textContent with data."""
    for name in router.STATIC_FILES:
        if not name.endswith(".js") or name == "dom.js":
            continue
        assert ".textContent =" not in _static(name), name
        assert ".title =" not in _static(name), name


def test_static_whitelist_and_generated_files(kb):
    assert _static("provenance.css") == provenance.stylesheet()
    status, data = get_json(kb, "/api/provenance")
    assert status == 200 and data == json.loads(json.dumps(provenance.vocabulary()))
    assert data["order"] == ["human", "oracle", "export", "agent", "diff-carry", "unnamed"]
    for name, ctype in router.STATIC_FILES.items():
        status, got, _ = get(kb, "/static/" + name)
        assert status == 200 and got == ctype
    for bad in (
        "",
        "dashboard.html",
        "../router.py",
        "../../pyproject.toml",
        "..",
        ".",
        "main.js/",
        "MAIN.JS",
        "/etc/passwd",
        "static/main.js",
        "main.js\x00",
        "__init__.py",
    ):
        status, ctype, body = get(kb, "/static/" + bad)
        assert status == 404 and list(json.loads(body)) == ["error"], bad


def test_expensive_routes():
    assert router.is_expensive("/api/diff")
    assert not router.is_expensive("/api/versions") and not router.is_expensive("/static/main.js")
    assert not router.is_expensive("/api/diffx")


def test_csp_allows_only_same_origin_files():
    from kbtool.web.security import PAGE_CSP

    directives = dict(d.strip().split(" ", 1) for d in PAGE_CSP.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["require-trusted-types-for"] == "'script'"
    assert directives["default-src"] == "'none'"


@pytest.mark.parametrize(
    "headers,path,refused",
    [
        ({}, "/api/diff", False),
        ({"sec-fetch-site": "same-origin"}, "/api/diff", False),
        ({"sec-fetch-site": "none"}, "/", False),
        ({"sec-fetch-site": "cross-site"}, "/api/diff", True),
        ({"sec-fetch-site": "same-site"}, "/api/diff", True),
        ({"sec-fetch-site": "CROSS-SITE"}, "/api/versions", True),
        (
            {
                "sec-fetch-site": "cross-site",
                "sec-fetch-mode": "navigate",
                "sec-fetch-dest": "document",
            },
            "/",
            False,
        ),
        (
            {
                "sec-fetch-site": "cross-site",
                "sec-fetch-mode": "navigate",
                "sec-fetch-dest": "iframe",
            },
            "/",
            True,
        ),
        (
            {
                "sec-fetch-site": "cross-site",
                "sec-fetch-mode": "navigate",
                "sec-fetch-dest": "document",
            },
            "/api/diff",
            True,
        ),
        ({"origin": "http://127.0.0.1:8787"}, "/api/diff", False),
        ({"origin": "http://127.0.0.1:8788"}, "/api/diff", True),
        ({"origin": "http://127.0.0.1"}, "/api/diff", True),
        ({"origin": "null"}, "/api/diff", True),
        ({"origin": ""}, "/api/diff", True),
        ({"origin": "http://127.0.0.1:8787/x"}, "/api/diff", True),
    ],
)
def test_cross_origin_refusal(headers, path, refused):
    from kbtool.web.security import cross_origin_refusal

    why = cross_origin_refusal(headers, "http", "127.0.0.1:8787", path)
    assert (why is not None) is refused


def test_own_origin_default_ports():
    from kbtool.web.security import cross_origin_refusal

    assert cross_origin_refusal({"origin": "http://kb.lan"}, "http", "kb.lan:80") is None
    assert cross_origin_refusal({"origin": "https://kb.lan"}, "https", "KB.lan") is None
    assert cross_origin_refusal({"origin": "http://[::1]:9000"}, "http", "[::1]:9000") is None
    assert cross_origin_refusal({"origin": "http://[::1]:9001"}, "http", "[::1]:9000") is not None


def test_versions_with_coverage(kb):
    status, data = get_json(kb, "/api/versions")
    assert status == 200
    assert [v["id"] for v in data] == kb.version_ids
    for v in data:
        assert set(v) >= {
            "id",
            "label",
            "toolchain_version",
            "functions",
            "shared_memory",
            "coverage_pct",
        }
        assert isinstance(v["shared_memory"], bool)
    conn = ro(kb)
    try:
        for v in data:
            assert v["coverage_pct"] == queries.coverage(conn, v["id"])["coverage_pct"]
    finally:
        conn.close()


def test_functions_are_defined_only(kb):
    vid = kb.version_ids[-1]
    status, data = get_json(kb, f"/api/versions/{vid}/functions")
    assert status == 200
    conn = ro(kb)
    try:
        defined = queries.coverage(conn, vid)["defined"]
        assert data == queries.list_functions(conn, vid)
    finally:
        conn.close()
    assert len(data) == defined
    assert set(data[0]) == {"index", "stable_id", "type", "name", "provenance", "confidence"}
    assert [f["index"] for f in data] == sorted(f["index"] for f in data)
    named = {f["stable_id"]: f for f in data if f["name"]}
    assert named[kb.script_sid]["name"] == XSS_SCRIPT
    assert all(
        f["confidence"] is None and f["provenance"] is None for f in data if f["name"] is None
    )


def test_coverage(kb):
    vid = kb.version_ids[0]
    status, data = get_json(kb, f"/api/versions/{vid}/coverage")
    assert status == 200
    assert set(data) >= {
        "defined",
        "named",
        "coverage_pct",
        "oracle_named",
        "human_named",
        "agent_named",
    }
    assert data["coverage_pct"] == (
        round(data["named"] / data["defined"] * 100, 2) if data["defined"] else 0.0
    )


def test_search(kb):
    assert get_json(kb, "/api/search") == (200, [])
    assert get_json(kb, "/api/search", q="") == (200, [])
    needle = kb.human_name[1:4].upper()
    status, data = get_json(kb, "/api/search", q=needle)
    assert status == 200 and data
    assert any(r["name"] == kb.human_name for r in data)
    assert all(needle.lower() in r["name"].lower() for r in data)
    assert [r["name"].lower() for r in data] == sorted(r["name"].lower() for r in data)
    assert len({r["stable_id"] for r in data}) == len(data)
    assert set(data[0]) == {"stable_id", "name", "provenance", "confidence"}
    # capped
    status, data = get_json(kb, "/api/search", q="_")
    assert status == 200 and len(data) <= router.SEARCH_LIMIT
    # literal, not a pattern
    assert get_json(kb, "/api/search", q="%")[1] == []
    assert [r["stable_id"] for r in get_json(kb, "/api/search", q="<script>")[1]] == [kb.script_sid]


def test_symbol(kb):
    status, data = get_json(kb, f"/api/symbol/{kb.script_sid}")
    assert status == 200
    assert set(data) >= {
        "stable_id",
        "name",
        "summary",
        "type_signature",
        "provenance",
        "confidence",
        "locked",
        "evidence",
    }
    assert data["stable_id"] == kb.script_sid and data["name"] == XSS_SCRIPT
    assert isinstance(data["evidence"], list) and data["evidence"][0]["actor"] == "oracle:test"


def test_symbol_404(kb):
    status, data = get_json(kb, f"/api/symbol/{kb.unnamed_sid}")
    assert status == 404 and list(data) == ["error"]
    status, data = get_json(kb, "/api/symbol/0000000000000000")
    assert status == 404 and list(data) == ["error"] and "unknown" in data["error"]


def test_history(kb):
    status, data = get_json(kb, f"/api/history/{kb.history_sid}")
    assert status == 200
    assert data["stable_id"] == kb.history_sid
    assert {"version_id", "label"} <= set(data["first_seen"])
    assert [v["version_id"] for v in data["versions"]] == kb.version_ids
    assert all(isinstance(v["body_changed"], bool) for v in data["versions"])
    kinds = [(e["kind"], e["written"], e["new_name"]) for e in data["events"]]
    assert kinds[-3:] == [
        ("agent-guess", True, "maybe_memcpy"),
        ("oracle-match", True, "ZSTD_copy16"),
        ("rejection", False, "copy_bytes"),
    ]
    names = {n["version_id"]: n["name"] for n in data["names_by_version"]}
    assert names[kb.version_ids[0]] == "maybe_memcpy" and names[kb.version_ids[-1]] == "ZSTD_copy16"
    # the detail panel's extras: the function in one version and its facts
    assert data["function"]["stable_id"] == kb.history_sid
    assert data["function"]["version_id"] == kb.version_ids[-1]
    assert data["facts"] is not None and "instruction_mnemonics" not in data["facts"]
    status, first = get_json(kb, f"/api/history/{kb.history_sid}", version=str(kb.version_ids[0]))
    assert first["function"]["version_id"] == kb.version_ids[0]


def test_history_of_unnamed_and_unknown(kb):
    status, data = get_json(kb, f"/api/history/{kb.unnamed_sid}")
    assert status == 200 and data["symbol"] is None
    status, data = get_json(kb, "/api/history/0000000000000000")
    assert status == 404 and list(data) == ["error"]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/api",
        "/api/",
        "/api/versions/",
        "/api/versions/1",
        "/api/versions/1/functions/",
        "/api/versions/1/functions/extra",
        "/API/versions",
        "/api/symbol",
        "/api/symbol/",
        "/index.html",
        "/studio/",
        "/api/analysis",
        "/api/events/1",
        "//api/versions",
        "/api/versions/1/../../etc/passwd",
    ],
)
def test_unknown_route_404(kb, path):
    status, data = get_json(kb, path)
    assert status == 404
    assert list(data) == ["error"] and isinstance(data["error"], str)


@pytest.mark.parametrize(
    "vid", ["abc", "-1", "1.5", "1e3", " 1", "0x10", "99999999999999999999", "１"]
)
@pytest.mark.parametrize("tail", ["functions", "coverage"])
def test_malformed_version_400(kb, vid, tail):
    status, data = get_json(kb, f"/api/versions/{vid}/{tail}")
    assert status == 400 and list(data) == ["error"]


@pytest.mark.parametrize("tail", ["functions", "coverage"])
def test_unknown_version_404(kb, tail):
    status, data = get_json(kb, f"/api/versions/987654/{tail}")
    assert status == 404 and list(data) == ["error"] and "987654" in data["error"]


@pytest.mark.parametrize("sid", ["a b", "x'--", "<script>", "a/b", "é", "x" * 129, "..%2f"])
@pytest.mark.parametrize("base", ["/api/symbol/", "/api/history/"])
def test_malformed_stable_id_400(kb, base, sid):
    status, data = get_json(kb, base + sid)
    assert status in (400, 404)
    if "/" not in sid:
        assert status == 400
    assert list(data) == ["error"]


@pytest.mark.parametrize(
    "query", [{}, {"from": "1"}, {"to": "1"}, {"from": "", "to": "1"}, {"from": "1", "to": ""}]
)
def test_diff_missing_parameters_400(kb, query):
    status, data = get_json(kb, "/api/diff", **query)
    assert status == 400 and list(data) == ["error"]


@pytest.mark.parametrize(
    "query", [{"from": "a", "to": "1"}, {"from": "1", "to": "2;DROP TABLE versions"}]
)
def test_diff_malformed_400(kb, query):
    status, data = get_json(kb, "/api/diff", **query)
    assert status == 400 and list(data) == ["error"]


def test_diff_unknown_version_404(kb):
    status, data = get_json(kb, "/api/diff", **{"from": "1", "to": "987654"})
    assert status == 404 and list(data) == ["error"]
    status, data = get_json(kb, "/api/diff", **{"from": "987654", "to": "1"})
    assert status == 404


def test_diff_computed_without_storing(kb, tmp_path):
    import dataclasses
    import shutil

    from kbtool.kb.db import open_rw
    from kbtool.services.diff.report import delete_diff

    a, b = kb.version_ids[0], kb.version_ids[-1]
    src = kb.path
    kb = dataclasses.replace(kb, path=tmp_path / "kb.db")
    shutil.copy(src, kb.path)
    conn = open_rw(kb.path)
    delete_diff(conn, a, b)  # ingest stored the report of each (parent, new) pair
    conn.close()
    before = sha256(kb.path)
    status, data = get_json(kb, "/api/diff", **{"from": str(a), "to": str(b)})
    assert status == 200
    assert {"from", "to", "summary", "changes"} <= set(data)
    labels = {v["id"]: v["label"] for v in get_json(kb, "/api/versions")[1]}
    assert data["from"] == labels[a] and data["to"] == labels[b]
    assert data.get("stored") is False
    assert isinstance(data["changes"], list) and data["changes"]
    assert {"classification", "from_index", "to_index"} <= set(data["changes"][0])
    assert sha256(kb.path) == before
    from kbtool.services.diff.report import get_diff

    conn = ro(kb)
    try:
        assert json.loads(json.dumps(get_diff(conn, a, b))) == data
    finally:
        conn.close()


@pytest.mark.parametrize(
    "method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "FOO"]
)
@pytest.mark.parametrize("path", ["/", "/api/versions", "/api/search", "/api/diff", "/nope"])
def test_other_methods_405(kb, method, path):
    status, ctype, body = route(str(kb.path), path, {}, method)
    assert status == 405 and ctype == "application/json"
    assert list(json.loads(body)) == ["error"]


def test_head_is_allowed(kb):
    assert route(str(kb.path), "/api/versions", {}, "HEAD")[0] == 200


def test_missing_or_foreign_kb_is_a_json_error(tmp_path):
    status, ctype, body = route(str(tmp_path / "missing.db"), "/api/versions", {})
    assert status == 503 and list(json.loads(body)) == ["error"]
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    status, ctype, body = route(str(junk), "/api/versions", {})
    assert status >= 400 and list(json.loads(body)) == ["error"] and b"Traceback" not in body
    assert junk.read_bytes() == b"not a database at all" * 100
    # the page itself needs no KB
    assert route(str(tmp_path / "missing.db"), "/", {})[0] == 200


def test_internal_errors_hide_the_traceback(kb, monkeypatch):
    def boom(conn, version_id):
        raise RuntimeError("secret detail /etc/passwd")

    monkeypatch.setattr(queries, "coverage", boom)
    status, ctype, body = route(str(kb.path), f"/api/versions/{kb.version_ids[0]}/coverage", {})
    assert status == 500 and json.loads(body) == {"error": "internal error"}


# ---------------------------------------------------------------- one read-only connection per request


def test_fresh_read_only_connection_per_request_closed_after(kb, monkeypatch):
    opened: list[sqlite3.Connection] = []
    real = router.open_ro

    def spy(path):
        conn = real(path)
        assert conn.execute("PRAGMA query_only").fetchone()[0] == 1
        opened.append(conn)
        return conn

    monkeypatch.setattr(router, "open_ro", spy)
    paths = [
        "/api/versions",
        f"/api/versions/{kb.version_ids[0]}/functions",
        f"/api/versions/{kb.version_ids[0]}/coverage",
        f"/api/symbol/{kb.script_sid}",
        f"/api/history/{kb.history_sid}",
        "/api/versions/9999/coverage",
        "/api/symbol/zz",
    ]
    for p in paths:
        route(str(kb.path), p, {})
    route(str(kb.path), "/api/search", {"q": ["a"]})
    assert len(opened) == len(paths) + 1
    assert len({id(c) for c in opened}) == len(opened)
    for conn in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    # the page, static files, the vocabulary and 405s need no connection
    route(str(kb.path), "/", {})
    route(str(kb.path), "/static/main.js", {})
    route(str(kb.path), "/api/provenance", {})
    route(str(kb.path), "/api/versions", {}, "POST")
    assert len(opened) == len(paths) + 1


# ---------------------------------------------------------------- host check (pure)


@pytest.mark.parametrize(
    "bound,allow,host,ok",
    [
        ("127.0.0.1", (), "127.0.0.1:8787", True),
        ("127.0.0.1", (), "localhost", True),
        ("127.0.0.1", (), "[::1]:8787", True),
        ("127.0.0.1", (), "evil.example", False),
        ("127.0.0.1", (), "evil.example:8787", False),
        ("127.0.0.1", (), "localhost.evil.example", False),
        ("127.0.0.1", (), "", False),
        ("127.0.0.1", (), None, False),
        ("127.0.0.1", ("kb.lan",), "KB.lan:8787", True),
        ("localhost", (), "127.0.0.1", True),
        ("::1", (), "[::1]:9000", True),
        ("192.168.5.5", (), "192.168.5.5:8787", True),
        ("192.168.5.5", (), "localhost", False),
        ("192.168.5.5", (), "evil.example", False),
        ("192.168.5.5", ("kb.lan",), "kb.lan", True),
        ("0.0.0.0", (), "10.1.2.3:8787", True),
        ("0.0.0.0", (), "localhost", True),
        ("0.0.0.0", (), "evil.example", False),
    ],
)
def test_host_check(bound, allow, host, ok):
    from kbtool.web.security import HostCheck

    assert HostCheck(bound, allow)(host) is ok


def test_diff_serves_the_stored_report(kb, tmp_path):
    from kbtool.kb.db import open_rw
    from kbtool.services.diff.report import compute_diff, save_diff

    path = copy_kb(kb, tmp_path / "kb.db")
    a, b = kb.version_ids[0], kb.version_ids[-1]
    conn = open_rw(path)
    try:
        report = compute_diff(conn, a, b)
        report["summary"] = dict(report["summary"], marker_only_in_the_stored_copy=1)
        save_diff(conn, report)
    finally:
        conn.close()
    status, ctype, body = route(str(path), "/api/diff", {"from": [str(a)], "to": [str(b)]})
    data = json.loads(body)
    assert status == 200 and data["stored"] is True
    assert data["summary"]["marker_only_in_the_stored_copy"] == 1
    # the reverse pair has no stored report: computed
    status, ctype, body = route(str(path), "/api/diff", {"from": [str(b)], "to": [str(a)]})
    assert status == 200 and json.loads(body)["stored"] is False
