"""Data items in the lifted C read as objects (issue 26 point 5, issue 27 point 3): a scalar
static reads ``counter``, a byte table ``tbl[p0]``, a word table indexed by ``i << 2``
``words[p0]``, fields of a static ``state.field_8``, an address ``ADDR(state)``; a KB type
applied to a data item gives ``state.second`` and one applied to a global
``((struct pair *)(M + g))->second`` with the type beside its declaration. The C compiles
with the prelude and computes what the wasm computes (gcc shared library vs wasmtime)."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys

import pytest

from kbtool.lift import lift_module, prelude_path, prepare
from kbtool.lift.names import Names
from tests.support.lift_sem import runtime_c

pytestmark = pytest.mark.skipif(
    shutil.which("wat2wasm") is None or shutil.which("gcc") is None, reason="needs wat2wasm and gcc"
)

WAT = r"""
(module
  (memory (export "memory") 1)
  (global $sp (mut i32) (i32.const 65536))
  (global $cfg (mut i32) (i32.const 2048))
  (data (i32.const 1024) "\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\90")
  (data (i32.const 1040) "\10\00\00\00\20\00\00\00\30\00\00\00\40\00\00\80")
  (data (i32.const 1056) "\07\00\00\00")
  (data (i32.const 1072) "\01\00\00\00\00\00\00\00\02\00\00\00\00\00\00\00")
  (data (i32.const 1088) "hello\00")
  (data (i32.const 2048) "\05\00\00\00\06\00\00\00\07\00\00\00")
  (func $lookup (export "lookup") (param i32) (result i32)
    (i32.load8_u offset=1024 (local.get 0)))
  (func $lookup_s (export "lookup_s") (param i32) (result i32)
    (i32.add (i32.load8_u offset=1024 (local.get 0)) (i32.load8_s offset=1024 (local.get 0))))
  (func $sum_tbl (export "sum_tbl") (param i32) (result i32)
    (i32.load8_u (i32.add (local.get 0) (i32.const 1024))))
  (func $word (export "word") (param i32) (result i32)
    (i32.load offset=1040 (i32.shl (local.get 0) (i32.const 2))))
  (func $counter (export "counter") (result i32)
    (i32.store (i32.const 1056) (i32.add (i32.load (i32.const 1056)) (i32.const 1)))
    (i32.load (i32.const 1056)))
  (func $state (export "state") (param i32) (result i32)
    (i32.store (i32.const 1080) (local.get 0))
    (i32.add (i32.load (i32.const 1072)) (i32.load (i32.const 1080))))
  (func $addr (export "addr") (result i32)
    (i32.add (i32.const 1072) (i32.load8_u (i32.const 1088))))
  (func $viaglobal (export "viaglobal") (result i32)
    (i32.load offset=8 (global.get $cfg)))
  (func $scale (export "scale") (param i32) (result i32)
    (i32.and (i32.mul (local.get 0) (i32.const 1040)) (i32.const 1056)))
)
"""
ITEMS = [
    (1024, 16, "upper_to_lower", None),
    (1040, 16, "words", None),
    (1056, 4, "counter", None),
    (1072, 16, "state", None),
    (1088, 6, "s_hello", "hello"),
]


def _wasm(tmp_path) -> bytes:
    src = tmp_path / "d.wat"
    src.write_text(WAT)
    out = tmp_path / "d.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def _lift(data: bytes, items=ITEMS):
    lm = prepare(data, Names(functions={}, data=list(items)))
    return lm, {lm.func_c[r.func_index]: r.text for r in lift_module(lm)}


def test_data_items_read_as_objects(tmp_path):
    _lm, c = _lift(_wasm(tmp_path))
    assert "return upper_to_lower[p0];" in c["f0"]
    assert "#define upper_to_lower (*(uint8_t (*)[])(M + 1024))" in c["f0"]
    assert c["f0"].rstrip().endswith("#undef upper_to_lower")
    # the same table read with the other signedness: a cast, not a second type
    assert "upper_to_lower[p0] + (int8_t)upper_to_lower[p0]" in c["f1"]
    assert "return upper_to_lower[p0];" in c["f2"]  # the table's address added in code
    assert "return words[p0];" in c["f3"] and "(int32_t (*)[])(M + 1040)" in c["f3"]
    assert "counter = counter + 1;" in c["f4"] and "return counter;" in c["f4"]
    # two fields of one static: a packed struct of the function's own
    assert "state.field_8 = p0;" in c["f5"] and "return state.field_0 + state.field_8;" in c["f5"]
    assert re.search(
        r"struct __attribute__\(\(packed\)\) f5_state \{ int32_t field_0; "
        r"uint8_t _pad4\[4\]; int32_t field_8; \};",
        c["f5"],
    )
    # an address is ADDR(item); a string keeps its label as the address constant
    assert "ADDR(state)" in c["f6"] and "s_hello" in c["f6"] and "ADDR(s_hello)" not in c["f6"]
    assert "M + " not in c["f4"].split("{", 1)[1]
    # a data address as a factor or a mask is a number, and nothing is declared for it
    assert "return (p0 * 1040) & 1056;" in c["f8"] and "#define" not in c["f8"]


def test_data_objects_compute_like_wasm(tmp_path):
    """The lifted C in a shared library against wasmtime: same results, same memory."""
    wasmtime = pytest.importorskip("wasmtime")
    from tests.support.lift_sem import runtime_c

    data = _wasm(tmp_path)
    lm, c = _lift(data)
    src = tmp_path / "lifted.c"
    src.write_text("".join(c.values()) + runtime_c(lm))
    lib = tmp_path / "lifted.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O2",
            "-fwrapv",
            "-fno-strict-aliasing",
            "-w",
            "-D__stack_pointer=kb__stack_pointer",
            "-include",
            prelude_path(),
            str(src),
            "-o",
            str(lib),
        ],
        check=True,
    )
    so = ctypes.CDLL(str(lib))
    so.kb_init()
    store = wasmtime.Store()
    ex = wasmtime.Instance(store, wasmtime.Module(store.engine, data), []).exports(store)
    calls = (
        [("lookup", k) for k in range(16)]
        + [("lookup_s", k) for k in range(16)]
        + [("sum_tbl", k) for k in (0, 15)]
        + [("word", k) for k in range(4)]
        + [("counter", None)] * 3
        + [("state", v) for v in (5, -7)]
        + [("addr", None), ("viaglobal", None)]
        + [("scale", v) for v in (1, 3, -5)]
    )
    fi = {e.name: e.index for e in lm.module.exports if e.kind == "func"}
    for name, arg in calls:
        f = getattr(so, lm.func_c[fi[name]])
        f.restype = ctypes.c_int32
        args = [] if arg is None else [arg]
        f.argtypes = [ctypes.c_int32] * len(args)
        assert f(*args) == ex[name](store, *args), (name, arg)
    mem = ex["memory"]
    size = mem.data_len(store)
    assert bytes(mem.read(store, 0, size)) == ctypes.string_at(
        ctypes.c_void_p.in_dll(so, "M").value, size
    )


def _kb(db: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", db, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_types_applied_to_data_and_globals_show_in_the_c(tmp_path):
    wasm = tmp_path / "d.wasm"
    wasm.write_bytes(_wasm(tmp_path))
    db = str(tmp_path / "kb.db")
    assert _kb(db, "ingest", str(wasm)).returncode == 0
    before = _kb(db, "code", "1", "--all").stdout
    assert (
        re.search(r"#define \w+ \(\*\(int32_t \*\)\(M \+ 1072\)\)", before)
        and "->second" not in before
    )
    h = tmp_path / "p.h"
    h.write_text("struct pair { int first; unsigned int pad; int second; };\n")
    assert _kb(db, "types", "add", str(h)).returncode == 0
    r = _kb(db, "types", "apply", "1", "data", "0x430", "struct pair")
    assert r.returncode == 0, r.stderr
    r = _kb(db, "types", "apply", "1", "g:1", "struct pair *")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "all.c"
    r = _kb(db, "code", "1", "--all", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    label = re.search(r"#define (\w+) \(\*\(struct pair \*\)\(M \+ 1072\)\)", text).group(1)
    assert re.search(rf"return {label}\.first \+ \w+;", text)  # the model's item at 1080 is its own
    g = re.search(r"extern int32_t (\w+); /\* struct pair \* \*/", text).group(1)
    assert f"return ((struct pair *)(M + {g}))->second;" in text
    assert "struct __attribute__((packed)) pair { int32_t first;" in text
    cc = shutil.which("gcc") or shutil.which("clang")
    r = subprocess.run(
        [cc, "-fsyntax-only", "-w", "-include", prelude_path(), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[:2000]
    # clearing the type brings the plain object back
    assert _kb(db, "types", "apply", "1", "data", "0x430", "--clear").returncode == 0
    assert re.search(rf"return {label} \+ \w+;", _kb(db, "code", "1", "--all").stdout)


def test_a_member_named_like_an_item_keeps_both(tmp_path):
    """A typed parameter's member ``counter`` beside the static ``counter``: the static is
    renamed in that function (its macro would expand ``->counter``) and the C compiles."""
    wat = WAT.replace(
        "(func $viaglobal",
        '(func $both (export "both") (param i32) (result i32)\n'
        "    (i32.add (i32.load (local.get 0)) (i32.load (i32.const 1056))))\n  (func $viaglobal",
    )
    src = tmp_path / "d.wat"
    src.write_text(wat)
    subprocess.run(["wat2wasm", str(src), "-o", str(tmp_path / "d.wasm")], check=True)
    decl = "struct __attribute__((packed)) T { int32_t counter; };"

    def hook(fi, base, off, ct):
        return (
            (f"((struct T *)(M + {base}))->counter", "T_T", decl)
            if off == 0 and ct == "int32_t"
            else None
        )

    lm = prepare(
        (tmp_path / "d.wasm").read_bytes(), Names(functions={}, data=list(ITEMS), field_hook=hook)
    )
    c = {lm.func_c[r.func_index]: r.text for r in lift_module(lm)}
    both = next(t for t in c.values() if "->counter" in t)
    assert "return ((struct T *)(M + p0))->counter + counter_data;" in both
    assert "#define counter_data (*(int32_t *)(M + 1056))" in both and "#undef counter_data" in both
    out = tmp_path / "all.c"
    out.write_text("".join(c.values()))
    r = subprocess.run(
        ["gcc", "-fsyntax-only", "-w", "-include", prelude_path(), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[:2000]


def test_typed_array_of_structs_is_indexed(tmp_path):
    """A data item typed ``struct op[3]``: ``ops[p0].code`` for a load at element offset 4
    whose address is ``p0 * 12`` (+ the item), ``ops[1].fn`` at a constant address; the C
    compiles and computes what the wasm computes."""
    wasmtime = pytest.importorskip("wasmtime")
    from kbtool.analysis import cdecl as cd
    from kbtool.services.types_code import TypedFields

    wat = WAT.replace(
        "(func $viaglobal",
        '(data (i32.const 1100) "\\01\\00\\00\\00\\02\\00\\00\\00\\03\\00\\00\\00'
        '\\04\\00\\00\\00\\05\\00\\00\\00\\06\\00\\00\\00\\07\\00\\00\\00\\08\\00\\00\\00\\09\\00\\00\\00")\n'
        '  (func $opcode (export "opcode") (param i32) (result i32)\n'
        "    (i32.add (i32.load offset=1104 (i32.mul (local.get 0) (i32.const 12)))"
        " (i32.load (i32.const 1120))))\n  (func $viaglobal",
    )
    src = tmp_path / "d.wat"
    src.write_text(wat)
    subprocess.run(["wat2wasm", str(src), "-o", str(tmp_path / "d.wasm")], check=True)
    data = (tmp_path / "d.wasm").read_bytes()
    env = cd.Env()
    cd.parse_decls("struct op { int name; unsigned code; int fn; };", env)
    tf = TypedFields(env, {})
    tf.items = {1100: cd.parse_type("struct op[3]", env)}
    lm = prepare(
        data, Names(functions={}, data=[*ITEMS, (1100, 36, "ops", None)], data_hook=tf.data_hook())
    )
    c = {lm.func_c[r.func_index]: r.text for r in lift_module(lm)}
    op = next(t for t in c.values() if "<opcode>" in t or "ops" in t)
    assert "return ops[p0].code + ops[1].fn;" in op, op
    assert "#define ops (*(struct op (*)[3])(M + 1100))" in op
    (tmp_path / "l.c").write_text("".join(c.values()) + runtime_c(lm))
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O2",
            "-fwrapv",
            "-fno-strict-aliasing",
            "-w",
            "-D__stack_pointer=kb__stack_pointer",
            "-include",
            prelude_path(),
            str(tmp_path / "l.c"),
            "-o",
            str(tmp_path / "l.so"),
        ],
        check=True,
    )
    so = ctypes.CDLL(str(tmp_path / "l.so"))
    so.kb_init()
    store = wasmtime.Store()
    ex = wasmtime.Instance(store, wasmtime.Module(store.engine, data), []).exports(store)
    fi = next(e.index for e in lm.module.exports if e.name == "opcode")
    f = getattr(so, lm.func_c[fi])
    f.restype, f.argtypes = ctypes.c_int32, [ctypes.c_int32]
    for k in range(3):
        assert f(k) == ex["opcode"](store, k)
