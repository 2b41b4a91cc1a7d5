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

``--provider`` measures the provider pass instead (issue 31), on a stripped build with a named
twin (default: the largest sqlite of ~/.cache/kbtool-programs, built by benchmarks/programs.py;
``--smoke``: zstd 1.5.5 of the ground-truth corpus), against the local fake provider of
testkit/llm_server.py (real ``openai`` SDK, a hidden answer key with a realistic error rate):

    prompt     bytes and tokens per function (median, p90, max) and the total scaled to a
               2,000-function module: the facts-JSON prompt (kbtool-agents-1) and the code
               prompt (kbtool-agents-2)
    calib      wrong names written as a share of written names, and the share of right
               answers written, with the new calibration and without it (every verified answer
               written at min(model confidence, 0.85), as before); the calibration includes
               the name-conflict rule (one name claimed for two functions: both suggestions)
    resume     `kbtool agent` killed (SIGKILL) half way, then re-run: calls sent the second
               time against the prompts left without a stored answer
    cost       the pre-pass estimate (tokens, US$) against the tokens the fake provider counted:
               provider_b first pass (no token counter: kbtool's estimator), the resumed pass
               (calibrated on the tokens billed for its stored answers) and a provider_a
               first pass (anthropic's messages.count_tokens on 8 sample prompts); and the
               projection `kbtool agent`'s progress bar shows for the provider_b first pass
               after its first 8 answers, 5 % and 10 % of its calls (re-scaled by the
               provider's reported usage as answers arrive)

The prompt lines also compare kbtool's token estimate and the fake provider's counter with
OpenAI's real encodings (o200k_base, cl100k_base) when the optional ``bpe-openai`` package is
installed (it bundles them: no download).

Run:  python benchmarks/agent_pass.py --provider [--smoke] [--module PATH] [--cost]
      (``--cost``: the first passes and their estimates only, no resume measure)
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
    simulate,
)
from benchmarks.agents import pct as _pct2  # noqa: E402
from kbtool.agents.costs import estimate_tokens  # noqa: E402
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
        f"({_pct2(tot['written'], tot['cands'])})  exact {tot['exact']} "
        f"(precision {_pct2(tot['exact'], tot['written'])})  gate writes {tot['wrote']}, "
        f"rounds run <= {tot['rounds']}"
    )
    print(
        f"token P {100 * p:.1f}%  R {100 * rc:.1f}%  F1 {100 * f1:.1f}%   "
        f"conf>=0.8: {tot['hi']} names, {_pct2(tot['hi_ok'], tot['hi'])} exact   "
        f"agree with in-memory rounds {_pct2(tot['agree'], tot['written'])}"
    )
    print(
        f"time: agent pass {per_k:.1f} ms/1k functions   (peers, same run: kbtool ingest "
        f"{ingest_k:.1f} ms/1k functions; in-memory rounds, no KB, {sim_k:.1f} ms/1k)"
    )
    print("calibration   bin        n   mean conf   share right")
    for (lo, hi), (n, ok, sc) in zip(BINS, bins, strict=True):
        print(
            f"          [{lo:.1f},{min(hi, 1.0):.1f})  {n:5d}     "
            f"{(sc / n if n else 0):5.2f}      {_pct2(ok, n)}"
        )
    return tot


PROGRAMS = Path.home() / ".cache" / "kbtool-programs"
PROVIDER_MODULE = PROGRAMS / "sqlite-3.46.1.emcc.Os.stripped.wasm"
PROVIDER_SMOKE = CORPUS / "zstd-1.5.5.O2.stripped.wasm"
PRICE = (3.0, 15.0)


def share_pct(x: float) -> str:
    return f"{100 * x:+.1f} %" if x < 0 else f"{100 * x:.1f} %"


def _stats(values: list[int]) -> str:
    v = sorted(values)
    if not v:
        return "-"
    return (
        f"median {v[len(v) // 2]:,}  p90 {v[int(len(v) * 0.9)]:,}  max {v[-1]:,}  "
        f"per-2000 total {round(sum(v) * 2000 / len(v)):,}"
    )


def _truth(stripped_path: Path) -> dict[int, str]:
    from kbtool.wasm import analyze_module

    named = stripped_path.with_name(stripped_path.name.replace(".stripped.", ".named."))
    s = analyze_module(stripped_path.read_bytes()).functions
    n = analyze_module(named.read_bytes()).functions
    if len(s) != len(n) or any(a.body_hash != b.body_hash for a, b in zip(s, n, strict=True)):
        raise SystemExit(f"{stripped_path.name}: stripped and named twins differ by index")
    return {f.index: f.raw_name for f in n if not f.imported and f.raw_name}


def _fresh(path: Path, module: Path) -> int:
    from kbtool.services.analyze import analyze_version

    conn = open_rw(path)
    try:
        vid = ingest_file(conn, module, label=module.stem).version_id
        analyze_version(conn, vid)  # the data model: data labels in the C and the prompt
    finally:
        conn.close()
    return vid


def _env(srv) -> dict:
    import os

    return {
        **os.environ,
        "PROVIDER_B_API_KEY": "bench",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "bench-model",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def prompt_sizes(db: Path, vid: int) -> dict:
    from kbtool.agents import callers_of, context_from_facts, string_sharing
    from kbtool.agents.prompts import build_prompt, legacy_prompt
    from kbtool.services.agent_pass import StoredFacts
    from kbtool.services.agent_prompts import enrich_contexts

    conn = open_rw(db)
    try:
        facts = [StoredFacts.from_row(r) for r in queries.agent_rows(conn, vid)]
        names = {f.index: f.import_field for f in facts if f.imported and f.import_field}
        callers, sharing = callers_of(facts), string_sharing(facts)
        ctxs = [
            context_from_facts(
                facts, f.index, names, callers, stable_id=f.stable_id, sharing=sharing
            )
            for f in facts
            if not f.imported
        ]
        old = [legacy_prompt(c) for c in ctxs]
        t = time.perf_counter()
        enrich_contexts(conn, vid, ctxs)
        enrich_s = time.perf_counter() - t
        new = [build_prompt(c) for c in ctxs]
    finally:
        conn.close()
    with_c = sum(1 for c in ctxs if c.get("c_raw"))
    cut = sum(1 for p in new if "C lines" in p.dropped)
    print(
        f"prompt  functions {len(ctxs)}, with C {with_c}, C cut to fit {cut}; "
        f"reading C/data/comments {enrich_s:.1f} s"
    )
    print(f"  before bytes   {_stats([len(x.encode()) for x in old])}")
    print(f"  before tokens  {_stats([estimate_tokens(x) for x in old])}")
    print(f"  after  bytes   {_stats([p.bytes for p in new])}")
    print(f"  after  tokens  {_stats([p.tokens for p in new])}")
    reference_tokens(new)
    return {"functions": len(ctxs)}


def reference_tokens(prompts: list) -> None:
    """kbtool's estimate and the fake provider's count of the prompts against OpenAI's real
    encodings, when the optional ``bpe-openai`` package (encodings bundled, no download) is
    installed: how far each is from a real tokenizer."""
    try:
        import bpe_openai
    except ImportError:
        print("  (pip install bpe-openai to compare with OpenAI's o200k/cl100k encodings)")
        return
    from testkit.llm_server import count_tokens

    texts = [prompts[0].system] + [p.text for p in prompts] if prompts else []
    est = sum(p.tokens for p in prompts) + (estimate_tokens(texts[0]) if texts else 0)
    fake = sum(count_tokens(t) for t in texts)
    for enc in ("o200k_base", "cl100k_base"):
        e = bpe_openai.get_encoding(enc)
        real = sum(len(e.encode(t)) for t in texts)
        print(
            f"  {enc}: {real:,} tokens; kbtool's estimate {share_pct(est / max(1, real) - 1)} "
            f"off, the fake provider's counter {share_pct(fake / max(1, real) - 1)} off"
        )


def calibration(db: Path, vid: int, truth: dict[int, str]) -> dict:
    from kbtool.agents.costs import LIVE_MIN
    from kbtool.services.agent_pass import plan_agent_pass, run_agent_pass
    from testkit.llm_server import AnswerKey, FakeLLMServer

    key = AnswerKey(truth)
    live: dict = {}  # the progress bar's projection after LIVE_MIN answers, 5 % and 10 %
    with FakeLLMServer(key=key) as srv:
        conn = open_rw(db)
        try:
            plan = plan_agent_pass(
                conn, vid, "provider_b", True, 0, env=_env(srv), price=PRICE, concurrency=8
            )
            meter = plan.backend.meter

            def progress(stage: str, done: int, total: int | None) -> None:
                m = meter.to_dict()  # what `kbtool agent`'s progress bar shows
                if "first" not in live and m["calls"] >= LIVE_MIN:
                    live["first"] = m
                for share in (5, 10):
                    if share not in live and m["calls"] >= plan.estimated_calls * share / 100:
                        live[share] = m

            s = run_agent_pass(
                conn, vid, "provider_b", plan=plan, progress=progress, knowledge=False
            )
        finally:
            conn.close()
        billed = (srv.tokens_in, srv.tokens_out)
    llm = [d for d in s["details"] if d.get("source") == "llm"]
    right_answers = [d for d in llm if d.get("name") and d["name"] == truth.get(d["index"])]
    new_w = [d for d in llm if d["kind"] == "write"]
    # before: every answer the verifier accepted was written at min(model, 0.85) >= 0.5
    old_w = [d for d in llm if d["kind"] in ("write", "suggest")]

    def share(ws: list[dict]) -> tuple[float, float]:
        wrong = sum(1 for d in ws if d["name"] != truth.get(d["index"]))
        right = sum(1 for d in ws if d["name"] == truth.get(d["index"]))
        return (
            wrong / len(ws) if ws else 0.0,
            right / len(right_answers) if right_answers else 0.0,
        )

    kinds = [key.kind(i) for i in {d["index"] for d in llm}]
    print(
        f"calib   fake model: {kinds.count('right')} right, {kinds.count('wrong')} plausible "
        f"but wrong, {kinds.count('malformed')} malformed answers; {s['calls']} calls"
    )
    for label, ws in (("without calibration", old_w), ("with calibration   ", new_w)):
        wrong, right = share(ws)
        print(
            f"  {label}: {len(ws)} written, wrong {share_pct(wrong)} of written, "
            f"right answers written {share_pct(right)}"
        )
    est = s.get("estimate") or {}
    est_cost = (est.get("tokens_in", 0) * PRICE[0] + est.get("tokens_out", 0) * PRICE[1]) / 1e6
    real_cost = (billed[0] * PRICE[0] + billed[1] * PRICE[1]) / 1e6
    print(
        f"cost    estimate {est.get('tokens_in', 0):,} in / {est.get('tokens_out', 0):,} out "
        f"${est_cost:.4f}; fake provider counted {billed[0]:,} in / {billed[1]:,} out "
        f"${real_cost:.4f}: input {share_pct(est.get('tokens_in', 0) / max(1, billed[0]) - 1)} off, "
        f"cost {share_pct(est_cost / max(1e-9, real_cost) - 1)} off; meter ${s['estimated_cost_usd']:.4f}"
        f" [provider_b, tokens: {est.get('basis')}]"
    )
    for label, m in (
        ("after the first answers", live.get("first")),
        ("after 5 % of the calls", live.get(5)),
        ("after 10 % of the calls", live.get(10)),
    ):
        if not m:
            continue
        proj_cost = m["projected_cost_usd"] or 0.0
        print(
            f"cost    progress bar {label} ({m['calls']} calls): projected "
            f"{m['projected_tokens_in']:,} in / {m['projected_tokens_out']:,} out "
            f"${proj_cost:.4f}: input "
            f"{share_pct(m['projected_tokens_in'] / max(1, billed[0]) - 1)} off, output "
            f"{share_pct(m['projected_tokens_out'] / max(1, billed[1]) - 1)} off, cost "
            f"{share_pct(proj_cost / max(1e-9, real_cost) - 1)} off "
            f"[{m['projection_basis']}]"
        )
    return s


def cost_provider_a(db: Path, vid: int, truth: dict[int, str]) -> None:
    """The estimate of a first pass through the anthropic SDK, whose token counter
    (messages.count_tokens, answered by the fake with its own tokenizer) scales it."""
    import os

    from testkit.llm_server import AnswerKey, FakeLLMServer

    with FakeLLMServer(key=AnswerKey(truth)) as srv:
        env = {
            **os.environ,
            "PROVIDER_A_API_KEY": "bench",
            "PROVIDER_A_BASE_URL": srv.url,
            "PROVIDER_A_MODEL": "bench-claude",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        conn = open_rw(db)
        try:
            s = run_agent_pass(
                conn,
                vid,
                "provider_a",
                max_functions=0,
                env=env,
                price=PRICE,
                concurrency=8,
                knowledge=False,
            )
        finally:
            conn.close()
        billed, counted = srv.tokens_in, len(srv.count_requests)
    est = s["estimate"]
    print(
        f"cost    provider_a estimate {est['tokens_in']:,} in; fake provider counted "
        f"{billed:,} in over {s['calls']} calls: input "
        f"{share_pct(est['tokens_in'] / max(1, billed) - 1)} off "
        f"[tokens: {est['basis']}; {counted} counter requests]"
    )


def resume(db: Path, vid: int, truth: dict[int, str], full_calls: int) -> None:
    import os
    import signal
    import subprocess

    from testkit.llm_server import AnswerKey, FakeLLMServer

    cmd = [
        sys.executable,
        "-m",
        "kbtool.cli",
        "agent",
        str(vid),
        "--db",
        str(db),
        "--backend",
        "provider_b",
        "--max-functions",
        "0",
        "--json",
        "--concurrency",
        "4",
    ]
    with FakeLLMServer(key=AnswerKey(truth), delay=0.01) as srv:
        proc = subprocess.Popen(
            cmd, env=_env(srv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
        )
        t0 = time.monotonic()
        while len(srv.requests) < full_calls // 2 and proc.poll() is None:
            if time.monotonic() - t0 > 600:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        sent1 = len(srv.requests)
    conn = open_rw(db)
    try:
        stored = queries.agent_answer_counts(conn, vid)["answers"]
    finally:
        conn.close()
    with FakeLLMServer(key=AnswerKey(truth)) as srv:
        p = subprocess.run(cmd, env=_env(srv), capture_output=True, text=True, cwd=ROOT)
        sent2, billed2 = len(srv.requests), srv.tokens_in
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    print(
        f"resume  uninterrupted pass {full_calls} calls; killed after {sent1} sent, "
        f"{stored} answers stored; re-run sent {sent2} (unanswered: {full_calls - stored}) "
        f"{'OK' if sent2 == full_calls - stored else 'MISMATCH'}  pid {os.getpid()}"
    )
    import json

    est = json.loads(p.stdout).get("estimate") or {}
    print(
        f"cost    resumed pass estimate {est.get('tokens_in', 0):,} in; fake provider counted "
        f"{billed2:,} in: input {share_pct(est.get('tokens_in', 0) / max(1, billed2) - 1)} off "
        f"[tokens: {est.get('basis')}]"
    )


def provider_main(module: Path, cost_only: bool = False) -> int:
    if not module.exists():
        print(f"no module {module} (python benchmarks/programs.py builds the programs)")
        return 1
    truth = _truth(module)
    with tempfile.TemporaryDirectory(prefix="kbtool-agent-provider-") as tmp:
        a, b, c = Path(tmp) / "a.db", Path(tmp) / "b.db", Path(tmp) / "c.db"
        vid = _fresh(a, module)
        _fresh(b, module)
        _fresh(c, module)
        print(f"== {module.name}: {len(truth)} named functions")
        prompt_sizes(a, vid)
        s = calibration(a, vid, truth)
        if not cost_only:
            resume(b, vid, truth, s["calls"])
        cost_provider_a(c, vid, truth)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="one small build, one round")
    ap.add_argument(
        "--provider",
        action="store_true",
        help="the provider pass against the local fake provider (issue 31)",
    )
    ap.add_argument("--module", type=Path, default=None)
    ap.add_argument("--cost", action="store_true", help="with --provider: skip the resume measure")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--split", choices=("cal", "held", "all"), default="held")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    if args.provider:
        module = args.module or (PROVIDER_SMOKE if args.smoke else PROVIDER_MODULE)
        return provider_main(module, cost_only=args.cost)
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
