"""`kbtool mcp`'s stdio guard knows which request each answer line closes (to wait for the
answers still due when the client closes its input) from the line's first bytes: a whole diff
of a big module is a 6 MB line that was parsed whole only for its id (issue 30)."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, JSONRPCResponse, TextContent

from kbtool.mcp import linebound


def _sdk_answer(rid: int | str, text: str) -> bytes:
    """An answer line as the SDK's server writes it."""
    result = CallToolResult(content=[TextContent(type="text", text=text)], isError=False)
    msg = JSONRPCResponse(
        jsonrpc="2.0", id=rid, result=result.model_dump(by_alias=True, exclude_none=True)
    )
    return msg.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n"


class _CountingJson:
    """``json`` as linebound uses it, recording the size of every text it parses."""

    def __init__(self) -> None:
        self.parsed: list[int] = []

    def loads(self, data):
        self.parsed.append(len(data))
        return json.loads(data)

    def dumps(self, *a, **kw):
        return json.dumps(*a, **kw)


def _full_parse_key(line: bytes):
    msg = json.loads(line)
    if isinstance(msg, dict) and "method" not in msg and isinstance(msg.get("id"), int | str):
        return json.dumps(msg["id"])
    return None


def test_a_big_answer_s_id_is_read_from_its_first_bytes(monkeypatch):
    big = json.dumps({"changes": [{"name": f"f{i}", "score": 0.5} for i in range(40_000)]})
    counting = _CountingJson()
    monkeypatch.setattr(linebound, "json", counting)
    for rid in (7, "req-é"):
        line = _sdk_answer(rid, big)
        assert len(line) > 1_000_000
        assert linebound._response_key(line) == json.dumps(rid) == _full_parse_key(line)
    assert counting.parsed and max(counting.parsed) < 200  # only the id, never the line


def test_other_lines_get_what_a_full_parse_gives():
    lines = [
        b'{"result":{"content":[]},"id":3,"jsonrpc":"2.0"}\n',  # the id after the answer
        b'{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"x"}}\n',
        b'{"jsonrpc":"2.0","id":5,"result":null}\n',  # no nested answer
        b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{}}\n',  # a request of the server
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n',
        b'{"jsonrpc":"2.0","id":[1],"result":{}}\n',  # not an id a request can have
        b"not json\n",
    ]
    for line in lines:
        try:
            want = _full_parse_key(line)
        except ValueError:
            want = None
        assert linebound._response_key(line) == want, line


def test_a_big_answer_is_scanned_for_unsafe_characters_beyond_ascii_only(monkeypatch):
    """The tools' JSON escapes C1, bidi and line-separator characters (the same text as
    before), but finds them among the answer's non-ASCII bytes, not by a scan of it all."""
    from kbtool.mcp import registry
    from kbtool.services import json_answer  # the tools' encoder (registry re-exports it)
    from kbtool.textutil import json_safe

    scanned: list[int] = []

    def counting(text: str) -> str:
        scanned.append(len(text))
        return json_safe(text)

    monkeypatch.setattr(json_answer, "json_safe", counting)
    rows = [{"name": f"f{i}", "explain": ["strings added: ' ꪫ', 'é'"]} for i in range(20_000)]
    clean = registry.as_json({"changes": rows})
    assert clean == json.dumps({"changes": rows}, ensure_ascii=False, separators=(",", ":"))
    assert max(scanned) < 200_000 < len(clean)  # only the bytes beyond ASCII were looked at
    hostile = rows + [{"name": "evil\u202eexe\x85\u2028\U000e0041", "explain": []}]
    text = registry.as_json({"changes": hostile})
    assert text == json_safe(
        json.dumps({"changes": hostile}, ensure_ascii=False, separators=(",", ":"))
    )
    assert "\u202e" not in text and "\\u202e" in text and "\\udb40\\udc41" in text
