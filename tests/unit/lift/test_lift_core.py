"""kbtool.lift: disassembly and lifting of the .wat fixtures, hostile names, deep nesting,
budgets, prelude, and gcc -fsyntax-only over whole modules."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.lift import (
    Names,
    lift_function,
    lift_module,
    prelude_path,
    prepare,
    render_prelude,
)
from kbtool.lift.disasm import disassemble_function as _records
from kbtool.render.disasm import render_listing
from tests.support.paths import FIXTURES, ROOT


def disassemble_function(lm, func_index: int, **kw) -> str:
    """The listing's text: the records, rendered."""
    return render_listing(_records(lm, func_index, **kw))


FIX = FIXTURES / "lift"
GT = Path("/work/shared/corpus/gt")
needs_gcc = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")


def _wat2wasm(name: str, tmp_path: Path) -> bytes:
    if not shutil.which("wat2wasm"):
        pytest.skip("needs wat2wasm")
    out = tmp_path / (name + ".wasm")
    subprocess.run(
        ["wat2wasm", "--enable-all", "--debug-names", str(FIX / f"{name}.wat"), "-o", str(out)],
        check=True,
    )
    return out.read_bytes()


def gcc_check(texts: list[str], tmp_path: Path, tag: str = "all") -> subprocess.CompletedProcess:
    src = tmp_path / f"lifted_{tag}.c"
    src.write_text("".join(texts))
    return subprocess.run(
        ["gcc", "-fsyntax-only", "-fwrapv", "-w", "-include", prelude_path(), str(src)],
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    return prepare(_wat2wasm("features", tmp_path_factory.mktemp("feat")))


def _func(lm, name: str) -> int:
    return next(i for i, n in lm.names.functions.items() if n == name)


# ----------------------------------------------------------------------------- disassembly


def test_disassembly_names_structure_strings(features):
    text = disassemble_function(features, _func(features, "dispatch"))
    lines = text.splitlines()
    assert lines[0] == "func[8] <dispatch>: (i32, i32, i32) -> i32"
    assert any(ln.endswith("call $ext_log") for ln in lines)
    assert any('i32.const 1024  ;; "hello, world"' in ln for ln in lines)
    # the comment terminator and newline in the data are escaped, one line per instruction
    assert any('"evil *\\/ comment\\n' in ln for ln in lines)
    assert any("call_indirect 0 (type 0) (i32, i32) -> i32" in ln for ln in lines)
    assert any(ln.endswith("global.get $sp") for ln in lines)  # name section global names
    assert disassemble_function(features.data, 8) == text  # raw bytes work too
    # offsets are the file offsets, strictly increasing
    offs = [int(ln.split(":")[0], 16) for ln in lines[1:]]
    assert offs == sorted(offs) and len(set(offs)) == len(offs)


def test_disassembly_indents_blocks_and_is_deterministic(features):
    fi = _func(features, "nested")
    a = disassemble_function(features, fi)
    assert a == disassemble_function(prepare(features.data), fi)
    body = [ln.split(": ", 1)[1] for ln in a.splitlines()[1:]]
    loop = next(ln for ln in body if ln.strip() == "loop")
    inner = body[body.index(loop) + 1]
    assert len(inner) - len(inner.lstrip()) == len(loop) - len(loop.lstrip()) + 2
    assert body[-1] == "end"


def test_disassembly_unnamed_callee(features):
    names = Names(functions={})  # a stripped module: no names at all
    lm = prepare(features.data, names)
    text = disassemble_function(lm, 8)
    assert "call func[0] <unnamed>" in text
    assert "global.get 0" in text


# ----------------------------------------------------------------------------- lifting


def test_lift_structured_control_flow(features):
    sum_to = lift_function(features, _func(features, "sum_to")).text
    assert "int32_t sum_to(int32_t n) {" in sum_to
    assert "do {" in sum_to and "} while (i < n);" in sum_to, sum_to  # i is uint32_t
    assert "goto" not in sum_to
    classify = lift_function(features, _func(features, "classify")).text
    assert "switch (p0) {" in classify and "case 0:" in classify
    nested = lift_function(features, _func(features, "nested")).text
    assert "if (!(p0 & 1)) p1 += p0;" in nested  # block + br_if became an if
    assert "r1 = p1 ? 1 : 2;" in nested  # if/else with one value per arm
    assert "if (p0 > 100) return -1;" in nested  # branch to a block that only returns


def test_lift_calls_memory_multivalue(features):
    d = lift_function(features, _func(features, "dispatch")).text
    assert "typedef int32_t (*fn_ii_i)(int32_t, int32_t);" in d
    assert "((fn_ii_i)wasm_table_func(0, p0))(p1, p2)" in d
    assert 'ext_log(1024 /* "hello, world" */);' in d
    assert "*\\/ comment" in d and "evil */" not in d
    m = lift_function(features, _func(features, "mem")).text
    # a view of p (kbtool.lift.lifter.views); bytes 1 and 0..1 overlap: a union
    assert "P->field_8 = P->field_1;" in m and "P->field_0 = -1LL;" in m
    assert "return (int64_t)P->field_4;" in m
    assert "memory_copy(p, 1024" in m
    mv = lift_function(features, _func(features, "multi")).text
    assert "struct R_ij { int32_t v0; int64_t v1; };" in mv
    assert "return (struct R_ij){" in mv


def test_lift_float_constants(features):
    t = lift_function(features, _func(features, "fconsts")).text
    assert "return 3.4028235e+38f + " in t
    assert "f32_reinterpret_i32(-8388608)" in t  # -inf by its bits
    assert "f32_reinterpret_i32(0x7fa00000)" in t


def test_lift_simd_atomics_refs_exceptions(features):
    s = lift_function(features, _func(features, "simd")).text
    assert "i32x4_add(v128_load(p), i32x4_splat(3))" in s and "v128 v = {0};" in s
    a = lift_function(features, _func(features, "atomics")).text
    assert "i32_atomic_rmw_add(p + 4, 1);" in a and "atomic_fence();" in a
    r = lift_function(features, _func(features, "refs")).text
    assert "REF_FUNC(neg)" in r
    e = lift_function(features, _func(features, "exn")).text
    assert "wasm_throw(0, 7);" in e and "wasm_catch(0)" in e
    t = lift_function(features, _func(features, "tail")).text
    assert "return neg(p0);" in t


@needs_gcc
def test_every_fixture_function_is_valid_c(features, tmp_path):
    texts = [r.text for r in lift_module(features, imports=True)]
    assert len(texts) == features.module.num_functions
    p = gcc_check(texts, tmp_path)
    assert p.returncode == 0, p.stderr[:2000]


def test_field_hook_renders_struct_access(features):
    seen = []

    def hook(fi, base, off, ct):
        seen.append((base, off, ct))
        return f"{base}->field_{off}" if off == 8 else None

    lm = prepare(
        features.data,
        Names(
            functions=dict(features.names.functions),
            locals=dict(features.names.locals),
            field_hook=hook,
        ),
    )
    text = lift_function(lm, _func(lm, "mem")).text
    assert "p->field_8 = P->field_1;" in text  # the hook's field, then the view's
    assert ("p", 8, "int32_t") in seen


# ----------------------------------------------------------------------------- hostile names

HOSTILE = 'a b"*/ int x; /*\n#define'
_VIEW = re.compile(r"\n#define \w+ \(\((?:struct )?\w+ \*\)\(M \+ \w+\)\)(?=\n)")


@needs_gcc
def test_hostile_names_cannot_break_c(features, tmp_path):
    funcs = {i: HOSTILE for i in range(features.module.num_functions)}
    funcs[3] = "int"  # a keyword
    funcs[4] = "M"  # the memory base of the prelude
    funcs[5] = "i32x4_add"  # a prelude helper
    funcs[6] = "t1"  # a generated temp name
    loc = {i: {0: HOSTILE, 1: "p0", 2: "while"} for i in range(features.module.num_functions)}
    lm = prepare(features.data, Names(functions=funcs, globals={0: "*/", 1: HOSTILE}, locals=loc))
    assert len(set(lm.func_c)) == len(lm.func_c)
    assert lm.func_c[3] == "int_3" and lm.func_c[4] == "M_4" and lm.func_c[5] == "i32x4_add_5"
    texts = [r.text for r in lift_module(lm, imports=True)]
    for t in texts:
        for line in t.splitlines():
            if "/*" in line:  # comments open and close on the same line
                assert line.count("/*") == line.count("*/"), line
        # the only macros: the views of locals (kbtool.lift.lifter.views), no name's text
        assert "#define\n" not in t and "\n#define " not in _VIEW.sub(
            "", t.replace("#define KB_", "")
        )
    p = gcc_check(texts, tmp_path, "hostile")
    assert p.returncode == 0, p.stderr[:2000]
    d = disassemble_function(lm, 8)
    assert len(d.splitlines()) == len(disassemble_function(features, 8).splitlines())


# ----------------------------------------------------------------------------- nesting, budgets


def _uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _module(body: bytes) -> bytes:
    def sec(i, payload):
        return bytes([i]) + _uleb(len(payload)) + payload

    code = b"\x00" + body
    return (
        b"\x00asm\x01\x00\x00\x00"
        + sec(1, b"\x01\x60\x01\x7f\x01\x7f")
        + sec(3, b"\x01\x00")
        + sec(10, b"\x01" + _uleb(len(code)) + code)
    )


N = 10_000


@pytest.mark.parametrize("kind", ["blocks", "loops", "ifs"])
def test_ten_thousand_nested_constructs(kind, tmp_path):
    if kind == "blocks":
        body = (
            b"\x02\x40" * N
            + b"\x20\x00\x0d"
            + _uleb(N - 1)
            + b"\x20\x00\x0d"
            + _uleb(N // 2)
            + b"\x0b" * N
        )
    elif kind == "loops":
        body = b"\x03\x40" * N + b"\x20\x00\x0d" + _uleb(N - 1) + b"\x0b" * N
    else:
        body = b"\x20\x00\x04\x40" * N + b"\x0b" * N
    lm = prepare(_module(body + b"\x41\x01\x0b"))
    res = lift_function(lm, 0)
    assert not res.truncated
    assert res.stats.max_depth == N + 1
    assert res.text.rstrip().endswith("return 1;\n}".rstrip())
    n_instr = {"blocks": 2 * N + 6, "loops": 2 * N + 4, "ifs": 3 * N + 2}[kind]
    listing = disassemble_function(lm, 0).splitlines()
    assert len(listing) == 1 + n_instr
    assert listing[-1].endswith(": end") and listing[-2].endswith("  i32.const 1")
    if shutil.which("gcc"):
        p = gcc_check([res.text], tmp_path, kind)
        assert p.returncode == 0, p.stderr[:500]


def test_budget_gives_valid_placeholder(features, tmp_path):
    res = lift_function(features, _func(features, "nested"), max_instructions=5)
    assert res.truncated and "more than 5 instructions" in res.reason
    assert "/* kbtool: not lifted: more than 5 instructions */" in res.text
    assert "int32_t nested(int32_t p0, int32_t p1) {" in res.text
    if shutil.which("gcc"):
        assert gcc_check([res.text], tmp_path, "stub").returncode == 0


def test_malformed_body_gives_placeholder():
    lm = prepare(_module(b"\x02\x40\x0c\x05\x0b\x41\x01\x0b"))  # br to depth 5: invalid
    res = lift_function(lm, 0)
    assert res.truncated and "depth 5" in res.reason


def test_prelude_file_is_current():
    assert Path(prelude_path()).read_text() == render_prelude()


# ----------------------------------------------------------------------------- corpus


def _gt_modules():
    return sorted(GT.glob("zstd-*.wasm")) if GT.is_dir() else []


@needs_gcc
@pytest.mark.skipif(not _gt_modules(), reason="corpus absent")
def test_zstd_every_function_valid_c(tmp_path):
    path = next(p for p in _gt_modules() if "1.5.6.O2.named" in p.name)
    lm = prepare(path.read_bytes())
    results = list(lift_module(lm, imports=True))
    assert not [r.func_index for r in results if r.truncated]
    p = gcc_check([r.text for r in results], tmp_path, "zstd")
    assert p.returncode == 0, p.stderr[:2000]


@pytest.mark.skipif(not _gt_modules(), reason="corpus absent")
def test_lift_module_workers_give_the_same_text_in_order():
    path = next(p for p in _gt_modules() if "1.5.6.O2.named" in p.name)
    lm = prepare(path.read_bytes())
    one = [(r.func_index, r.text) for r in lift_module(lm, workers=1, imports=True)]
    two = [(r.func_index, r.text) for r in lift_module(lm, workers=2, imports=True)]
    assert [i for i, _ in one] == list(range(lm.module.num_functions))
    assert two == one


@pytest.mark.slow
@needs_gcc
@pytest.mark.skipif(not _gt_modules(), reason="corpus absent")
@pytest.mark.parametrize("path", _gt_modules(), ids=lambda p: p.name)
def test_corpus_every_function_valid_c(path, tmp_path):
    lm = prepare(path.read_bytes())
    p = gcc_check([r.text for r in lift_module(lm, imports=True)], tmp_path, path.stem)
    assert p.returncode == 0, p.stderr[:2000]


def test_disassemble_module_workers_give_the_same_listing_in_order():
    """The demo zstd build (in the package): forked workers give the one-process listing,
    which is each function's own disassembly, in index order."""
    from kbtool.lift import disassemble_module

    data = (ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm").read_bytes()
    lm = prepare(data)
    one = list(disassemble_module(lm, workers=1, render=render_listing))
    two = list(disassemble_module(lm, workers=2, render=render_listing))
    m = lm.module
    assert len(one) == m.num_functions - m.num_func_imports
    assert two == one
    assert one[0] == disassemble_function(lm, m.num_func_imports)
    assert one[-1].startswith(f"func[{m.num_functions - 1}] <")
    heads = list(disassemble_module(lm, workers=1, imports=True, render=render_listing))[
        : m.num_func_imports
    ]
    assert all(";; import " in h for h in heads)


def test_disassemble_module_notes_a_body_it_cannot_decode():
    from kbtool.lift import disassemble_module

    # one () -> () function whose body is an unknown opcode 0xff, then `end`
    data = (
        b"\0asm\1\0\0\0"
        + b"\x01\x04\x01\x60\x00\x00"
        + b"\x03\x02\x01\x00"
        + b"\x0a\x05\x01\x03\x00\xff\x0b"
    )
    (text,) = disassemble_module(prepare(data), workers=1, render=render_listing)
    assert text.startswith("func[0] <unnamed>:\n ;; kbtool: cannot disassemble this body: ")
    assert text.count("\n") == 2
