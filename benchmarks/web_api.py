"""The web dashboard's targets, measured against a real `kbtool serve` on loopback.

    python benchmarks/web_api.py [--kb PATH] [--runs 15] [--seconds 10] [--clients 32] [--json]
    python benchmarks/web_api.py --smoke        # tiny input, a few seconds, no targets

The KB: the largest corpus release (onnxruntime-web 1.20.1, 13,645 defined functions; the
bundled zstd 1.5.6 demo release with ``--smoke`` or when the corpus is absent) ingested for
real (``kbtool.services.ingest``), plus a generated version of 50,000 defined functions (300
with ``--smoke``) made from its rows (types, hashes, sizes, facts of the real functions, fresh
stable ids) written through ``kbtool.kb.store``, about 65% of them named with a mix of every
provenance through the gate (``kbtool.kb.gate``). ``--kb PATH`` reuses / keeps that KB.

1. ``GET /api/versions/{id}/functions`` of the generated version: median and p90 of ``--runs``
   requests (after 2 warm-ups), each a full HTTP round trip timed to the last byte of the
   body; in the same run datasette (when installed) serves the same rows (same SQL, same file)
   as a JSON array (``_shape=array``) and the ratio is reported. The bodies must be the same rows.
2. Keep-alive latency: sequential requests on one reused connection to ``/api/provenance``
   (no KB work, so the round trip itself is measured), median, against (a) uvicorn binding the same app itself
   (the peer), (b) the app on a socket made like ``kbtool serve`` made it before the fix
   (``socket.create_server``: protocol 0, so asyncio never set TCP_NODELAY and Nagle met the
   client's delayed ACK), (c) ``kbtool serve`` today (IPPROTO_TCP + TCP_NODELAY).
3. ``--clients`` concurrent keep-alive clients for ``--seconds`` on ``/api/search`` (rotating
   substrings) and on ``/api/versions/{id}/coverage``: requests/s, p50, p99, errors. Clients
   run in a separate process; everything stays on 127.0.0.1.
4. Headless Chromium (Debian's /usr/bin/chromium via Playwright; skipped with ``--smoke``):
   the time from clicking the generated version to the heatmap being drawn (fetch + parse +
   layout + draw, as the page measures it, and as the driver sees it), median of 5; and the
   cost of one hover event (hit test, overlay redraw, tooltip) over 2,000 synthetic moves.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ORT = "release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm"
# the shared corpus beside the checkout (or beside the worktrees' directory), or $KBTOOL_CORPUS
_CORPORA = [Path(os.environ["KBTOOL_CORPUS"])] if os.environ.get("KBTOOL_CORPUS") else []
_CORPORA += [ROOT.parent / "shared" / "corpus", ROOT.parents[1] / "shared" / "corpus"]
CORPUS = next((c / ORT for c in _CORPORA if (c / ORT).exists()), _CORPORA[-1] / ORT)
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.6.wasm"
BIG = 50_000
SMOKE_BIG = 300
REAL_LABEL, BIG_LABEL = "real", "synthetic"
SQL = (
    'SELECT f.idx AS "index", f.stable_id, f.type_sig AS "type", s.name, s.provenance, s.confidence'
    " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
    " WHERE f.version_id = :v AND f.imported = 0 ORDER BY f.idx"
)
SEARCHES = [
    "gemm",
    "conv",
    "Session",
    "ort_",
    "tensor",
    "x",
    "kernel_0",
    "zz_nothing",
    "Mlas",
    "_1",
]
WORDS = [
    "MlasGemm",
    "OrtSession",
    "ConvTranspose",
    "QuantizeLinear",
    "TensorShape",
    "KernelRegistry",
    "ThreadPool",
    "Softmax",
    "LayerNorm",
    "GatherND",
    "Reshape",
    "Allocator",
    "Einsum",
    "Resize",
]
PROV_MIX = [
    ("oracle", 25),
    ("export", 10),
    ("human", 5),
    ("agent", 15),
    ("diff-carry", 10),
    (None, 35),
]
CONFIDENCE = {"human": 1.0, "oracle": 0.9, "export": 0.95}
CHROMIUM = "/usr/bin/chromium"


# ---------------------------------------------------------------- the KB


def _rows(conn, table: str, version_id: int) -> list[dict]:
    """Every row of ``table`` for one version, as dicts by column name (benchmark input only)."""
    cur = conn.execute(f"SELECT * FROM {table} WHERE version_id = ? ORDER BY idx", (version_id,))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def build_kb(path: Path, source: Path, big: int) -> dict:
    """Ingest ``source`` for real, then a generated version of ``big`` functions made from it."""
    from kbtool.kb import store
    from kbtool.kb.db import open_rw, transaction
    from kbtool.kb.gate import upsert_symbol
    from kbtool.services.ingest import ingest_file

    t0 = time.perf_counter()
    conn = open_rw(path)
    real = ingest_file(conn, source, label=REAL_LABEL).version_id
    funcs = [f for f in _rows(conn, "functions", real) if not f["imported"]]
    facts = {f["idx"]: f for f in _rows(conn, "facts", real)}
    rnd = random.Random(5)
    provs = [p for p, w in PROV_MIX for _ in range(w)]
    with transaction(conn):
        vid = store.insert_version(
            conn,
            {
                "label": BIG_LABEL,
                "sha256": hashlib.sha256(b"synthetic").hexdigest(),
                "size": 0,
                "imported_functions": 0,
                "defined_functions": big,
                "exported_functions": 0,
            },
        )
        new_funcs, new_facts, names = [], [], []
        for i in range(big):
            f = funcs[i % len(funcs)]
            sid = hashlib.blake2b(f"bench|{i}".encode(), digest_size=8).hexdigest()
            new_funcs.append(
                {
                    **f,
                    "version_id": vid,
                    "idx": i,
                    "stable_id": sid,
                    "imported": 0,
                    "import_module": None,
                    "import_field": None,
                    "prev_index": None,
                    "match_method": "new",
                    "match_score": None,
                    "body_changed": 0,
                }
            )
            new_facts.append({**facts[f["idx"]], "version_id": vid, "idx": i, "calls": "[]"})
            p = rnd.choice(provs)
            if p:
                conf = CONFIDENCE.get(p) or round(rnd.uniform(0.1, 0.9), 3)
                names.append(
                    (sid, f"{rnd.choice(WORDS)}_{'kernel' if i % 3 else 'impl'}_{i}", p, conf)
                )
        store.insert_functions(conn, new_funcs)
        store.insert_facts(conn, new_facts)
        for sid, name, p, conf in names:
            upsert_symbol(
                conn, sid, name, provenance=p, confidence=conf, actor=f"{p}:bench", version_id=vid
            )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("ANALYZE")
    conn.close()
    return {
        "real_version": real,
        "big_version": vid,
        "named": len(names),
        "build_seconds": round(time.perf_counter() - t0, 1),
    }


def describe(path: Path) -> dict:
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro

    conn = open_ro(path)
    try:
        vs = queries.list_versions(conn)
        big = next(v for v in vs if v["label"] == BIG_LABEL)
        real = next(v for v in vs if v["label"] == REAL_LABEL)
        cov = queries.coverage(conn, big["id"])
    finally:
        conn.close()
    return {
        "real_version": real["id"],
        "big_version": big["id"],
        "named": cov["named"],
        "defined": cov["defined"],
    }


# ---------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port: int, path: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _ = get(port, path)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no answer on :{port}{path}")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def start_kbtool(path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool.cli", "serve", "--db", str(path), "--port", str(port)],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_http(port, "/api/versions")
    return proc, port


# the same app on other sockets: uvicorn binding it itself (the peer), and the socket
# `kbtool serve` used before the fix (socket.create_server: protocol 0, no TCP_NODELAY)
SERVE_CHILD = r"""
import socket, sys, uvicorn
from kbtool.web.app import create_app
db, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
app = create_app(db)
kw = dict(log_level="warning", access_log=False, lifespan="off", server_header=False, date_header=False)
if mode == "uvicorn":
    uvicorn.run(app, host="127.0.0.1", port=port, **kw)
