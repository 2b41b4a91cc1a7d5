"""`kbtool serve` bounds how many requests of any route it answers at once (issue #24.7): a
real uvicorn server on 127.0.0.1, 20 parallel requests, one slot and no wait: the requests
beyond the bound get 503 with a JSON error and Retry-After, the others their answer, and the
server answers normally afterwards."""

from __future__ import annotations

import json
import threading

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.web import ServerProcess, request


def _burst(port: int, path: str, n: int = 20) -> list[tuple[int, dict, bytes]]:
    start = threading.Barrier(n)
    out: list[tuple[int, dict, bytes]] = []
    lock = threading.Lock()

    def one() -> None:
        start.wait()
        r = request(port, path)
        with lock:
            out.append(r)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_every_route_is_bounded(demo_kb_master, monkeypatch):
    conn = open_ro(demo_kb_master)
    vid = queries.latest_version_id(conn)
    conn.close()
    monkeypatch.setenv("KBTOOL_WEB_MAX_REQUESTS", "1")
    monkeypatch.setenv("KBTOOL_WEB_REQUEST_WAIT", "0")
    with ServerProcess(demo_kb_master) as server:
        for path in (f"/api/versions/{vid}/functions", "/api/search?q=a"):
            results = _burst(server.port, path)
            statuses = sorted(r[0] for r in results)
            assert len(results) == 20 and set(statuses) <= {200, 503}, statuses
            assert statuses.count(200) >= 1 and statuses.count(503) >= 1, (path, statuses)
            for status, headers, body in results:
                if status == 503:
                    assert headers["retry-after"] and headers["content-type"].startswith(
                        "application/json"
                    )
                    assert list(json.loads(body)) == ["error"]
                    assert "busy" in json.loads(body)["error"]
            # the slot is free again: a lone request answers
            assert request(server.port, path)[0] == 200
