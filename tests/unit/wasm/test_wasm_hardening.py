"""Issue 11, wasm layer: hostile inputs (recursion, quadratic strings, declared sizes,
orphaned workers, valid proposals) and the fast/careful decoder agreement."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import crafted
from benchmarks.crafted import module, one_function, section, vec
from kbtool.wasm import WasmFormatError, analyze_module, parse_module
from kbtool.wasm.facts import _RUN, MAX_CSTRING, DataMap, build_data_map
from kbtool.wasm.instr import check_body, iter_instructions, read_heaptype, read_valtype
from kbtool.wasm.leb import encode_uleb
from tests.support.paths import ROOT

HAVE_WASM_TOOLS = shutil.which("wasm-tools") is not None


def _wasm_tools_valid(tmp_path: Path, data: bytes) -> bool:
    p = tmp_path / "m.wasm"
    p.write_bytes(data)
    return (
        subprocess.run(
            ["wasm-tools", "validate", "--features", "all", str(p)], capture_output=True
        ).returncode
        == 0
    )


# ----------------------------------------------------------------------------- 1. recursion


@pytest.mark.parametrize(
    "build", [crafted.shared_prefix_type, crafted.shared_prefix_block, crafted.shared_prefix_local]
)
def test_shared_prefix_run_is_a_format_error_not_recursion(build):
    data = build(2000)
    with pytest.raises(WasmFormatError) as ei:
        analyze_module(data)
    assert "abstract heap type after 'shared' (0x65)" in str(ei.value)
    assert "\n" not in str(ei.value)


def test_read_heaptype_is_iterative_and_takes_one_shared_prefix():
    assert read_heaptype(b"\x65\x70", 0, 2) == ("shared func", 2)
    assert read_heaptype(b"\x05", 0, 1) == ("5", 1)
    for bad in (b"\x65\x65\x70", b"\x65", b"\x65\x05", b"\x40"):
        with pytest.raises(WasmFormatError):
            read_heaptype(bad, 0, len(bad))
    deep = b"\x65" * 100_000 + b"\x70"
    with pytest.raises(WasmFormatError):
        read_heaptype(deep, 0, len(deep))
    assert read_valtype(b"\x65\x6e", 0, 2) == ("(ref null shared any)", 2)
    assert read_valtype(b"\x64\x65\x6c", 0, 3) == ("(ref shared i31)", 3)


# ----------------------------------------------------------------------------- agreement


def _careful(data: bytes, m) -> list[int] | WasmFormatError:
    counts = []
    try:
        for s, e in m.code:
            check_body(data, s, e)
            counts.append(sum(1 for _ in iter_instructions(data, s, e)))
    except WasmFormatError as err:
        return err
    return counts


def assert_decoders_agree(data: bytes) -> None:
    """The fast decoder (analyze_module) accepts a body iff the careful one does, and
    both count the same instructions."""
    try:
        m = parse_module(data)
    except WasmFormatError:
        return
    careful = _careful(data, m)
    try:
        a = analyze_module(data)
    except WasmFormatError as err:
        assert "could not be decoded" not in str(err), "fast rejects, careful accepts"
        assert isinstance(careful, WasmFormatError), f"fast rejects ({err}), careful accepts"
        return
    assert not isinstance(careful, WasmFormatError), f"fast accepts, careful rejects: {careful}"
    assert [f.instr_count for f in a.functions if not f.imported] == careful


SEED_BODIES = [
    b"\x02\x63\x65\x70\x0b\x0b",  # block (result (ref null (shared func)))
    b"\x02\x65\x6f\xd0\x65\x6f\x0b\x1a\x0b",  # block (shared externref) ref.null
    b"\x41\x01\xfb\x14\x65\x6c\x1a\x0b",  # ref.test (shared i31)
    b"\x02\x40\x03\x7f\x41\x00\x0b\x1a\x0b\x0b",  # block / loop
    b"\x1c\x01\x64\x70\x1a\x0b",  # select (ref func)
    b"\x41\x80\x80\x80\x80\x00\x1a\x0b",  # padded i32.const
    b"\x20\x80\x80\x80\x80\x00\x1a\x0b",  # padded local.get
    b"\x0e\x01\x00\x00\x0b",  # br_table
    b"\x1f\x40\x01\x02\x00\x0b\x0b",  # try_table catch_all
    b"\x06\x40\x18\x00\x0b",  # try ... delegate
    b"\x42\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x1a\x0b",  # i64.const, 10-byte LEB
]
SEED_LOCALS = [b"\x00", b"\x01\x01\x63\x65\x70", b"\x01\x02\x7f", b"\x01\x01\x64\x05"]
INTERESTING = [
    0x00,
    0x0B,
    0x40,
    0x63,
    0x64,
    0x65,
    0x6C,
    0x70,
    0x7F,
    0x80,
    0xFF,
    0x0F,
    0x10,
    0x18,
    0xD0,
    0xFB,
    0x14,
    0x02,
    0x1F,
]


@st.composite
def mutated_function(draw):
    body = bytearray(draw(st.sampled_from(SEED_LOCALS)) + draw(st.sampled_from(SEED_BODIES)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(body)))
        op = draw(st.integers(0, 3))
        byte = draw(st.sampled_from(INTERESTING) | st.integers(0, 255))
        if op == 0 and i < len(body):
            body[i] = byte
        elif op == 1:
            body[i:i] = bytes([byte])
        elif op == 2 and i < len(body) and len(body) > 1:
            del body[i]
        else:
            body[i:i] = bytes([byte]) * draw(st.integers(1, 6))
    return bytes(body)


def _module_for(code: bytes) -> bytes:
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"])),
        section(10, vec([encode_uleb(len(code)) + code])),
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_function())
def test_fast_and_careful_decoders_agree_on_mutated_bodies(code):
    assert_decoders_agree(_module_for(code))


@pytest.mark.parametrize(
    "code",
    [
        b"\x01\x01\x63" + b"\x65" * 50 + b"\x70\x0b",  # shared run in a local
        b"\x00\x02\x63\x65\x65\x70\x0b\x0b",  # in a block type
        b"\x01\x01\x40\x0b",  # local of type 0x40 (not a value type)
        b"\x00\x02\x50\x0b\x0b",  # block type 0x50 (not a value type)
        b"\x00\x02\x40\x0b",  # block; end without the function's end
        b"\x00\x0b\x01\x0b",  # instructions after the final end
        b"\x00\x20\x80\x80\x80\x80\x10\x1a\x0b",  # u32 LEB with bits beyond 32
        b"\x00\x41\x80\x80\x80\x80\x10\x1a\x0b",  # s32 LEB with bad sign bits
        b"\x00\xd0\x65\x70\x1a\x0b",  # ref.null (shared func): valid
        b"\x00\xd0\x65\x0b",  # ref.null with a cut shared heap type
        b"\x00\x02\x80\x7f\x0b\x0b",  # negative multi-byte block type index
        b"\x02\xff\xff\x03\x7f\x01\x7f\x0b",  # 65535+... locals over the engine limit
    ],
)
def test_decoders_agree_on_known_divergences(code):
    assert_decoders_agree(_module_for(code))


# ----------------------------------------------------------------------------- 2. strings


def test_quadratic_strings_module_decodes_without_strings():
    a = analyze_module(crafted.quadratic_strings(3000))
    f = a.functions[0]
    assert f.instr_count == 2 * 3000 + 1
    # no C string (no NUL); only the segment start begins a text run (kept to 200 chars)
    assert f.strings == ["A" * 200]


@settings(max_examples=300, deadline=None)
@given(
    st.binary(min_size=1, max_size=300).map(
        lambda b: b.replace(b"\x00", b"A") if len(b) % 3 else b
    ),
    st.integers(0, 299),
)
def test_precomputed_runs_match_the_regex(seg, rel):
    rel %= len(seg)
    dm = DataMap([(0, seg)])
    expect = _RUN.match(seg, rel, min(len(seg), rel + MAX_CSTRING)).end()
    assert dm._match_end(0, seg, rel) == expect


def test_match_end_respects_the_cstring_limit_at_character_boundaries():
    seg = ("é" * 3000).encode() + b"\x00"
    dm = DataMap([(0, seg)])
    for rel in (0, 2, 100):
        assert dm._match_end(0, seg, rel) == _RUN.match(seg, rel, rel + MAX_CSTRING).end()


def test_string_text_is_bounded_by_a_budget():
    """(ptr, len) records pointing at one large text: each decoded once, within the budget."""
    text = b"x" * 4096
    recs = b"".join(
        (0x10000).to_bytes(4, "little") + (4096).to_bytes(4, "little") for _ in range(64)
    )
    dm = DataMap([(0, recs), (0x10000, text)])
    dm.text_budget = 3 * 4096
    found = [dm.entry(8 * i)[2] for i in range(64)]
    assert sum(1 for t in found if t) == 3  # later ones exceed the budget
    assert dm.text_budget >= 0


def test_sized_text_is_cached():
    dm = DataMap([(0, b"hello world\x00")])
    e = dm.entry(0)
    assert dm.sized_text(e, 5) == "hello"
    budget = dm.text_budget
    assert dm.sized_text(e, 5) == "hello"
    assert dm.text_budget == budget


# ----------------------------------------------------------------------------- 3. sizes


def test_huge_custom_page_size_is_rejected_before_use():
    with pytest.raises(WasmFormatError, match="invalid custom page size"):
        analyze_module(crafted.huge_page_size())


@pytest.mark.parametrize(
    "mem,ok",
    [
        (b"\x08\x01\x00", True),  # page size 1 byte
        (b"\x08\x01\x10", True),  # 64 KiB
        (b"\x08\x01\x0c", False),  # 4 KiB: not (yet) allowed
        (b"\x00" + encode_uleb(65536), True),
        (b"\x00" + encode_uleb(65537), False),
        (b"\x01\x02\x01", False),  # min > max
        (b"\x04" + encode_uleb(1 << 48), True),  # memory64
        (b"\x04" + encode_uleb((1 << 48) + 1), False),
        (b"\x08" + encode_uleb(0xFFFFFFFF) + b"\x00", True),  # 4G - 1 one-byte pages
    ],
)
def test_memory_limits_follow_the_spec(mem, ok, tmp_path):
    data = module(section(5, vec([mem])))
    if ok:
        parse_module(data)
    else:
        with pytest.raises(WasmFormatError):
            parse_module(data)
    if HAVE_WASM_TOOLS:
        assert _wasm_tools_valid(tmp_path, data) == ok


def test_table_limits():
    with pytest.raises(WasmFormatError, match="minimum <= maximum"):
        parse_module(module(section(4, vec([b"\x70\x01\x05\x01"]))))
    with pytest.raises(WasmFormatError, match="page size"):
        parse_module(module(section(4, vec([b"\x70\x08\x01\x10"]))))


@pytest.mark.parametrize("i", range(len(crafted.huge_counts())))
def test_huge_declared_counts_are_clean_errors(i):
    with pytest.raises(WasmFormatError):
        analyze_module(crafted.huge_counts()[i])


# ----------------------------------------------------------------------------- 12. proposals


def test_shared_everything_threads_module(tmp_path):
    data = crafted.shared_everything()
    if HAVE_WASM_TOOLS:
        assert _wasm_tools_valid(tmp_path, data)
    a = analyze_module(data)
    m = a.module
    assert [(g.mutable, g.shared) for g in m.globals] == [(True, True), (False, True)]
    assert m.tables[0].shared and m.tables[0].reftype == "(ref null shared func)"
    assert m.memories[0].shared
    assert a.functions[0].instr_count == 5
    assert a.functions[0].mnemonics() == ["block", "ref.null", "end", "drop", "end"]


def _shared_global_module(body: bytes) -> bytes:
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"])),
        section(6, vec([b"\x7f\x03\x41\x00\x0b"])),
        section(10, vec([encode_uleb(len(body) + 1) + b"\x00" + body])),
    )


def test_shared_everything_instructions(tmp_path):
    # global.atomic.get seqcst 0; drop; i32.const 1; ref.i31_shared; drop; end
    data = _shared_global_module(b"\xfe\x4f\x00\x00\x1a\x41\x01\xfe\x72\x1a\x0b")
    if HAVE_WASM_TOOLS:
        assert _wasm_tools_valid(tmp_path, data)
    f = analyze_module(data).functions[0]
    assert f.mnemonics() == [
        "global.atomic.get",
        "drop",
        "i32.const",
        "ref.i31_shared",
        "drop",
        "end",
    ]
    assert f.globals_used == [0]
    with pytest.raises(WasmFormatError, match="memory ordering"):
        analyze_module(_shared_global_module(b"\xfe\x4f\x02\x00\x1a\x0b"))


def test_custom_descriptors_types_and_exact_heap_types(tmp_path):
    # rec { $t (descriptor $d) struct, $d (describes $t) struct }; func (param (ref (exact $t)))
    types = section(
        1, vec([b"\x4e\x02\x4d\x01\x5f\x00\x4c\x00\x5f\x00", b"\x60\x01\x64\x62\x00\x00"])
    )
    body = b"\x01\x01\x63\x62\x00\xd0\x62\x00\x1a\x20\x00\xfb\x17\x62\x00\x1a\x0b"
    data = module(
        types, section(3, vec([b"\x02"])), section(10, vec([encode_uleb(len(body)) + body]))
    )
    if HAVE_WASM_TOOLS:
        assert _wasm_tools_valid(tmp_path, data)
    a = analyze_module(data)
    assert a.module.types[2].text() == "((ref exact 0)) -> ()"
    assert a.functions[0].instr_count == 6
    assert_decoders_agree(data)


def test_unsupported_proposals_are_named():
    with pytest.raises(WasmFormatError, match="custom-descriptors proposal"):
        analyze_module(one_function(b"\x20\x00\xfb\x22\x00\x1a\x0b"))
    with pytest.raises(WasmFormatError, match="stack-switching proposal"):
        analyze_module(one_function(b"\xe0\x00\x1a\x0b"))


def test_compact_imports_both_count_conventions(tmp_path):
    data = crafted.compact_imports()  # wasm-tools: count = entries
    if HAVE_WASM_TOOLS:
        assert _wasm_tools_valid(tmp_path, data)
    m = parse_module(data)
    assert [(i.module, i.field, i.kind) for i in m.imports] == [
        ("env", "a", "func"),
        ("env", "b", "func"),
        ("env", "c", "global"),
        ("wasi", "x", "func"),
        ("wasi", "y", "func"),
    ]
    assert [i.type_index for i in m.func_imports] == [0, 0, 1, 1]
    # wabt 1.0.x writes the number of imports instead
    sec2 = next(s for s in m.sections if s.id == 2)
    payload = data[sec2.offset : sec2.offset + sec2.size]
    wabt = module(
        section(1, vec([b"\x60\x01\x7f\x00", b"\x60\x00\x00"])),
        section(2, encode_uleb(5) + payload[1:]),
    )
    assert len(parse_module(wabt).imports) == 5
    bad = module(
        section(1, vec([b"\x60\x01\x7f\x00", b"\x60\x00\x00"])),
        section(2, encode_uleb(3) + payload[1:]),
    )
    with pytest.raises(WasmFormatError, match="3 imports"):
        parse_module(bad)


@pytest.mark.skipif(not HAVE_WASM_TOOLS, reason="needs wasm-tools")
def test_wasm_tools_text_modules_with_both_proposals(tmp_path):
    wat = tmp_path / "m.wat"
    wat.write_text(
        textwrap.dedent("""
        (module
          (type $s (shared (func)))
          (import "env" (item "a" (func (type $s))) (item "b" (global i32)))
          (global $g (shared mut i32) (i32.const 0))
          (table shared 1 (ref null (shared func)))
          (func (type $s) (local (ref null (shared any)))
            (block (result (ref null (shared extern))) (ref.null (shared extern))) drop))
    """)
    )
    out = tmp_path / "m.wasm"
    subprocess.run(["wasm-tools", "parse", str(wat), "-o", str(out)], check=True)
    data = out.read_bytes()
    assert _wasm_tools_valid(tmp_path, data)
    a = analyze_module(data)
    assert [i.field for i in a.module.imports] == ["a", "b"]
    assert a.functions[1].instr_count == 5


# ----------------------------------------------------------------------------- 7. workers


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


WORKER_SCRIPT = """
import multiprocessing, sys, time
from benchmarks.crafted import module, section, vec
from kbtool.wasm import analyze_module
from kbtool.wasm.leb import encode_uleb
body = b"\\x00" + b"\\x41\\x01\\x1a" * 20000 + b"\\x0b"
n = 400
data = module(section(1, vec([b"\\x60\\x00\\x00"])), section(3, vec([b"\\x00"] * n)),
              section(10, vec([encode_uleb(len(body)) + body] * n)))