else:
    sock = socket.create_server(("127.0.0.1", port), backlog=2048)
    uvicorn.Server(uvicorn.Config(app, **kw)).run(sockets=[sock])
"""


def start_variant(path: Path, mode: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE_CHILD, str(path), str(port), mode],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_http(port, "/api/versions")
    return proc, port


def start_datasette(path: Path) -> tuple[subprocess.Popen, int] | None:
    exe = shutil.which("datasette")
    if not exe:
        return None
    port = free_port()
    proc = subprocess.Popen(
        [
            exe,
            "serve",
            str(path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--setting",
            "max_returned_rows",
            str(BIG * 4),
            "--setting",
            "sql_time_limit_ms",
            "60000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_http(port, "/-/versions.json")
    return proc, port


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def get(port: int, path: str, conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    own = conn is None
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        if own:
            c.close()


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))]


# ---------------------------------------------------------------- 1. function list vs datasette


def time_list(port: int, path: str, runs: int) -> tuple[list[float], list]:
    """Time to the last byte of the body (connect, request, server work, transfer), per run."""
    for _ in range(2):
        get(port, path)
    times, raw = [], b""
    for _ in range(runs):
        t0 = time.perf_counter()
        status, raw = get(port, path)
        times.append(time.perf_counter() - t0)
        assert status == 200, (status, raw[:200])
    return times, json.loads(raw)


def bench_list(path: Path, kb: dict, port: int, runs: int) -> dict:
    vid = kb["big_version"]
    ours, body = time_list(port, f"/api/versions/{vid}/functions", runs)
    out = {
        "rows": len(body),
        "kbtool_median_ms": statistics.median(ours) * 1000,
        "kbtool_p90_ms": pct(ours, 90) * 1000,
        "kbtool_bytes": len(json.dumps(body)),
    }
    ds = start_datasette(path)
    if ds is None:
        out["datasette"] = "not installed"
        return out
    proc, dport = ds
    try:
        q = urllib.parse.urlencode({"sql": SQL, "v": vid, "_shape": "array"})
        name = path.stem
        theirs, dbody = time_list(dport, f"/{name}.json?{q}", runs)
    finally:
        stop(proc)
    assert dbody == body, "datasette and kbtool returned different rows"
    out.update(
        datasette_median_ms=statistics.median(theirs) * 1000,
        datasette_p90_ms=pct(theirs, 90) * 1000,
        ratio_datasette_over_kbtool=statistics.median(theirs) / statistics.median(ours),
    )
    return out


# ---------------------------------------------------------------- 2. keep-alive latency


def keepalive_ms(port: int, path: str, requests: int) -> float:
    """Median ms per request on one reused connection (after 3 warm-ups)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        for _ in range(3):
            get(port, path, conn)
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            status, _ = get(port, path, conn)
            times.append(time.perf_counter() - t0)
            assert status == 200
        return statistics.median(times) * 1000
    finally:
        conn.close()


