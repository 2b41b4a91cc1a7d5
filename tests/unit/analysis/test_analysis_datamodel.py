"""The data model (kbtool.analysis.datamodel): globals with roles, data items, references."""

from __future__ import annotations

import pytest

from kbtool.analysis.datamodel import build_data_model, read_memory
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS, build_wat, have_wabt
from tests.support.paths import FIXTURES, ROOT

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    data = build_wat("datamodel", tmp_path_factory.mktemp("dm")).read_bytes()
    a = analyze_module(data)
    return a, build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))


def test_globals_get_roles_and_names(model):
    _a, dm = model
    by = {g.index: g for g in dm.globals}
    assert by[0].name == "__stack_pointer" and by[0].role == "stack_pointer"
    assert (by[0].reads, by[0].writes) == (1, 1)
    assert by[1].name == "__heap_base" and by[1].confidence == 1.0
    assert by[2].name is None and (by[2].reads, by[2].writes) == (1, 1)


def test_items_are_cut_and_classified(model):
    _a, dm = model
    kinds = {it.address: (it.kind, it.label) for it in dm.items}
    assert kinds[1024] == ("cstring", "s_create_table_s")
    assert dm.item_at(1030).address == 1024  # inside the string and its padding
    assert kinds[1056][0] == "numeric" and kinds[1060][0] == "zero"
    # indexed, loaded and called through call_indirect: a function-pointer table
    assert kinds[1072][0] == "funcptr_table"
    assert dm.item_at(1072).targets[:3] == [1, 2, 3]


def test_references_from_code(model):
    _a, dm = model
    refs = {(r.func_index, r.kind, r.target_kind, r.target) for r in dm.refs}
    assert (1, "addr", "data", 1024) in refs  # the string passed to puts
    assert (1, "load", "data", 1056) in refs  # i32.const 0; i32.load offset=1056
    assert (1, "store", "data", 1060) in refs  # i32.const 0; ...; i32.store offset=1060
    assert (2, "funcptr", "data", 1072) in refs
    assert (2, "call_indirect", "table", 0) in refs
    assert (2, "write", "global", 2) in refs
    assert (3, "load", "data", 1056) in refs  # a static array indexed by p0 (memarg offset)
    assert dm.item_at(1024).refs == 1


def test_read_memory_bounds(model):
    a, _dm = model
    assert read_memory(a, 1024, 6) == b"create"
    assert read_memory(a, 1020, 8) == b"\0\0\0\0crea"  # bytes no segment sets read as zero
    assert read_memory(a, 60000, 4) is None
    assert read_memory(a, -1, 4) is None


def test_interior_string_reference_is_not_an_item():
    """``"directory" + 1`` refers into a string: the string stays one item."""
    demo = CORPUS / "gt" / "zstd-1.5.5.O2.stripped.wasm"
    if not demo.exists():
        pytest.skip("corpus absent")
    data = demo.read_bytes()
    a = analyze_module(data)
    dm = build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    strings = [it for it in dm.items if it.kind == "cstring"]
    assert len(strings) > 50
    # every string item starts at a string start: the byte before it is not text
    for it in strings:
        before = read_memory(a, it.address - 1, 1)
        assert before is None or not (0x20 <= before[0] < 0x7F), (hex(it.address), it.text)
    labels = [it.label for it in dm.items]
    assert len(labels) == len(set(labels))  # labels are unique


GO_LITERALS = (
    "needle-in-a-haystack",
    "found the needle",
    "nothing found here",
    "a third literal string",
)


@pytest.fixture(scope="module")
def go_module(tmp_path_factory):
    import os
    import shutil
    import subprocess

    if shutil.which("go") is None:
        pytest.skip("go not installed")
    out = tmp_path_factory.mktemp("go") / "strings.wasm"
    src = FIXTURES / "go" / "strings" / "main.go"
    env = dict(
        os.environ,
        GOOS="js",
        GOARCH="wasm",
        CGO_ENABLED="0",
        GOCACHE=os.environ.get("GOCACHE", "/tmp/kbtool-go-cache"),
    )
    subprocess.run(
        ["go", "build", "-o", str(out), str(src)],
        check=True,
        env=env,
        cwd=src.parent,
        capture_output=True,
    )
    return out.read_bytes()


def test_go_string_literals_are_items_with_xrefs(go_module):
    from kbtool.wasm.gosyms import recover_go_names

    a = analyze_module(go_module)
    dm = build_data_model(a, go_module, go=True)
    names = recover_go_names(a.module).names
    for text in GO_LITERALS:
        items = [it for it in dm.items if it.text == text]
        assert len(items) == 1 and items[0].kind == "gostring", text
        it = items[0]
        assert it.size == len(text)  # cut at its length: no neighbour glued on
        users = {
            r.func_index
            for r in dm.refs
            if r.target_kind == "data" and it.address <= r.target < it.address + it.size
        }
        assert "main.main" in {names.get(u) for u in users}, text
    g = {x.index: x.name for x in dm.globals}
    assert g[0] == "SP" and g[2] == "g"  # Go's own globals


def test_fast_scan_matches_the_careful_decoder():
    """The inlined scan gives exactly the references of the careful decoder's walk."""

    from kbtool.analysis import datamodel as dmod

    demo = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
    data = demo.read_bytes()
    a = analyze_module(data)
    segs = dmod.segments(a)
    lo, hi = 1024, max(b + len(x) for b, x, _ in segs)
    n = 0
    for f in a.functions:
        if f.imported:
            continue
        fast = dmod.function_refs(data, f.index, f.body_offset, f.body_size, lo, hi)
        slow = list(dmod.function_refs_careful(data, f.index, f.body_offset, f.body_size, lo, hi))
        assert fast == slow, f.index
        n += len(fast)
    assert n > 1000


def test_role_labels_from_the_functions_around(tmp_path):
    """errno (what __errno_location returns), the malloc family's static state merged into
    one item, a function-pointer table named from what it holds, a table of string pointers
    from its first string."""
    from kbtool.analysis.datamodel import role_labels

    data = build_wat("roles", tmp_path).read_bytes()
    a = analyze_module(data)
    dm = build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    before = {it.label for it in dm.items}
    assert "errno" not in before and "malloc_state" not in before
    names = {
        0: "__errno_location",
        1: "set_errno",
        2: "malloc",
        3: "free",
        4: "cmp_int",
        5: "cmp_str",
        6: "cmp_len",
        7: "sort_items",
        8: "name_of",
    }
    role_labels(dm, a, names)
    by = {it.label: it for it in dm.items}
    assert by["errno"].address == 2048
    state = by["malloc_state"]
    assert state.address == 4096 and state.size >= 16  # fields 0, 4, 8, 12 as one item
    assert dm.item_at(4104).label == "malloc_state"  # a field is inside it
    assert by["ftable_cmp"].kind == "funcptr_table"
    assert by["strtab_first_name"].kind == "pointer_table"
    labels = [it.label for it in dm.items]
    assert len(labels) == len(set(labels))
