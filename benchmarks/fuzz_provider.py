"""Provider cases for the fuzz harness (issue #24): ``kbtool agent --backend provider_b``
(the real ``openai`` SDK through kbtool's bounded client) against hostile endpoints on
127.0.0.1, in real subprocesses on a scratch demo KB.

The endpoints (:class:`HostileProvider`, a fake written here: benchmarks never import tests):

- ``trickle``: a valid answer one byte at a time (each read is quick, the whole never ends);
- ``huge``: a body far over the response bound, with ``content-length``; ``huge-chunked``:
  the same without it;
- ``malformed``: a random one of: not JSON, JSON of the wrong shape, an empty body, deeply
  nested JSON, an answer whose text is not JSON, an answer JSON with wrong types or a name
  holding control/bidi characters, markup or 10,000 characters;
- ``storm-429`` / ``storm-500``: every call refused (with ``retry-after`` of 0 or of hours);
- ``reset``: the connection closed halfway through the headers.

A failure is: a traceback, a multi-line error, an exit code other than 0/1, a run longer
than the bound (the deadline x the calls the pass may make, plus start-up), a peak RSS over
``--mem-mb``, a name written that is not a C identifier, or the KB failing its integrity
check.

    python -m benchmarks.fuzz_provider [--cases 24] [--seed 24]   # also run by benchmarks.fuzz
    python -m benchmarks.fuzz_provider --smoke                     # one case of each kind
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLI = [sys.executable, "-m", "kbtool.cli"]
KINDS = ("trickle", "huge", "huge-chunked", "malformed", "storm-429", "storm-500", "reset")
DEADLINE = 2.0  # KBTOOL_AGENT_TIMEOUT: seconds, one call, retries included
MAX_BYTES = 256 * 1024  # KBTOOL_AGENT_MAX_BYTES
FUNCTIONS = 2  # --max-functions (malformed: one per malformed answer)
OPINIONS = 2  # a second prompt checks each answer: up to 2 calls per function
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _envelope(text: str) -> bytes:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "x",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def _answer(name: Any = "parse_header", **extra: Any) -> str:
    return json.dumps(
        {
            "explanation": "e",
            "name": name,
            "summary": "s",
            "confidence": 0.9,
            "reasons": ["r"],
            **extra,
        }
    )


def malformed_bodies(rng: random.Random) -> list[tuple[str, bytes]]:
    """(label, body) of every malformed answer, in a random order."""
    out = [
        ("not json", b"<html>502 bad gateway</html>"),
        ("empty", b""),
        ("wrong shape", json.dumps({"choices": "none"}).encode()),
        ("no choices", json.dumps({"id": "c", "object": "chat.completion"}).encode()),
        ("deep nesting", b"[" * 100_000 + b"]" * 100_000),
        ("text not json", _envelope("I think this function parses a header.")),
        ("wrong types", _envelope(json.dumps({"name": ["a"], "confidence": "high", "reasons": 7}))),
        ("control name", _envelope(_answer("evil\x1b[2J\u202ename"))),
        ("markup name", _envelope(_answer("[bold red]pwned[/bold red]<script>"))),
        ("long name", _envelope(_answer("a" * 10_000))),
        ("nan confidence", _envelope(_answer(confidence=float("nan")))),
        ("invalid utf-8", b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    ]
    rng.shuffle(out)
    return out


class HostileProvider:
    """An OpenAI-style ``POST /v1/chat/completions`` endpoint on 127.0.0.1 behaving as
    ``mode`` (see the module doc); ``requests`` counts what reached it."""

    def __init__(self, mode: str, rng: random.Random) -> None:
        self.mode, self.rng = mode, rng
        self.requests = 0
        self.labels: list[str] = []
        self._bad = malformed_bodies(rng)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(min(int(self.headers.get("content-length") or 0), 64 << 20))
                owner.requests += 1
                try:
                    owner.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        code: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        h.send_response(code)
        h.send_header("content-type", "application/json")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        mode = self.mode
        if mode == "trickle":
            body = _envelope(_answer())
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(body)))
            h.end_headers()
            for i in range(len(body)):  # about 50 bytes a second: never done in time
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
                time.sleep(0.02)
        elif mode == "huge":
            body = _envelope(_answer())
            self._send(h, 200, body + b" " * (MAX_BYTES * 64))  # 16 MiB: JSON allows spaces
        elif mode == "huge-chunked":
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("transfer-encoding", "chunked")
            h.end_headers()
            part = b" " * 65536
            for _ in range(MAX_BYTES * 64 // len(part)):
                h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            h.wfile.write(b"0\r\n\r\n")
        elif mode == "malformed":
            label, body = self._bad[(self.requests - 1) % len(self._bad)]
            self.labels.append(label)
            self._send(h, 200, body)
        elif mode in ("storm-429", "storm-500"):
            code = 429 if mode == "storm-429" else 500
            wait = self.rng.choice(["0", "1", "86400"])
            self._send(
                h,
                code,
                json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode(),
                {"retry-after": wait, "retry-after-ms": str(int(wait) * 1000)},
            )
        elif mode == "reset":
            h.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/js")
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)

    def __enter__(self) -> HostileProvider:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _functions(kind: str) -> int:
    return len(malformed_bodies(random.Random(0))) if kind == "malformed" else FUNCTIONS


def _run_agent(
    kb: Path, url: str, cwd: Path, functions: int = FUNCTIONS
) -> tuple[subprocess.CompletedProcess, float, int]:
    """``kbtool agent 2 --backend provider_b`` against ``url``: (result, seconds, peak RSS KiB)."""
    env = dict(
        os.environ,
        PROVIDER_B_API_KEY="fuzz",
        PROVIDER_B_BASE_URL=url,
        KBTOOL_AGENT_TIMEOUT=str(DEADLINE),
        KBTOOL_AGENT_MAX_BYTES=str(MAX_BYTES),
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="200",
    )
    for k in ("PROVIDER_A_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(k, None)
    args = [
        "--db",
        str(kb),
        "agent",
        "2",
        "--backend",
        "provider_b",
        "--all",
        "--max-functions",
        str(functions),
        "--opinions",
        str(OPINIONS),
        "--retries",
        "2",
        "--concurrency",
        "1",
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        CLI + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=(n, s), daemon=True)
        for n, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for t in readers:
        t.start()
    watchdog = threading.Timer(600, proc.kill)
    watchdog.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
    finally:
        watchdog.cancel()
    seconds = time.monotonic() - t0
    for t in readers:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (
        subprocess.CompletedProcess(
            proc.args, proc.returncode, chunks.get("out", b""), chunks.get("err", b"")
        ),
        seconds,
        usage.ru_maxrss,
    )


def _agent_names(kb: Path) -> list[tuple[str, float]]:
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT name, confidence FROM symbols WHERE provenance = 'agent'"))
    finally:
        conn.close()


def _check_kb(kb: Path) -> str | None:
    conn = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    if not ok:
        return "KB integrity check failed"
    bad = [
        (n, c)
        for n, c in _agent_names(kb)
        if n is not None and (not IDENT.match(n) or not 0.0 <= float(c) <= 1.0)
    ]
    return (
        f"agent names that are not identifiers or confidences out of 0..1: {bad[:3]!r}"
        if bad
        else None
    )


def case(
    kind: str, master: Path, work: Path, rng: random.Random, mem_mb: int
) -> tuple[str | None, dict]:
    """One run of ``kind``: (failure or None, facts)."""
    kb = work / f"{kind}.db"
    shutil.copyfile(master, kb)
    before = len(_agent_names(kb))
    functions = _functions(kind)
    with HostileProvider(kind, rng) as srv:
        r, seconds, rss_kib = _run_agent(kb, srv.url, work, functions)
    err = r.stderr.decode("utf-8", "replace").strip()
    out = r.stdout.decode("utf-8", "replace")
    # every call may use its whole deadline; the second opinion only follows an answer
    bound = 30.0 + DEADLINE * functions * OPINIONS * 2
    written = len(_agent_names(kb)) - before
    first = out.strip().splitlines()[0] if out.strip() else ""
    facts = {
        "kind": kind,
        "rc": r.returncode,
        "seconds": round(seconds, 1),
        "rss_mb": round(rss_kib / 1024),
        "requests": srv.requests,
        "written": written,
        "said": (err.splitlines()[-1] if r.returncode else first)[:150],
        "answers": srv.labels,
    }
    if "Traceback" in err:
        return f"{kind}: traceback: {err[-400:]}", facts
    if r.returncode not in (0, 1):
        return f"{kind}: exit code {r.returncode}: {err[-300:]}", facts
    if r.returncode == 1 and len(err.splitlines()) != 1:
        return f"{kind}: not a one-line error: {err[-400:]!r}", facts
    if seconds > bound:
        return f"{kind}: {seconds:.1f} s > {bound:.0f} s", facts
    if rss_kib > mem_mb * 1024:
        return f"{kind}: peak RSS {rss_kib // 1024} MB > {mem_mb} MB", facts
    if srv.requests == 0:
        return f"{kind}: the pass never called the endpoint", facts
    raw = [c for c in ("\x1b", "\u202e", "\x07") if c in out or c in err]
    if raw:
        return f"{kind}: untrusted text printed raw ({raw!r})", facts
    m = re.search(r"(\d+) written \((\d+) by the specialist\)", out)
    from_provider = int(m.group(1)) - int(m.group(2)) if m else 0
    facts["from_provider"] = from_provider
    if kind != "malformed" and from_provider:
        return f"{kind}: {from_provider} names written from answers that never arrived whole", facts
    return _check_kb(kb), facts


def run(cases: int, seed: int = 24, mem_mb: int = 1024, kinds: tuple[str, ...] = KINDS) -> dict:
    """``cases`` runs, ``kinds`` in turn; ``{"failures", "stats", "runs"}``."""
    if importlib.util.find_spec("openai") is None:
        return {"failures": [], "stats": {"provider skipped (no openai SDK)": 1}, "runs": []}
    from kbtool.services.demo import build_demo

    rng = random.Random(seed)
    failures: list[str] = []
    runs: list[dict] = []
    stats: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="kbtool-fuzz-provider-") as tmp:
        work = Path(tmp)
        master = work / "master.db"
        build_demo(master, echo=lambda _m: None)
        for i in range(cases):
            kind = kinds[i % len(kinds)]
            failure, facts = case(kind, master, work, rng, mem_mb)
            runs.append(facts)
            stats[f"provider {kind}"] += 1
            stats["provider max seconds"] = max(
                stats["provider max seconds"], int(facts["seconds"] + 0.999)
            )
            stats["provider max rss MB"] = max(stats["provider max rss MB"], facts["rss_mb"])
            if failure:
                failures.append(failure)
    return {"failures": failures, "stats": dict(stats), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=24)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--mem-mb", type=int, default=1024, help="peak RSS bound of one kbtool run")
    ap.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help="endpoints to run (default all): " + ", ".join(KINDS),
    )
    ap.add_argument("--smoke", action="store_true", help="one case of each kind")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in a.kinds.split(",") if k.strip())
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        ap.error(f"unknown kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
    if a.smoke:
        a.cases = min(a.cases, len(kinds))
    res = run(a.cases, a.seed, a.mem_mb, kinds)
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        for f in res["runs"]:
            print(
                f"  {f['kind']:<13} rc {f['rc']}  {f['seconds']:>5} s  {f['rss_mb']:>4} MB"
                f"  {f['requests']:>2} requests  {f['written']} written  {f['said']}"
            )
        print(", ".join(f"{k} {v}" for k, v in sorted(res["stats"].items())))
        for f in res["failures"]:
            print("FAIL", f)
        print(f"{len(res['failures'])} failures")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
