"""Library code by propagation (issue #30, session 26): a function joins the library once
every caller of it is library code, whatever order the work list takes; application
callers, entry glue and application exports stop it."""

from __future__ import annotations

from types import SimpleNamespace

from kbtool.services import lineage


def _f(index, calls=(), raw=None, exports=(), imported=False):
    return SimpleNamespace(
        index=index,
        imported=imported,
        import_name="env.x" if imported else None,
        raw_name=raw,
        export_names=tuple(exports),
        calls=list(calls),
        shape_hash=f"s{index}",
        instr_count=100,
    )


def _library(funcs, recognized, monkeypatch, entry=()):
    names = [{"func_index": i, "name": "_start" if i in entry else "memcpy"} for i in recognized]
    monkeypatch.setattr(lineage, "recognize", lambda analysis, data, db: (names, []))
    db = SimpleNamespace(by_shape={})
    return lineage.library_functions(SimpleNamespace(functions=funcs), b"", db)


def test_helpers_called_only_by_library_code_join_it_in_chains(monkeypatch) -> None:
    funcs = [
        _f(0, imported=True),
        _f(1, calls=[2, 2, 3]),  # recognized library code
        _f(2, calls=[4]),  # only 1 calls it: library
        _f(3, calls=[3, 5]),  # recursive: it calls itself, so never joins
        _f(4, calls=[6]),  # only 2 calls it: library (a chain of three)
        _f(5),  # 3 (not library) calls it
        _f(6),  # only 4 calls it
        _f(7, calls=[8]),  # application code
        _f(8),  # called by 7 only: stays out
        _f(9, calls=[10]),  # application code calling ...
        _f(10),  # ... a helper library code calls too
        _f(11, calls=[10]),  # recognized
    ]
    lib = _library(funcs, {1, 11}, monkeypatch)
    assert lib == {1, 2, 4, 6, 11}


def test_entry_glue_and_application_exports_do_not_propagate(monkeypatch) -> None:
    funcs = [
        _f(0, calls=[1]),  # _start: recognized but entry glue
        _f(1),  # called by the entry only: not library
        _f(2, calls=[3, 4]),  # recognized
        _f(3, exports=["my_api"]),  # an application export: never propagated to
        _f(4, raw="helper"),  # named, not runtime, called by library only: still own API
        _f(5, calls=[6]),  # recognized
        _f(6, raw="__helper_rt"),  # not counted as own API when its name is runtime's
    ]
    lib = _library(funcs, {0, 2, 5}, monkeypatch, entry={0})
    assert 1 not in lib and 3 not in lib and 4 not in lib
    assert {0, 2, 5} <= lib
