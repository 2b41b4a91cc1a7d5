"""CLI hardening cases for the fuzz harness (issue #24): output paths, signals, full disk,
huge and endless inputs, run against a scratch demo KB in real subprocesses.

A failure is: a traceback or a multi-line error, the KB's bytes changing, an output left
truncated (neither the old content nor a complete new file), a temporary left behind by a
writer that was not SIGKILLed, a planted link written through, or a worker process still
running after its parent ended.

    python -m benchmarks.fuzz_cli [--cases 60] [--seed 24]    # also run by benchmarks.fuzz
    python -m benchmarks.fuzz_cli --smoke                      # a few cases
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "kbtool.cli"]
WRITERS = [
    ("export", "1", "-o"),
    ("export", "1", "--wasm"),
    ("code", "1", "--all", "-o"),
    ("code", "1", "--all", "--wasm", "-o"),
]
OLD = "the old content\n"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _run(
    args: list[str], cwd: Path, limit: int | None = None, env: dict | None = None, stdin=None
) -> subprocess.CompletedProcess:
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    e = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    return subprocess.run(
        CLI + args,
        cwd=cwd,
        capture_output=True,
        timeout=600,
        env=e,
        stdin=stdin,
        preexec_fn=pre if limit is not None else None,
    )


def _clean_error(r: subprocess.CompletedProcess) -> str | None:
    err = r.stderr.decode("utf-8", "replace").strip()
    if "Traceback" in err or (r.returncode == 1 and len(err.splitlines()) != 1):
        return f"rc {r.returncode}: {err[-300:]}"
    return None


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                out.update(
                    int(x) for x in Path(f"/proc/{pid}/task/{t}/children").read_text().split()
                )
            except OSError:
                pass
    except OSError:
        pass
    return out


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def case_output_path(kb: Path, work: Path, rng: random.Random) -> str | None:
    writer = rng.choice(WRITERS)
    how = rng.choice(["same", "relative", "symlink", "hardlink", "-wal", "-shm", "database"])
    d = Path(tempfile.mkdtemp(dir=work))
    target = d / "t"
    if how == "same":
        target = kb
    elif how == "relative":
        target = Path(os.path.relpath(kb, d))
    elif how == "symlink":
        target.symlink_to(kb)
    elif how == "hardlink":
        os.link(kb, target)
    elif how == "database":
        sqlite3.connect(target).execute("create table t(x)").connection.commit()
    else:
        target = kb.with_name(kb.name + how)
        target.touch()
    before, other = _sha(kb), _sha(target) if how == "database" else None
    r = _run(["--db", str(kb), *writer, str(target)], cwd=d)
    if (bad := _clean_error(r)) or r.returncode != 1:
        return f"output {how} {writer}: {bad or 'rc ' + str(r.returncode)}"
    if _sha(kb) != before or (other is not None and _sha(target) != other):
        return f"output {how} {writer}: a database changed"
    return None


def case_full_disk(kb: Path, work: Path, rng: random.Random) -> str | None:
    writer = rng.choice(WRITERS)
    d = Path(tempfile.mkdtemp(dir=work))
    out = d / "out"
    out.write_text(OLD)
    limit = rng.choice([1, 4096, 40_000, 200_000, 1_000_000])
    r = _run(["--db", str(kb), *writer, str(out)], cwd=d, limit=limit)
    if bad := _clean_error(r):
        return f"full disk {limit} {writer}: {bad}"
    if r.returncode == 1 and out.read_text(errors="replace") != OLD:
        return f"full disk {limit} {writer}: old file changed on failure"
    if sorted(p.name for p in d.iterdir()) != ["out"]:
        return f"full disk {limit} {writer}: temporaries left: {sorted(os.listdir(d))}"
    return None


def case_planted_link(kb: Path, work: Path, rng: random.Random) -> str | None:
    writer = rng.choice(WRITERS)
    d = Path(tempfile.mkdtemp(dir=work))
    victim = d / "victim"
    victim.write_text("precious")
    for name in (
        ".out.kbtool-tmp",
        ".out.tmp",
        "out.tmp",
        f".out.kbtool-{rng.randint(2, 99999)}-x.tmp",
    ):
        (d / name).symlink_to(victim)
    r = _run(["--db", str(kb), *writer, "out"], cwd=d)
    if (bad := _clean_error(r)) or r.returncode != 0:
        return f"planted link {writer}: {bad or r.returncode}"
    if victim.read_text() != "precious":
        return f"planted link {writer}: written through"
    return None


def case_signal(kb: Path, work: Path, rng: random.Random) -> str | None:
    sig = rng.choice([signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
    to_file = rng.random() < 0.5
    d = Path(tempfile.mkdtemp(dir=work))
    out = d / "out.c"
    out.write_text(OLD)
    args = CLI + ["--db", str(kb), "code", "1", "--all"] + (["-o", str(out)] if to_file else [])
    p = subprocess.Popen(
        args,
        cwd=d,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )
    seen: set[int] = set()
    if sig == signal.SIGINT:  # Ctrl-C while the interpreter still imports is Python's own
        start = time.monotonic() + 30  # traceback (before kbtool runs): wait for the pool
        while not _children(p.pid) and p.poll() is None and time.monotonic() < start:
            time.sleep(0.01)
    end = time.monotonic() + rng.uniform(0.05, 1.5)
    while time.monotonic() < end and p.poll() is None:
        seen |= _children(p.pid)
        time.sleep(0.01)
    p.send_signal(sig)
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return f"signal {sig.name} ({'file' if to_file else 'pipe'}): the command did not stop"
    finally:
        p.stdout.close()
        err = p.stderr.read().decode("utf-8", "replace")
        p.stderr.close()
    if "Traceback" in err:
        return f"signal {sig.name}: traceback {err[-300:]}"
    deadline = time.monotonic() + 30
    while any(_running(w) for w in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in seen if _running(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    if left:
        return f"signal {sig.name}: {len(left)} worker(s) outlived their parent"
    text = out.read_text(errors="replace")
    if text != OLD and not text.startswith("/* kbtool:"):
        return f"signal {sig.name}: output neither old nor new"
    temps = [n for n in os.listdir(d) if n != "out.c"]
    if temps and sig != signal.SIGKILL:
        return f"signal {sig.name}: temporaries left: {temps}"
    return None


def case_huge_input(kb: Path, work: Path, rng: random.Random) -> str | None:
    d = Path(tempfile.mkdtemp(dir=work))
    src = rng.choice(["/dev/zero", "/dev/urandom", "random-file", "yes"])
    cmd = rng.choice(
        [
            ["ingest", "IN", "--label", "h"],
            ["oracle", "add", "IN"],
            ["import-names", "IN"],
            ["ingest", "WASM", "--label", "h", "--force", "--js", "IN"],
        ]
    )
    env = {
        k: str(rng.choice([1, 1000, 1 << 20]))
        for k in ("KBTOOL_MAX_WASM_BYTES", "KBTOOL_MAX_JS_BYTES", "KBTOOL_MAX_NAMES_BYTES")
    }
    stdin = None
    feeder = None
    path = src
    if src == "random-file":
        path = str(d / "in")
        Path(path).write_bytes(rng.randbytes(rng.choice([10, 5000, 2 << 20])))
    elif src == "yes":
        feeder = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
        stdin, path = feeder.stdout, "/dev/stdin"
    wasm = d / "m.wasm"
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro

    ro = open_ro(kb)
    try:
        wasm.write_bytes(queries.module_bytes(ro, 1) or b"")
    finally:
        ro.close()
    args = [str(wasm) if a == "WASM" else path if a == "IN" else a for a in cmd]
    try:
        r = _run(["--db", str(kb), *args], cwd=d, env=env, stdin=stdin)
    finally:
        if feeder is not None:
            feeder.kill()
            feeder.wait()
            feeder.stdout.close()
    if bad := _clean_error(r):
        return f"input {src} {cmd[0]}: {bad}"
    return None


CASES = [case_output_path, case_full_disk, case_planted_link, case_signal, case_huge_input]


def run(cases: int, seed: int = 24) -> dict:
    rng = random.Random(seed)
    failures: list[str] = []
    counts: dict[str, int] = {}
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="kbtool-fuzz-cli-") as tmp:
        work = Path(tmp)
        kb = work / "kb" / "kbtool.db"
        kb.parent.mkdir()
        r = _run(["--db", str(kb), "demo"], cwd=work)
        if r.returncode != 0:
            return {"failures": [f"demo KB: {r.stderr.decode()[-300:]}"], "stats": {}, "seconds": 0}
        for i in range(cases):
            case = CASES[i % len(CASES)] if i < len(CASES) else rng.choice(CASES)
            counts[case.__name__] = counts.get(case.__name__, 0) + 1
            try:
                msg = case(kb, work, rng)
            except Exception as exc:  # noqa: BLE001 - a harness failure is a failure too
                msg = f"{case.__name__}: {type(exc).__name__}: {exc}"
            if msg:
                failures.append(msg)
    return {"failures": failures, "stats": counts, "seconds": round(time.time() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--smoke", action="store_true", help="one case of each kind")
    a = ap.parse_args(argv)
    res = run(len(CASES) if a.smoke else a.cases, a.seed)
    print(f"{res['seconds']} s; " + ", ".join(f"{k} {v}" for k, v in sorted(res["stats"].items())))
    for f in res["failures"]:
        print("  FAIL", f)
    print(f"{len(res['failures'])} failures")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
