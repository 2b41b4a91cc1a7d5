"""The offline agent pass through the service (kbtool.services.agent_pass) on ground truth.

Each stripped zstd build of ../shared/corpus/gt is ingested ALONE into a fresh KB (the
``.stripped.`` file: no name section, so only import fields and, in ``.exports`` builds,
export names are in the KB), then ``run_agent_pass(backend="offline")`` names what it can
through the gate. The names the KB ends up with (provenance ``agent``) are scored against
the named twin by index (same function count and body hash at every index, checked).

    written    functions holding an agent name after the pass
    exact      agent names equal to the true name (precision)
    tokP/R/F1  token precision/recall/F1 (names split on _ . and camelCase, lowercased)
    >=0.8      agent names at confidence >= 0.8 and the share exactly right
    ms/1k      wall ms per 1,000 candidate functions of the pass (contexts from stored facts,
               propose, verify, gate writes, feed events), next to two peers measured in the
               same run: ``kbtool ingest`` of the same file and the pure in-memory rounds of
               benchmarks/agents.py (no KB) per 1,000 functions
    agree      share of the service's names equal to the in-memory simulation's (same rules)

The calibration table was fitted on zstd 1.5.2/1.5.5 (benchmarks/agents.py --calibrate); the
default split is the held-out builds.

Run:  python benchmarks/agent_pass.py [--smoke] [--rounds N] [--split cal|held|all]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.agents import (  # noqa: E402
    BINS,
    CALIBRATION_SPLIT,
    CORPUS,
    HELD_OUT_SPLIT,
    SMOKE_SPLIT,
    load_pair,
    pct,
    simulate,
)
from kbtool.agents.tokens import token_scores  # noqa: E402
from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services.agent_pass import run_agent_pass  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402

OFFLINE_ENV = {"PATH": ""}  # offline needs nothing; keeps a provider key from mattering


def measure(stem: str, corpus: Path, rounds: int, workdir: Path) -> dict:
    stripped, truth, _ = load_pair(stem, corpus)
    conn = open_rw(workdir / f"{stem}.db")
    try:
        t = time.perf_counter()
        res = ingest_file(conn, corpus / f"{stem}.stripped.wasm", label=stem)
        ingest_s = time.perf_counter() - t
        vid = res.version_id
        names_before = {
            f["index"] for f in queries.list_functions(conn, vid) if f["name"] is not None
        }
        leaked = [i for i in names_before if truth.get(i) and i not in _exported(stripped)]
        if leaked:
            raise SystemExit(f"{stem}: {len(leaked)} names in the KB before the pass")
        t = time.perf_counter()
        s = run_agent_pass(conn, vid, "offline", rounds=rounds, env=OFFLINE_ENV)
        pass_s = time.perf_counter() - t
        final = {
            f["index"]: (f["name"], f["confidence"])
            for f in queries.list_functions(conn, vid)
            if f["provenance"] == "agent"
        }
    finally:
        conn.close()
    sim, sim_s, sim_n = simulate(stripped, truth, rounds)
    agree = sum(1 for i, (n, _c) in final.items() if sim.get(i, (None,))[0] == n)
    return {
        "stem": stem,
        "final": final,
        "truth": truth,
        "summary": s,
        "pass_s": pass_s,
        "ingest_s": ingest_s,
        "sim_s": sim_s,
        "sim_n": sim_n,
        "n_all": len(stripped.functions),
        "agree": agree,
        "sim_written": len(sim),
    }


def _exported(stripped) -> set[int]:
    return {f.index for f in stripped.functions if f.export_names}


def report(label: str, runs: list[dict]) -> dict:
    tot = dict(cands=0, written=0, exact=0, hit=0, gt=0, tt=0, hi=0, hi_ok=0, agree=0,
               pass_s=0.0, ingest_s=0.0, sim_s=0.0, sim_n=0, n_all=0, wrote=0, rounds=0)  # fmt: skip
    bins = [[0, 0, 0.0] for _ in BINS]
    for r in runs:
        s = r["summary"]
        tot["cands"] += s["considered"]
        tot["wrote"] += s["written"]
        tot["rounds"] = max(tot["rounds"], s["rounds_run"])
        for k in ("pass_s", "ingest_s", "sim_s", "sim_n", "n_all", "agree"):
            tot[k] += r[k]
        for idx, (name, conf) in r["final"].items():
            t = r["truth"].get(idx, "")
            ok = name == t
            h, g, tt = token_scores(name, t)
            tot["written"] += 1
            tot["exact"] += ok
            tot["hit"] += h
            tot["gt"] += g
            tot["tt"] += tt
            if conf >= 0.8:
                tot["hi"] += 1
                tot["hi_ok"] += ok
            for b, (lo, hi) in enumerate(BINS):
                if lo <= conf < hi:
                    bins[b][0] += 1
                    bins[b][1] += ok
                    bins[b][2] += conf
    p = tot["hit"] / tot["gt"] if tot["gt"] else 0.0
    rc = tot["hit"] / tot["tt"] if tot["tt"] else 0.0
    f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
    per_k = 1e6 * tot["pass_s"] / max(1, tot["cands"])
    ingest_k = 1e6 * tot["ingest_s"] / max(1, tot["n_all"])
    sim_k = 1e6 * tot["sim_s"] / max(1, tot["sim_n"])
    print(f"== {label}: {', '.join(r['stem'] for r in runs)}")
    print(
        f"candidates {tot['cands']}  agent names {tot['written']} "
        f"({pct(tot['written'], tot['cands'])})  exact {tot['exact']} "
        f"(precision {pct(tot['exact'], tot['written'])})  gate writes {tot['wrote']}, "
        f"rounds run <= {tot['rounds']}"
    )
    print(
        f"token P {100 * p:.1f}%  R {100 * rc:.1f}%  F1 {100 * f1:.1f}%   "
        f"conf>=0.8: {tot['hi']} names, {pct(tot['hi_ok'], tot['hi'])} exact   "
        f"agree with in-memory rounds {pct(tot['agree'], tot['written'])}"
    )
    print(
        f"time: agent pass {per_k:.1f} ms/1k functions   (peers, same run: kbtool ingest "
        f"{ingest_k:.1f} ms/1k functions; in-memory rounds, no KB, {sim_k:.1f} ms/1k)"
    )
    print("calibration   bin        n   mean conf   share right")
    for (lo, hi), (n, ok, sc) in zip(BINS, bins, strict=True):
        print(
            f"          [{lo:.1f},{min(hi, 1.0):.1f})  {n:5d}     "
            f"{(sc / n if n else 0):5.2f}      {pct(ok, n)}"
        )
    return tot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="one small build, one round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--split", choices=("cal", "held", "all"), default="held")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    if args.smoke:
        stems, rounds = SMOKE_SPLIT, 1
    else:
        stems = {"cal": CALIBRATION_SPLIT, "held": HELD_OUT_SPLIT,
                 "all": CALIBRATION_SPLIT + HELD_OUT_SPLIT}[args.split]  # fmt: skip
        rounds = args.rounds
    stems = [s for s in stems if (args.corpus / f"{s}.stripped.wasm").exists()]
    if not stems:
        print(f"no ground-truth builds under {args.corpus}")
        return 1
    with tempfile.TemporaryDirectory(prefix="kbtool-agent-pass-") as tmp:
        runs = [measure(s, args.corpus, rounds, Path(tmp)) for s in stems]
    report(f"offline pass through the service, rounds={rounds}", runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
