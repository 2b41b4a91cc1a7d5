"""The table passes of the data labels over the compiled positions of the tables
(``kind_positions``, ``item_starts``): several biased string tables in one module (padding
inserted before some, a previous item taken into others, both in a row) get the items the
item-by-item pass gave (kept here as the oracle), and every item the same label."""

from __future__ import annotations

import subprocess

import pytest

from kbtool.analysis import datalabels, datawalk_active
from kbtool.analysis.dataitems import read_memory
from kbtool.analysis.datalabels import ARRAY_ALIGN, _into_string, role_labels
from kbtool.analysis.datamodel import build_data_model
from kbtool.analysis.datatypes import DataItem
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from testkit.wasmbuild import have_wabt


def _le(*words: int) -> str:
    return "".join(f"\\{b:02x}" for w in words for b in w.to_bytes(4, "little"))


def _wat() -> str:
    # strings at 1024.., then tables: some read 4 bytes before their array (a null word of
    # padding), some 4 bytes into it (the pointer before joins them), several in a row
    strs = "alpha\\00beta\\00gamma\\00delta\\00"
    S = (1024, 1030, 1035, 1041)
    parts = [f'(data (i32.const 1024) "{strs}")']
    loads = []
    base = 1088
    for t in range(6):
        a = base + 64 * t
        if t % 2 == 0:  # azType[i - 1]: null word, then the array at a + 16 - 12
            parts.append(f'(data (i32.const {a + 4}) "{_le(0, 0, 0, *S)}")')
            loads.append(a + 12)
        else:  # typenames[t + 1]: a number, then the pointers from a 16-byte boundary
            parts.append(f'(data (i32.const {a - 4}) "{_le(7, *S, *S)}")')
            loads.append(a + 4)
            # the item before starts at the array (taken whole: deleted) or before it (cut)
            loads.append(a if t % 4 == 3 else a - 4)
    body = "(i32.const 0)"
    for off in loads:
        body = f"(i32.add {body} (i32.load offset={off} (i32.shl (local.get 0) (i32.const 2))))"
    return (
        "(module (memory 1) (global $sp (mut i32) (i32.const 66560))\n"
        + "\n".join(parts)
        + f'\n(func (export "f") (param i32) (result i32) {body}))'
    )


def _old_align_tables(model, analysis) -> None:
    """The item-by-item pass the compiled positions replaced (the oracle)."""
    items = model.items
    k = 0
    while k < len(items):
        it = items[k]
        a = it.address
        if it.kind != "pointer_table" or a % ARRAY_ALIGN == 0 or a % 4 or it.size < 8:
            k += 1
            continue
        up = a + (-a) % ARRAY_ALIGN
        lead = (up - a) // 4
        if up < a + it.size and it.targets[:lead] == [0] * lead and any(it.targets[lead:]):
            it.address, it.size, it.targets = up, it.size - (up - a), it.targets[lead:]
            pad = DataItem(address=a, size=up - a, kind="zero", segment=it.segment)
            pad.label = f"zero_{a:x}"
            items.insert(k, pad)
            model._starts = []
            k += 2
            continue
        down = a - a % ARRAY_ALIGN
        prev = items[k - 1] if k > 0 else None
        if (
            prev is not None
            and prev.kind in ("numeric", "pointer_table")
            and prev.address <= down
            and prev.address + prev.size == a
        ):
            raw = read_memory(analysis, down, a - down) or b""
            words = [int.from_bytes(raw[q : q + 4], "little") for q in range(0, len(raw), 4)]
            if words and all(_into_string(model, w) for w in words if w) and any(words):
                it.address, it.size, it.targets = down, it.size + (a - down), words + it.targets
                if prev.address == down:
                    del items[k - 1]
                    k -= 1
                else:
                    prev.size = down - prev.address
                    prev.targets = []
                model._starts = []
        k += 1


def _state(model) -> list[tuple]:
    return [(it.address, it.size, it.kind, list(it.targets), it.label) for it in model.items]


@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")
def test_tables_pass_gives_the_item_by_item_passs_items(tmp_path, monkeypatch):
    (tmp_path / "t.wat").write_text(_wat())
    subprocess.run(
        ["wat2wasm", str(tmp_path / "t.wat"), "-o", str(tmp_path / "t.wasm")], check=True
    )
    data = (tmp_path / "t.wasm").read_bytes()
    a = analyze_module(data)
    sp = stack_pointer_global(a, data)
    new = build_data_model(a, data, stack_pointer=sp)
    old = build_data_model(a, data, stack_pointer=sp)
    assert _state(new) == _state(old)
    datalabels.align_tables(new, a)
    _old_align_tables(old, a)
    assert _state(new) == _state(old)
    moved = [it for it in new.items if it.kind == "pointer_table" and it.address % 16 == 0]
    assert len(moved) >= 4  # both kinds of bias were met, several times
    assert any(it.kind == "zero" and it.label.startswith("zero_") for it in new.items)
    # and the whole labelling: the same labels as with the item-by-item pass
    new = build_data_model(a, data, stack_pointer=sp)
    old = build_data_model(a, data, stack_pointer=sp)
    role_labels(new, a, {})
    monkeypatch.setattr(datalabels, "align_tables", _old_align_tables)
    role_labels(old, a, {})
    assert _state(new) == _state(old)
    assert sum(1 for it in new.items if (it.label or "").startswith("strtab_")) >= 4


def test_kind_positions_and_item_starts():
    items = [
        DataItem(address=16 * i + 1024, size=16, kind=k, segment=0)
        for i, k in enumerate(["numeric", "pointer_table", "cstring", "pointer_table", "zero"])
    ]
    mod = datawalk_active.ITEMS
    assert mod.kind_positions(items, "pointer_table") == [1, 3]
    assert mod.kind_positions(items, "funcptr_table") == []
    assert mod.kind_positions([], "zero") == []
    assert mod.item_starts(items) == [it.address for it in items]
    assert mod.item_starts([]) == []
