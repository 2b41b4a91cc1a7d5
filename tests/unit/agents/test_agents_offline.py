"""Offline proposer: specialist families, heuristics, calibrated confidences, determinism."""

from __future__ import annotations

from kbtool.agents import OfflineBackend, callers_of, context_from_facts, run_round, string_sharing
from kbtool.agents.calibration import PRIOR, build_table, load_table, rule_confidence, smoothed
from kbtool.agents.offline import offline_candidates, propose_offline
from kbtool.agents.specialist import import_wrapper, string_tags, thunks
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
THIN = {
    "instr_count": 6,
    "call_indirect": 0,
    "loops": 0,
    "strings": [],
    "mem_ops": {"loads": 0, "stores": 0},
}


def test_string_tags_exact_and_prefix():
    ctx = {
        "index": 4,
        "strings": [
            "png_read_chunk",
            "readHeader(): short read",
            "inflate_fast: bad code",
            "Error",
            "%s: invalid argument",
        ],
    }
    got = [(c.rule, c.name) for c in string_tags(ctx)]
    assert got == [
        ("string_tag.exact", "png_read_chunk"),
        ("string_tag.prefix", "readHeader"),
        ("string_tag.prefix", "inflate_fast"),
    ]


def test_string_naming_a_callee_or_shared_is_not_the_function():
    ctx = {
        "index": 4,
        "strings": ["ZSTD_compressBegin", "shared_name"],
        "callees": [{"index": 9, "name": "ZSTD_compressBegin", "import": None}],
        "string_sharing": {"ZSTD_compressBegin": 1, "shared_name": 7},
    }
    assert string_tags(ctx) == []


def test_import_wrapper_families():
    wasi = {
        **THIN,
        "index": 3,
        "callees": [{"index": 0, "name": "fd_write", "import": "wasi_snapshot_preview1.fd_write"}],
    }
    c = import_wrapper(wasi)
    assert (c.rule, c.name) == ("import_wrapper.wasi", "__wasi_fd_write")
    env = {**wasi, "callees": [{"index": 0, "name": None, "import": "env.emscripten_sleep"}]}
    assert import_wrapper(env).rule == "import_wrapper.other"
    fat = {**wasi, "instr_count": 400}
    assert import_wrapper(fat) is None
    two = {**wasi, "callees": wasi["callees"] * 2}
    assert import_wrapper(two) is None


def test_thunks_from_named_callee_and_thin_caller():
    ctx = {
        **THIN,
        "index": 5,
        "callees": [{"index": 6, "name": "decode_block_internal", "import": None}],
    }
    assert [(c.rule, c.name) for c in thunks(ctx)] == [("thunk.strip_suffix", "decode_block")]
    impl = {
        "index": 6,
        "instr_count": 300,
        "callees": [],
        "callers": [{"index": 5, "name": "decode_block", "instr_count": 6, "calls": 1}],
    }
    assert [(c.rule, c.name) for c in thunks(impl)] == [
        ("thunk.caller_internal", "decode_block_internal")
    ]


def test_calibration_is_data_driven():
    assert smoothed(0, 0) == PRIOR
    assert smoothed(28, 28) > 0.85 and smoothed(0, 20) < 0.1
    assert smoothed(3, 3) < 0.8  # three hits are not certainty
    table = build_table({"x.rule": (9, 10)}, "test")
    assert rule_confidence("x.rule", table) == smoothed(9, 10)
    assert rule_confidence("never.seen", table) == PRIOR
    shipped = load_table()
    assert "calibrate" in shipped["source"] and shipped["rules"]


def test_propose_offline_ranks_by_calibrated_confidence_and_skips_taken():
    ctx = {
        **THIN,
        "index": 3,
        "callees": [{"index": 0, "name": "fd_seek", "import": "wasi_snapshot_preview1.fd_seek"}],
    }
    table = build_table({"import_wrapper.wasi": (50, 50)}, "t")
    p = propose_offline(ctx, table=table)
    assert p.name == "__wasi_fd_seek" and p.source == "specialist"
    assert p.confidence == smoothed(50, 50) and p.evidence()["rule"] == "import_wrapper.wasi"
    assert propose_offline(ctx, {"__wasi_fd_seek"}, table=table) is None
    low = build_table({"import_wrapper.wasi": (0, 50)}, "t")
    assert propose_offline(ctx, table=low) is None  # data says the rule is wrong: silent


def test_heuristics_fire_on_their_shapes():
    memcpy = {
        "index": 1,
        "type": "(i32, i32, i32) -> i32",
        "callees": [],
        "mnemonics": ["local.get", "local.get", "local.get", "memory.copy", "local.get", "end"],
    }
    getter = {
        "index": 2,
        "type": "() -> i32",
        "callees": [],
        "globals": [0],
        "global_names": {"0": "__stack_pointer"},
        "mnemonics": ["global.get", "end"],
    }
    free = {
        "index": 3,
        "type": "(i32) -> ()",
        "mem_ops": {"loads": 3, "stores": 0},
        "callees": [
            {"index": 8, "name": "huf_table_free", "import": None},
            {"index": 9, "name": "free", "import": None},
        ],
    }
    rules = {
        i: [(c.rule, c.name) for _s, c in offline_candidates(x)]
        for i, x in ((1, memcpy), (2, getter), (3, free))
    }
    assert rules == {
        1: [("bulk.memcpy", "memcpy")],
        2: [("global.getter", "get_stack_pointer")],
        3: [("compose.free", "free_huf_table")],
    }


