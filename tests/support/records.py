"""Hand-made :class:`FuncRecord` s for the matcher tests: instruction streams, defined and
imported functions with hashes nobody else has unless a test gives them, and the readings
of a match list (old -> new pairs, matches by new index)."""

from __future__ import annotations

import itertools
import random
from array import array
from types import SimpleNamespace

from kbtool.identity.matcher import FuncRecord, Match
from kbtool.identity.records import replace

_UNIQUE = itertools.count()


def ops(*ids: int) -> bytes:
    return array("H", ids).tobytes()


def body(seed: int, n: int = 40) -> list[int]:
    """A deterministic pseudo-random instruction stream (op ids < 200)."""
    rng = random.Random(seed)
    return [rng.randrange(200) for _ in range(n)]


def rec(index: int, **kw) -> FuncRecord:
    code = kw.pop("code", None)
    if code is not None:
        kw.setdefault("ops", ops(*code))
        kw.setdefault("instr_count", len(code))
        kw.setdefault("body_size", 2 * len(code))
    kw.setdefault("type_sig", "(i32) -> i32")
    uniq = next(_UNIQUE)  # hashes nobody else has unless a test says otherwise
    kw.setdefault("body_hash", f"body-{uniq}")
    kw.setdefault("shape_hash", f"shape-{uniq}")
    return FuncRecord(index=index, **kw)


def imp(index: int, name: str, sig: str = "(i32) -> i32") -> FuncRecord:
    return FuncRecord(index=index, imported=True, import_name=name, type_sig=sig)


def pairs(matches: list[Match]) -> dict[int, int]:
    return {m.old_index: m.new_index for m in matches}


def by_new(matches: list[Match]) -> dict[int, Match]:
    return {m.new_index: m for m in matches}


def random_releases(seed: int) -> tuple[list[FuncRecord], list[FuncRecord]]:
    """A random module and a later release of it: functions inserted and dropped, many
    bodies changed a little (other hashes, the same signature and mostly the same code),
    calls kept through the renumbering."""
    rnd = random.Random(seed)
    n = rnd.randint(30, 120)
    sigs = ["(i32)->i32", "(i32,i32)->nil", "()->nil", "(i32)->nil"]
    old = []
    for i in range(n):
        imported = i < 3
        old.append(
            FuncRecord(
                index=i,
                imported=imported,
                import_name=f"env.f{i}" if imported else None,
                type_sig=rnd.choice(sigs),
                body_hash=None if imported else f"b{i}",
                shape_hash=None if imported else f"s{i}",
                calls=() if imported else tuple(rnd.sample(range(n), rnd.randint(0, 16))),
                consts=tuple(rnd.sample(range(60), rnd.randint(0, 5))),
                ops=bytes(rnd.randrange(30) for _ in range(2 * rnd.randint(2, 40))),
                instr_count=rnd.randint(4, 60),
                table_slots=(i,) if rnd.random() < 0.4 else (),
            )
        )
    keep = [r for r in old if r.imported or rnd.random() < 0.9]
    new_of: dict[int, int] = {}
    layout: list[FuncRecord | None] = []
    for r in keep:
        if not r.imported and rnd.random() < 0.08:
            layout.append(None)  # a function new in this release
        layout.append(r)
    for j, r in enumerate(layout):
        if r is not None:
            new_of[r.index] = j
    new = []
    for j, r in enumerate(layout):
        if r is None:
            new.append(
                FuncRecord(
                    index=j,
                    type_sig=rnd.choice(sigs),
                    body_hash=f"n{j}",
                    shape_hash=f"n{j}",
                    ops=bytes(rnd.randrange(30) for _ in range(2 * rnd.randint(2, 40))),
                    instr_count=rnd.randint(4, 60),
                )
            )
            continue
        changed = not r.imported and rnd.random() < 0.6
        ops = bytearray(r.ops)
        if changed and ops:
            ops[rnd.randrange(len(ops))] = rnd.randrange(30)
        new.append(
            FuncRecord(
                index=j,
                imported=r.imported,
                import_name=r.import_name,
                type_sig=r.type_sig,
                body_hash=f"c{r.body_hash}" if changed else r.body_hash,
                shape_hash=f"c{r.shape_hash}" if changed and rnd.random() < 0.8 else r.shape_hash,
                calls=tuple(new_of[c] for c in r.calls if c in new_of),
                consts=r.consts,
                ops=bytes(ops),
                instr_count=r.instr_count + (rnd.randint(-2, 2) if changed else 0),
                table_slots=r.table_slots,
            )
        )
    return old, new


def view(old: list, new: list, pairs: list[tuple]) -> SimpleNamespace:
    """A pairing as the review checks read it: (old, new, method[, score])."""
    by_new = {}
    for o, n, m, *rest in pairs:
        score = rest[0] if rest else 0.8
        by_new[n] = SimpleNamespace(old_index=o, new_index=n, score=score, review=False, method=m)
    return SimpleNamespace(
        old_recs={r.index: r for r in old},
        new_recs={r.index: r for r in new},
        by_new=by_new,
        by_old={p.old_index: p for p in by_new.values()},
    )


def edited(code: list[int], every: int = 7) -> list[int]:
    """``code`` with every ``every``-th instruction changed (a rebuild of the same function)."""
    return [(op + 1) % 200 if i % every == 0 else op for i, op in enumerate(code)]


def with_lookalikes(recs: list[FuncRecord], seed: int, families: int = 4) -> list[FuncRecord]:
    """``recs`` with a few families of look-alikes: members given one member's signature
    and code (the family review's rivals)."""
    rnd = random.Random(seed)
    out = list(recs)
    defined = [k for k, r in enumerate(out) if not r.imported]
    for _ in range(families):
        group = rnd.sample(defined, min(len(defined), rnd.randint(2, 5)))
        t = out[group[0]]
        for k in group[1:]:
            out[k] = replace(out[k], type_sig=t.type_sig, ops=t.ops)
    return out