def bench_keepalive(path: Path, kb: dict, kbtool_port: int, requests: int) -> dict:
    url = "/api/provenance"  # no KB work: the round trip itself is what is measured
    out = {"requests": requests, "path": url}
    for mode in ("uvicorn", "before"):
        proc, port = start_variant(path, mode)
        try:
            out[f"{mode}_median_ms"] = keepalive_ms(port, url, requests)
        finally:
            stop(proc)
    out["kbtool_median_ms"] = keepalive_ms(kbtool_port, url, requests)
    return out


# ---------------------------------------------------------------- 3. concurrency

LOAD_CHILD = r"""
import http.client, json, sys, threading, time
port, seconds, clients = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
paths = json.loads(sys.argv[4])
lat, errors, lock = [], [], threading.Lock()
start = threading.Barrier(clients + 1)
def client(k):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    mine, errs, i = [], [], k
    start.wait()
    end = time.perf_counter() + seconds
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        p = paths[i % len(paths)]; i += 1
        try:
            conn.request("GET", p, headers={"Host": "127.0.0.1:%d" % port})
            r = conn.getresponse(); r.read()
            if r.status != 200:
                errs.append(r.status)
        except Exception as exc:
            errs.append(type(exc).__name__)
            conn.close(); conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine.append(time.perf_counter() - now)
    with lock:
        lat.extend(mine); errors.extend(errs)
ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
for t in ts: t.start()
t0 = time.perf_counter(); start.wait()
for t in ts: t.join()
wall = time.perf_counter() - t0
print(json.dumps({"latencies": lat, "errors": errors, "wall": wall}))
"""