def progress(done, total):
    if done < total:
        pids = [p.pid for p in multiprocessing.active_children()]
        print(" ".join(map(str, pids)), flush=True)
        time.sleep(120)
analyze_module(data, workers=2, progress=progress)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_decode_workers_exit_when_the_parent_is_killed(sig):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT], stdout=subprocess.PIPE, env=env, cwd=ROOT, text=True
    )
    try:
        line = p.stdout.readline()
        pids = [int(x) for x in line.split()]
        assert pids, "no worker pids reported"
        assert all(_alive(q) for q in pids)
        p.send_signal(sig)
        p.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(_alive(q) for q in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [q for q in pids if _alive(q)], "orphaned decode workers"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ----------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("command", [["ingest"], ["oracle", "add"]])
def test_cli_on_crafted_cases_never_prints_a_traceback(tmp_path, command):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outcomes = {}
    for name, data in crafted.crafted_cases().items():
        f = tmp_path / f"{name}.wasm"
        f.write_bytes(data)
        r = subprocess.run(
            [sys.executable, "-m", "kbtool.cli", "--db", str(tmp_path / "kb.db"), *command, str(f)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert "Traceback" not in r.stderr, (name, r.stderr[-2000:])
        assert r.returncode in (0, 1), (name, r.returncode, r.stderr[-500:])
        if r.returncode == 1:
            assert len(r.stderr.strip().splitlines()) == 1, (name, r.stderr)
            assert "error:" in r.stderr
        outcomes[name] = r.returncode
    assert outcomes["shared_prefix_type"] == 1 and outcomes["huge_page_size"] == 1
    if command == ["ingest"]:
        assert outcomes["shared_everything"] == 0 and outcomes["compact_imports"] == 0


# ----------------------------------------------------------------------------- harness


def test_fuzz_harness_small_budget():
    from benchmarks import fuzz

    res = fuzz.run(
        mutations=40,
        smith=3 if HAVE_WASM_TOOLS else 0,
        seed=7,
        timeout=60,
        mem_mb=768,
        include_corpus=False,
        reference=HAVE_WASM_TOOLS,
        log=lambda *_: None,
    )
    assert res["failures"] == []
    assert sum(v for k, v in res["stats"].items() if k.startswith("mutation:")) >= 40
    # every accepted input also went through the lifter and the static analyses
    accepted = sum(v for k, v in res["stats"].items() if k.endswith(":ok"))
    assert res["stats"]["lift:modules"] == res["stats"]["analysis:modules"] == accepted > 0
    assert res["stats"]["lift:functions"] > 0


def test_fuzz_layers_option():
    from benchmarks import fuzz

    assert fuzz.parse_layers("lift") == ("wasm", "lift")
    assert fuzz.parse_layers("analysis,wasm") == ("wasm", "analysis")
    with pytest.raises(SystemExit):
        fuzz.parse_layers("wasm,bogus")
    res = fuzz.run(
        mutations=10,
        smith=0,
        seed=3,
        timeout=60,
        mem_mb=768,
        include_corpus=False,
        reference=False,
        log=lambda *_: None,
        layers=("wasm",),
        body_mutations=5,
    )
    assert res["failures"] == []
    assert "lift:modules" not in res["stats"] and "analysis:modules" not in res["stats"]


def test_fuzz_compile_check_reports_the_first_error():
    from benchmarks.fuzz import compile_c

    if not shutil.which("gcc"):
        pytest.skip("needs gcc")
    assert compile_c("int32_t f(void) { return 0; }\n") is None
    err = compile_c("struct R_ij f0(void) { }\n")
    assert err is not None and "incomplete" in err


def test_fuzz_dump_counts_parser():
    from benchmarks.fuzz import dump_counts

    text = textwrap.dedent("""\
        ============== func 0 ====================
         0x16 | 07          | size of function
         0x17 | 01          | 1 local blocks
         0x18 | 01 7f       | 1 locals of type I32
         0x1a | 41 01       | i32_const value:1
         0x1b | fd 0c 00 00 | v128_const value:V128([0])
              | 00 00
         0x1c | 0b          | end
        ============== func 1 ====================
         0x1d | 02          | size of function
         0x1e | 00          | 0 local blocks
         0x1f | 0b          | end
         0x20 | 0b 05       | data section
         0x22 | 01          | 1 count
    """)
    assert dump_counts(text) == [3, 1]


@pytest.mark.slow
def test_fuzz_harness_long_run():
    from benchmarks import fuzz

    res = fuzz.run(
        mutations=3000,
        smith=200 if HAVE_WASM_TOOLS else 0,
        seed=11,
        timeout=60,
        mem_mb=768,
        include_corpus=True,
        reference=HAVE_WASM_TOOLS,
        log=lambda *_: None,
    )
    assert res["failures"] == []


def test_crafted_benchmark_smoke(capsys):
    assert crafted.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "crafted quadratic-strings module" in out


def test_build_data_map_on_the_crafted_module_has_one_segment():
    data = crafted.quadratic_strings(100)
    dm = build_data_map(data, parse_module(data))
    assert len(dm.datas) == 1 and dm.lo == 1024