def test_offline_backend_on_demo_module_is_deterministic_and_verified():
    from kbtool.wasm import analyze_module

    fns = analyze_module(DEMO.read_bytes()).functions
    names = {f.index: f.import_field for f in fns if f.imported}
    callers, sharing = callers_of(fns), string_sharing(fns)
    ctxs = [
        context_from_facts(fns, f.index, names, callers, sharing=sharing)
        for f in fns
        if not f.imported
    ]
    first = run_round(OfflineBackend(), ctxs, set(names.values()), concurrency=2)
    second = run_round(OfflineBackend(), ctxs, set(names.values()), concurrency=1)
    assert [(r.proposal.index, r.proposal.name) for r in first] == [
        (r.proposal.index, r.proposal.name) for r in second
    ]
    ok = {r.proposal.name for r in first if r.verdict.ok}
    assert "__wasi_fd_write" in ok
    assert all(r.proposal.backend == "offline" and r.proposal.model is None for r in first)
    assert len(ok) == len([r for r in first if r.verdict.ok])  # no duplicate names in a round


def test_wasi_libc_family_by_calls_and_signature():
    from kbtool.agents.specialist import wasi_libc

    seek = {"index": 9, "instr_count": 41, "type": "(i32, i64, i32) -> i64",
            "callees": [{"index": 16, "name": "__wasi_fd_seek", "import": None}]}  # fmt: skip
    assert wasi_libc(seek).name == "__lseek"
    direct = {**seek, "callees": [{"index": 4, "name": "fd_seek",
                                   "import": "wasi_snapshot_preview1.fd_seek"}]}  # fmt: skip
    assert wasi_libc(direct).name == "__lseek"
    assert wasi_libc({**seek, "type": "(i32) -> i32"}) is None
    more = {**seek, "callees": seek["callees"] + [{"index": 20, "name": "memcpy", "import": None}]}
    assert wasi_libc(more) is None
    main_void = {"index": 11, "instr_count": 79, "type": "() -> i32", "callees": [
        {"index": 13, "name": "__wasi_args_sizes_get", "import": None},
        {"index": 12, "name": "__wasi_args_get", "import": None},
        {"index": 30, "name": None, "import": None}]}  # fmt: skip
    assert wasi_libc(main_void).name == "__main_void"


def _chain_contexts():
    thin = {"call_indirect": 0, "loops": 0, "strings": [], "mem_ops": {"loads": 0, "stores": 0}}
    wrapper = {
        **thin,
        "index": 16,
        "instr_count": 8,
        "type": "(i32, i64, i32, i32) -> i32",
        "callees": [{"index": 4, "name": "fd_seek", "import": "wasi_snapshot_preview1.fd_seek"}],
        "callers": [{"index": 30, "name": None, "instr_count": 41, "calls": 1}],
    }
    lseek = {
        **thin,
        "index": 30,
        "instr_count": 41,
        "type": "(i32, i64, i32) -> i64",
        "callees": [{"index": 16, "name": None, "import": None}],
        "callers": [],
    }
    other = {
        **thin,
        "index": 31,
        "instr_count": 300,
        "type": "(i32) -> i32",
        "callees": [],
        "callers": [],
    }
    return [wrapper, lseek, other]  # fmt: skip


def test_run_rounds_feeds_names_forward_and_stops_at_fixpoint():
    from kbtool.agents import run_rounds

    gate: dict[int, tuple[str, float]] = {}

    def write(p):
        cur = gate.get(p.index)
        if cur and p.confidence <= cur[1]:
            return False, "not strictly higher"
        gate[p.index] = (p.name, p.confidence)
        return True, "written"

    # bottom-up: the callee (16) is proposed first, so its caller (30) already sees the name
    # in round 1; a second round has nothing left to revisit
    seen = []
    s = run_rounds(
        OfflineBackend(), _chain_contexts(), {"fd_seek"}, write, rounds=5,
        on_result=lambda r, rv, outcome, _why: seen.append((r, rv.proposal.name, outcome)),
    )  # fmt: skip
    assert seen == [(1, "__wasi_fd_seek", "write"), (1, "__lseek", "write")]
    assert {i: n for i, (n, _c) in gate.items()} == {16: "__wasi_fd_seek", 30: "__lseek"}
    d = s.to_dict()
    assert d["rounds_run"] == 1 and d["considered"] == 3 and d["written"] == 2
    assert d["specialist_written"] == 2 and d["backend"] == "offline"
    assert [x["name"] for x in d["details"]] == ["__wasi_fd_seek", "__lseek"]
    # in context order without bottom-up, the caller needs a second round
    gate.clear()
    seen.clear()
    s = run_rounds(
        OfflineBackend(), _chain_contexts(), {"fd_seek"}, write, rounds=5, bottom_up=False,
        on_result=lambda r, rv, outcome, _why: seen.append((r, rv.proposal.name, outcome)),
    )  # fmt: skip
    assert seen == [(1, "__wasi_fd_seek", "write"), (2, "__lseek", "write")]
    assert s.to_dict()["rounds_run"] == 2


def test_run_rounds_counts_gate_refusals_as_economy_rejects():
    from kbtool.agents import run_rounds

    s = run_rounds(OfflineBackend(), _chain_contexts(), set(), lambda p: (False, "locked"),
                   rounds=3)  # fmt: skip
    d = s.to_dict()
    assert (d["written"], d["rejected_by_economy"], d["rounds_run"]) == (0, 1, 1)
    assert d["details"][0]["reason"] == "locked"