def load(port: int, paths: list[str], seconds: float, clients: int) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_CHILD,
            str(port),
            str(seconds),
            str(clients),
            json.dumps(paths),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout)
    lat = r["latencies"]
    return {
        "requests": len(lat),
        "errors": len(r["errors"]),
        "error_kinds": sorted(set(map(str, r["errors"])))[:5],
        "rps": len(lat) / r["wall"],
        "p50_ms": pct(lat, 50) * 1000,
        "p99_ms": pct(lat, 99) * 1000,
        "max_ms": max(lat) * 1000,
    }


# ---------------------------------------------------------------- 4. the heatmap in chromium


def bench_browser(port: int, kb: dict, rounds: int = 5) -> dict:
    if not os.path.exists(CHROMIUM):
        return {"skipped": f"no {CHROMIUM}"}
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright not installed"}
    small, big = kb["real_version"], kb["big_version"]
    page_ms, driver_ms, draw_ms = [], [], []
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        pg = b.new_page(viewport={"width": 1600, "height": 1000})
        pg.goto(f"http://127.0.0.1:{port}/#v={small}")
        pg.wait_for_selector(f"body[data-ready='1'][data-version='{small}']", timeout=60_000)
        for _ in range(rounds):
            t0 = time.perf_counter()
            pg.click(f"#versions tr[data-vid='{big}']")
            pg.wait_for_function(
                f"() => window.kbMetrics && window.kbMetrics.version === {big}",
                timeout=60_000,
                polling="raf",
            )
            driver_ms.append((time.perf_counter() - t0) * 1000)
            m = pg.evaluate("window.kbMetrics")
            assert m["cells"] == kb["defined"], m
            page_ms.append(m["selectToDrawMs"])
            draw_ms.append(m["drawMs"])
            pg.click(f"#versions tr[data-vid='{small}']")
            pg.wait_for_function(
                f"() => window.kbMetrics && window.kbMetrics.version === {small}", timeout=60_000
            )
        pg.click(f"#versions tr[data-vid='{big}']")
        pg.wait_for_function(
            f"() => window.kbMetrics && window.kbMetrics.version === {big}", timeout=60_000
        )
        hover = pg.evaluate("""() => {
            const c = document.getElementById('heatmap'), r = c.getBoundingClientRect();
            const n = 2000, t0 = performance.now();
            for (let i = 0; i < n; i++) {
                const x = r.left + ((i * 37) % Math.floor(r.width)), y = r.top + ((i * 53) % Math.floor(r.height));
                c.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
            }
            return { events: n, ms_per_event: (performance.now() - t0) / n,
                     tooltip: document.getElementById('tooltip').textContent.length > 0,
                     cell: Number(c.dataset.cell), cols: Number(c.dataset.cols) };
        }""")
        b.close()
    return {
        "select_to_drawn_page_median_ms": statistics.median(page_ms),
        "select_to_drawn_page_max_ms": max(page_ms),
        "select_to_drawn_driver_median_ms": statistics.median(driver_ms),
        "draw_only_median_ms": statistics.median(draw_ms),
        "hover": hover,
        "rounds": rounds,
    }


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kb", type=Path, help="KB to build (if missing) and keep")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--keepalive", type=int, default=200, help="requests on one reused connection")
    ap.add_argument(
        "--smoke", action="store_true", help="tiny input, a few seconds, no browser, no targets"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if args.smoke:
        args.runs, args.seconds, args.clients, args.keepalive = 3, 0.5, 4, 20
    source = DEMO if args.smoke or not CORPUS.exists() else CORPUS
    big = SMOKE_BIG if args.smoke else BIG

    tmp = None
    if args.kb:
        path = args.kb.resolve()
    else:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "bench.db"
    try:
        if path.exists():
            kb = describe(path)
        else:
            print(f"building the benchmark KB at {path} from {source.name} ...", file=sys.stderr)
            kb = build_kb(path, source, big)
            kb.update(describe(path))
        kb["source"] = source.name
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        proc, port = start_kbtool(path)
        try:
            from kbtool.web.router import ENCODER

            results: dict = {
                "kb": kb,
                "cpus": os.cpu_count(),
                "json_encoder": ENCODER,
                "smoke": args.smoke,
                "load_average_before": os.getloadavg(),
            }
            results["functions"] = bench_list(path, kb, port, args.runs)
            results["keepalive"] = bench_keepalive(path, kb, port, args.keepalive)
            big_id = kb["big_version"]
            results["load_search"] = load(
                port,
                [f"/api/search?q={urllib.parse.quote(q)}" for q in SEARCHES],
                args.seconds,
                args.clients,
            )
            results["load_coverage"] = load(
                port, [f"/api/versions/{big_id}/coverage"], args.seconds, args.clients
            )
            results["browser"] = {"skipped": "--smoke"} if args.smoke else bench_browser(port, kb)
        finally:
            stop(proc)
        results["kb_unchanged"] = hashlib.sha256(path.read_bytes()).hexdigest() == before
    finally:
        if tmp is not None:
            tmp.cleanup()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results, args)
    return results


