"""Accuracy, calibration and speed of the offline agent (kbtool.agents) on ground truth.

For each stripped zstd build in ../shared/corpus/gt its named twin gives the true name of
every function by index (checked: same function count and the same body hash at every index).
Contexts come from ``kbtool.wasm.analyze_module`` facts alone (no KB). Known at round 1:
import fields and, in ``.exports`` builds, export names (those functions are already named by
their export and are not scored). Each round proposes for the functions not yet named (or
named below 0.5 by an earlier round), verifies, and "writes" accepted names, which later
rounds see as callee/caller names (the gate's agent rule: overwrite only when strictly higher).

Splits: the calibration table (kbtool/agents/calibration.json) is built with ``--calibrate``
on CALIBRATION_SPLIT only; the figures reported by default are on HELD_OUT_SPLIT.

    written    names written (accepted by the verifier)
    exact      written names equal to the true name
    tokP/R/F1  token precision/recall/F1 over written names (split on _ . and camelCase)
    >=0.8      names written with confidence >= 0.8 and the share exactly right
    ms/1k      wall ms per 1,000 functions for context building + propose + verify, next to
               analyze_module (the peer step measured in the same run) per 1,000 functions

Run:  python benchmarks/agents.py [--smoke] [--rounds N] [--calibrate] [--split cal|held|all]
      python benchmarks/agents.py --provider-check   (provider_b through a local canned server)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/http.py would shadow the stdlib http package the fake server needs
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.agents import calibration as cal  # noqa: E402
from kbtool.agents.context import (  # noqa: E402
    callers_of,
    context_from_facts,
    string_sharing,
)
from kbtool.agents.offline import offline_candidates, propose_offline  # noqa: E402
from kbtool.agents.rounds import run_rounds  # noqa: E402
from kbtool.agents.tokens import token_scores  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "gt"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/gt")
CALIBRATION_SPLIT = [
    "zstd-1.5.2.O2",
    "zstd-1.5.2.O2.exports",
    "zstd-1.5.5.O2",
    "zstd-1.5.5.O2.exports",
]
HELD_OUT_SPLIT = [
    "zstd-1.5.6.O2",
    "zstd-1.5.6.O2.exports",
    "zstd-1.5.6.Os",
    "zstd-1.5.7.O2",
    "zstd-1.5.7.O2.exports",
]
SMOKE_SPLIT = ["zstd-1.5.6.O2.exports"]
# benchmarks/programs.py builds these (named + stripped twins, clang wasm32-wasi) into
# ~/.cache/kbtool-programs; a stem present there joins its split, absent ones are skipped.
PROGRAMS = Path(os.environ.get("KBTOOL_PROGRAMS") or Path.home() / ".cache" / "kbtool-programs")
CALIBRATION_PROGRAMS = ["lua-5.3.6.clang.O2", "sqlite-3.45.3.clang.O2", "brotli-1.1.0.clang.O2"]
HELD_OUT_PROGRAMS = [
    "lua-5.4.6.clang.O2",
    "sqlite-3.46.1.clang.O2",
    "libyaml-0.1.7.clang.O2",
    "lz4-1.9.4.clang.O2",
    "zstd-1.5.6.clang.O2",
]


def _programs(stems):
    return [s for s in stems if (PROGRAMS / f"{s}.named.wasm").exists()]


def _dir(stem: str, corpus: Path) -> Path:
    return PROGRAMS if (PROGRAMS / f"{stem}.named.wasm").exists() and ".clang." in stem else corpus


BINS = [(0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)]


def load_pair(stem: str, corpus: Path):
    from kbtool.wasm import analyze_module

    corpus = _dir(stem, corpus)
    t = time.perf_counter()
    stripped = analyze_module((corpus / f"{stem}.stripped.wasm").read_bytes())
    peer = time.perf_counter() - t
    named = analyze_module((corpus / f"{stem}.named.wasm").read_bytes())
    s, n = stripped.functions, named.functions
    if len(s) != len(n) or any(a.body_hash != b.body_hash for a, b in zip(s, n, strict=True)):
        raise SystemExit(f"{stem}: stripped and named twins differ by index")
    truth = {f.index: f.raw_name for f in n if not f.imported and f.raw_name}
    return stripped, truth, peer


class _CalibratingOffline:
    """The offline backend with an explicit table, recording every candidate per rule."""

    name = backend = "offline"
    model = None

    def __init__(self, truth, table=None, collect=None):
        self.truth, self.table, self.collect = truth, table, collect

    def propose(self, ctx, taken):
        if self.collect is not None:
            for _src, c in offline_candidates(ctx):
                entry = self.collect.setdefault(c.rule, [0, 0])
                entry[1] += 1
                entry[0] += int(c.name == self.truth.get(ctx["index"]))
        return propose_offline(ctx, taken, table=self.table)


def simulate(stripped, truth, rounds: int, table=None, collect=None):
    """Offline pass over every unnamed function through ``kbtool.agents.run_rounds`` with a
    dict standing in for the gate's agent rule; return (written {index: (name, conf, rule)},
    seconds, functions scored)."""
    fns = stripped.functions
    names: dict[int, str] = {}
    for f in fns:
        if f.imported and f.import_field:
            names[f.index] = f.import_field
        elif f.export_names:
            names[f.index] = f.export_names[0]
    written: dict[int, tuple[str, float, str]] = {}

    def write(p):
        prev = written.get(p.index)
        if prev and p.confidence <= prev[1]:
            return False, "confidence not strictly higher"
        written[p.index] = (p.name, p.confidence, p.rule or "")
        return True, "written"

    t = time.perf_counter()
    callers = callers_of(fns)
    sharing = string_sharing(fns)
    todo = [f.index for f in fns if f.index not in names and not f.imported]
    ctxs = [context_from_facts(fns, i, names, callers, sharing=sharing) for i in todo]
    backend = _CalibratingOffline(truth, table, collect)
    run_rounds(backend, ctxs, set(names.values()), write, rounds=rounds, concurrency=1)
    return written, time.perf_counter() - t, len(todo)


def score(results):
    tot = {
        "functions": 0,
        "written": 0,
        "exact": 0,
        "hit": 0,
        "gt": 0,
        "tt": 0,
        "hi": 0,
        "hi_ok": 0,
        "secs": 0.0,
        "peer": 0.0,
        "n_all": 0,
    }
    bins = [[0, 0, 0.0] for _ in BINS]
    rules: dict[str, list[int]] = {}
    for _stem, written, truth, secs, peer, n_scored, n_all in results:
        tot["functions"] += n_scored
        tot["secs"] += secs
        tot["peer"] += peer
        tot["n_all"] += n_all
        for idx, (name, conf, rule) in written.items():
            t = truth.get(idx, "")
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
            r = rules.setdefault(rule, [0, 0])
            r[0] += 1
            r[1] += ok
    return tot, bins, rules


def pct(a, b):
    return f"{100.0 * a / b:5.1f}%" if b else "    -"


def report(label, results):
    tot, bins, rules = score(results)
    p = tot["hit"] / tot["gt"] if tot["gt"] else 0.0
    r = tot["hit"] / tot["tt"] if tot["tt"] else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    per_k = 1000.0 * tot["secs"] / max(1, tot["functions"]) * 1000
    peer_k = 1000.0 * tot["peer"] / max(1, tot["n_all"]) * 1000
    print(f"== {label}: {', '.join(x[0] for x in results)}")
    print(
        f"scored functions {tot['functions']}  written {tot['written']} "
        f"({pct(tot['written'], tot['functions'])})  exact {tot['exact']} "
        f"(precision {pct(tot['exact'], tot['written'])})"
    )
    print(
        f"token P {100 * p:.1f}%  R {100 * r:.1f}%  F1 {100 * f1:.1f}%   "
        f"conf>=0.8: {tot['hi']} written, {pct(tot['hi_ok'], tot['hi'])} exact"
    )
    print(
        f"time: agent {per_k:.1f} ms/1k functions   (peer: analyze_module {peer_k:.1f} "
        f"ms/1k functions, same run)"
    )
    print("calibration   bin        n   mean conf   share right")
    for (lo, hi), (n, ok, s) in zip(BINS, bins, strict=True):
        print(
            f"          [{lo:.1f},{min(hi, 1.0):.1f})  {n:5d}     "
            f"{(s / n if n else 0):5.2f}      {pct(ok, n)}"
        )
    floor = [
        (ok, conf >= 0.5)
        for _s, written, truth, *_ in results
        for idx, (name, conf, _r) in written.items()
        for ok in [name == truth.get(idx, "")]
    ]
    hi = [ok for ok, above in floor if above]
    lo = [ok for ok, above in floor if not above]
    print(
        f"write floor 0.5: {len(hi)} written, {pct(sum(hi), len(hi))} exact; "
        f"{len(lo)} kept as suggestions, {pct(sum(lo), len(lo))} exact"
    )
    print("per rule: " + "  ".join(f"{k or '-'} {v[1]}/{v[0]}" for k, v in sorted(rules.items())))
    return tot, bins


def provider_check(n: int = 4) -> int:
    """provider_b end to end through the real openai SDK against a local canned server."""
    import os

    from kbtool.agents.backends import resolve_backend
    from kbtool.agents.rounds import run_round
    from testkit.llm_server import FakeLLMServer

    stripped, truth, _ = load_pair(SMOKE_SPLIT[0], CORPUS)
    fns = stripped.functions
    names = {f.index: f.import_field for f in fns if f.imported and f.import_field}
    callers = callers_of(fns)
    picked = [f for f in fns if not f.imported and not f.export_names and f.strings][:n]
    ctxs = [context_from_facts(fns, f.index, names, callers) for f in picked]
    with FakeLLMServer(script=["canned"] * len(ctxs)) as srv:
        env = {"PROVIDER_B_API_KEY": "test-key", "PROVIDER_B_BASE_URL": srv.url + "/v1"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            backend = resolve_backend("provider_b")
            reviewed = run_round(backend, ctxs, set(names.values()), concurrency=2)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        print(
            f"provider_b via fake server at {srv.url} (CANNED answers, plumbing only): "
            f"{len(srv.requests)} requests"
        )
    for rv in reviewed:
        p = rv.proposal
        print(
            f"  func {p.index}: {p.name} conf={p.confidence} backend={p.backend} "
            f"model={p.model} verdict={rv.verdict.code} (truth {truth.get(p.index)})"
        )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one small pair")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--split", choices=["cal", "held", "all"], default="held")
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="rebuild kbtool/agents/calibration.json from the calibration split",
    )
    ap.add_argument("--provider-check", action="store_true")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    if args.provider_check:
        return provider_check()
    if args.calibrate:
        counts: dict[str, list[int]] = {}
        table = None
        for _ in range(2):  # the second pass sees names written with the first table
            counts = {}
            for stem in CALIBRATION_SPLIT + _programs(CALIBRATION_PROGRAMS):
                stripped, truth, _ = load_pair(stem, args.corpus)
                simulate(stripped, truth, args.rounds, table=table, collect=counts)
            table = cal.build_table(
                {k: (v[0], v[1]) for k, v in counts.items()},
                "benchmarks/agents.py --calibrate on "
                + ", ".join(CALIBRATION_SPLIT + _programs(CALIBRATION_PROGRAMS)),
            )
        out = ROOT / "kbtool" / "agents" / cal.TABLE_FILE
        out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(
            f"wrote {out}: "
            + ", ".join(
                f"{k} {v['right']}/{v['n']}->{v['confidence']}" for k, v in table["rules"].items()
            )
        )
        return 0
    stems = (
        SMOKE_SPLIT
        if args.smoke
        else {
            "cal": CALIBRATION_SPLIT + _programs(CALIBRATION_PROGRAMS),
            "held": HELD_OUT_SPLIT + _programs(HELD_OUT_PROGRAMS),
            "all": CALIBRATION_SPLIT
            + HELD_OUT_SPLIT
            + _programs(CALIBRATION_PROGRAMS + HELD_OUT_PROGRAMS),
        }[args.split]
    )
    results = []
    for stem in stems:
        stripped, truth, peer = load_pair(stem, args.corpus)
        written, secs, n_scored = simulate(stripped, truth, 1 if args.smoke else args.rounds)
        results.append((stem, written, truth, secs, peer, n_scored, len(stripped.functions)))
    label = (
        "smoke"
        if args.smoke
        else {
            "cal": "CALIBRATION split (tuned on)",
            "held": "HELD-OUT split (not tuned on)",
            "all": "all",
        }[args.split]
    )
    report(label, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