def report(r: dict, args) -> None:
    f = r["functions"]
    print(
        f"KB: {r['kb']['source']} ingested, plus a generated version {r['kb']['big_version']} of {f['rows']:,}"
        f" defined functions ({r['kb']['named']:,} named); {r['cpus']} CPUs (load average"
        f" {r['load_average_before'][0]:.1f} at start); JSON encoder {r['json_encoder']}; everything on 127.0.0.1"
        + ("; SMOKE RUN (tiny input, figures mean nothing)" if r["smoke"] else "")
    )
    target = "" if r["smoke"] else "   (target < 250 ms)"
    print(
        f"\n1. GET /api/versions/{{id}}/functions, {f['rows']:,} rows ({f['kbtool_bytes'] / 1e6:.1f} MB JSON), {args.runs} runs"
    )
    print(
        f"   kbtool serve   median {f['kbtool_median_ms']:7.1f} ms   p90 {f['kbtool_p90_ms']:7.1f} ms{target}"
    )
    if "datasette_median_ms" in f:
        print(
            f"   datasette      median {f['datasette_median_ms']:7.1f} ms   p90 {f['datasette_p90_ms']:7.1f} ms"
            f"   same rows; datasette/kbtool = {f['ratio_datasette_over_kbtool']:.2f}x"
        )
    else:
        print(f"   datasette {f.get('datasette')}")
    k = r["keepalive"]
    print(f"\n2. keep-alive: {k['requests']} sequential GET {k['path']} on one connection, median")
    print(f"   uvicorn binding the app itself (peer)          {k['uvicorn_median_ms']:7.2f} ms")
    print(f"   before: create_server socket, no TCP_NODELAY   {k['before_median_ms']:7.2f} ms")
    print(f"   kbtool serve now (IPPROTO_TCP + TCP_NODELAY)   {k['kbtool_median_ms']:7.2f} ms")
    print(f"\n3. {args.clients} concurrent clients x {args.seconds:g} s")
    for key, label in (
        ("load_search", "/api/search?q=..."),
        ("load_coverage", "/api/versions/{id}/coverage"),
    ):
        x = r[key]
        print(
            f"   {label:30} {x['rps']:8.1f} req/s  p50 {x['p50_ms']:7.1f} ms  p99 {x['p99_ms']:7.1f} ms"
            f"  errors {x['errors']} of {x['requests']:,}"
        )
    b = r["browser"]
    print(f"\n4. headless Chromium, heatmap of {f['rows']:,} cells")
    if "skipped" in b:
        print(f"   skipped: {b['skipped']}")
    else:
        print(
            f"   select -> drawn (page clock)   median {b['select_to_drawn_page_median_ms']:7.1f} ms"
            f"  max {b['select_to_drawn_page_max_ms']:7.1f} ms  (target < 1000 ms; fetch + parse + draw)"
        )
        print(
            f"   select -> drawn (driver clock) median {b['select_to_drawn_driver_median_ms']:7.1f} ms"
        )
        print(f"   canvas draw alone              median {b['draw_only_median_ms']:7.1f} ms")
        h = b["hover"]
        print(
            f"   hover: {h['ms_per_event']:.3f} ms per mousemove over {h['events']:,} events"
            f" ({h['cell']} px cells, {h['cols']} columns)"
        )
    print(f"\nKB file unchanged by the whole run: {r['kb_unchanged']}")


if __name__ == "__main__":
    main()
