"""Function matcher: pairs the functions of two versions of a module (pure, stdlib only).

Strongest evidence first (the families Diaphora and BinDiff use), each stage one-to-one
among the functions still unmatched:

1. ``import``    same import "module.field" (minified import names need the call graph)
2. ``body``      exact body hash, unique on both sides. Equal bytes mean equal callees only
                 if the callee indices mean the same thing in both builds, so a body that is
                 unique while its shape is not (wrappers calling different targets at
                 coinciding indices) waits until its callees are matched and agree.
3. ``shape``     normalised shape hash, unique on both sides
4. ``name``      a non-minified export / name-section name present on both sides
5. ``callgraph`` propagation from matched pairs to their callees and callers, iterated to a
                 fixpoint: hash groups inside a neighbourhood (equal groups paired by call
                 order), the single remaining pair, a signature unique in both
                 neighbourhoods, the position between matched anchors of the call sequence,
                 a clearly best pair inside a small neighbourhood. The function table
                 (element segments, ``FuncRecord.table_slots``) is one more ordered
                 neighbourhood.
6. ``similarity`` (``fuzzy=True`` only) a feature score (op bigrams, size, idf-weighted
                 constants and strings, loops, call_indirect, agreement of matched callees
                 and callers, position between matched anchors of the function order,
                 signature) with a global best-first one-to-one assignment (lazy greedy,
                 scores refreshed as neighbours get matched) in rounds of falling
                 thresholds, each demanding a lead over the second candidate; from the
                 middle rounds on, an order-preserving alignment (LCS) of the unmatched
                 functions between consecutive anchors, which pairs families of
                 near-identical functions by their order; call-graph propagation after each
                 step. Candidates come from blocking (signature + size window, rare strings
                 and constants, neighbours of matched functions), never all pairs.
   Leftovers: equal bodies in groups of equal size paired by index order, minified
   imports with the same name and signature (both flagged for review).

``review`` is set when the score is below ``REVIEW_SCORE`` or the pair was not at least
``REVIEW_MARGIN`` ahead of the best alternative of either function (alternatives taken by
a match that was itself flagged still count).

With ``fuzzy=False`` only stages 1-5 run (what ingest uses to carry identities).

Determinism: records are ordered by index before anything else, every tie is broken by
indices and sums over sets are exactly rounded, so the result depends neither on the
input order nor on hash seeds.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kbtool.diff.features import FeatureCache, is_minified_name, module_is_minified, size_ratio

__all__ = [
    "FuncRecord",
    "Match",
    "match_functions",
    "records_from_analysis",
    "REVIEW_SCORE",
    "REVIEW_MARGIN",
]

REVIEW_SCORE = 0.6  # matches scoring below this are flagged for review
REVIEW_MARGIN = 0.05  # ... and those whose best candidate is not this far ahead of the second

_SCORE = {"import": 1.0, "body": 1.0, "shape": 0.99, "name": 0.95}


@dataclass(slots=True)
class FuncRecord:
    """What the matcher knows about one function of one version."""

    index: int
    stable_id: str | None = None
    imported: bool = False
    import_name: str | None = None  # "module.field" for imports
    type_sig: str = ""
    body_hash: str | None = None
    shape_hash: str | None = None
    names: tuple[str, ...] = ()  # non-minified export names + raw (name-section) name
    calls: tuple[int, ...] = ()  # distinct direct callees, order of first call
    strings: tuple[str, ...] = ()
    consts: tuple[int, ...] = ()
    ops: bytes = b""  # array('H') of op ids
    instr_count: int = 0
    body_size: int = 0
    loops: int = 0
    call_indirect: int = 0
    # positions in the module's element segments (function tables), in segment order; the
    # table is one more ordered "caller" (vtables, API tables), optional
    table_slots: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Match:
    old_index: int
    new_index: int
    score: float
    method: str  # "import", "body", "shape", "name", "callgraph", "similarity"
    review: bool


# --------------------------------------------------------------------------- records


def records_from_analysis(analysis, stable_ids: dict[int, str] | None = None) -> list[FuncRecord]:
    """FuncRecords of every function (imports first) of a ``kbtool.wasm.ModuleAnalysis``.

    ``names`` keeps the export names and the name-section name the binary carries, minus
    minified ones (length <= 2, ``$a``; in a module whose exports are mostly minified, also
    three-character identifiers).
    """
    funcs = analysis.functions
    minified = module_is_minified(n for f in funcs for n in (f.export_names or ()))
    slots: dict[int, list[int]] = defaultdict(list)
    pos = 0
    for seg in getattr(getattr(analysis, "module", None), "elements", None) or ():
        for fi in getattr(seg, "func_indices", None) or ():
            if fi is not None:
                slots[fi].append(pos)
            pos += 1
    out: list[FuncRecord] = []
    for f in funcs:
        cand = list(f.export_names or ())
        if f.raw_name:
            cand.append(f.raw_name)
        names = tuple(
            n for n in dict.fromkeys(cand) if not is_minified_name(n, module_minified=minified)
        )
        if f.imported:
            imp = f"{f.import_module}.{f.import_field}"
        else:
            imp = None
        out.append(
            FuncRecord(
                index=f.index,
                stable_id=stable_ids.get(f.index) if stable_ids else None,
                imported=bool(f.imported),
                import_name=imp,
                type_sig=f.type_sig,
                body_hash=None if f.imported else f.body_hash,
                shape_hash=None if f.imported else f.shape_hash,
                names=names,
                calls=tuple(dict.fromkeys(f.calls)),
                strings=tuple(f.strings or ()),
                consts=tuple(f.consts or ()),
                ops=bytes(f.ops or b""),
                instr_count=f.instr_count or 0,
                body_size=f.body_size or 0,
                loops=f.loops or 0,
                call_indirect=f.call_indirect or 0,
                table_slots=tuple(slots.get(f.index, ())),
            )
        )
    return out


# --------------------------------------------------------------------------- helpers


def _import_field_minified(import_name: str | None) -> bool:
    if not import_name:
        return False
    _mod, _, field = import_name.partition(".")
    return is_minified_name(field)


def _plausible_size(a: int, b: int) -> bool:
    """Sizes close enough for the two functions to be versions of one another."""
    return abs(a - b) <= 12 or size_ratio(a, b) >= 0.33


def _weak_name(name: str) -> bool:
    """Short names (3 characters) are only trusted together with an equal signature."""
    return len(name) <= 3


class _Side:
    __slots__ = ("recs", "order", "callees", "callers", "table")

    def __init__(self, recs: Iterable[FuncRecord]) -> None:
        by_index: dict[int, FuncRecord] = {}
        for r in recs:
            if r.index in by_index:
                raise ValueError(f"duplicate function index {r.index}")
            by_index[r.index] = r
        self.order = sorted(by_index)
        self.recs = {i: by_index[i] for i in self.order}
        callees: dict[int, tuple[int, ...]] = {}
        callers: dict[int, list[int]] = {i: [] for i in self.order}
        for i in self.order:
            seq = tuple(c for c in dict.fromkeys(self.recs[i].calls) if c in by_index and c != i)
            callees[i] = seq
            for c in seq:
                callers[c].append(i)
        self.callees = callees
        self.callers = {i: tuple(v) for i, v in callers.items()}
        first = sorted((min(r.table_slots), i) for i, r in self.recs.items() if r.table_slots)
        self.table = tuple(i for _, i in first)


class _Matcher:
    # callgraph acceptance thresholds on the pair similarity
    CG_SINGLE = 0.45  # the only unmatched pair of a neighbourhood, same signature
    CG_SINGLE_XSIG = 0.75  # ... different signature
    CG_UNIQUE_SIG = 0.55  # the only pair of a signature inside a neighbourhood ...
    CG_RIVAL_MARGIN = 0.03  # ... ahead of every other pair of the neighbourhood
    CG_GAP = 0.5  # the only pair between two matched anchors of a call sequence
    CG_BEST = 0.7  # a mutual best inside a small neighbourhood ...
    CG_BEST_MARGIN = 0.15  # ... this far ahead of every alternative
    SMALL_HOOD = 12  # neighbourhoods larger than this only resolve by hashes
    # (similarity threshold, required lead over the second candidate), one round each
    ROUNDS = ((0.85, 0.05), (0.72, 0.05), (0.6, 0.04), (0.5, 0.03), (0.42, 0.02), (0.42, 0.0))
    GAP_FROM = 0.6  # align gaps only once the confident content rounds are done
    GAP_MIN = 0.55  # never align below this similarity
    GAP_SINGLE = 0.4  # a 1x1 gap with the same signature
    GAP_CELLS = 4096
    ALIGN_PAIR = 1.0  # weight of one aligned pair over its similarity (count first)  # largest gap (unmatched old x unmatched new) aligned
    MIN_TINY = 6  # below this many instructions a function carries too little evidence

    def __init__(self, old: Sequence[FuncRecord], new: Sequence[FuncRecord]) -> None:
        self.OLD = _Side(old)
        self.NEW = _Side(new)
        self.o2n: dict[int, int] = {}
        self.n2o: dict[int, int] = {}
        self.result: dict[int, Match] = {}  # by new index
        self.queue: deque[tuple[int, int]] = deque()
        self.queued: set[tuple[int, int]] = set()
        self._feats: FeatureCache | None = None
        self._content: dict[tuple[int, int], tuple[float, float]] = {}
        self.anchor_o: list[int] | None = None
        self._anchors_at = -1
        self._scored: tuple[int, list[tuple[float, int, int]]] | None = None
        self.anchor_n: list[int] = []
        self.span_o = self.span_n = (0, 0)

    # ---------------------------------------------------------------- bookkeeping
    @property
    def feats(self) -> FeatureCache:
        if self._feats is None:
            self._feats = FeatureCache(list(self.OLD.recs.values()), list(self.NEW.recs.values()))
        return self._feats

    def accept(self, o: int, n: int, score: float, method: str, review: bool = False) -> None:
        assert o not in self.o2n and n not in self.n2o
        self.o2n[o] = n
        self.n2o[n] = o
        score = max(0.0, min(1.0, score))
        self.result[n] = Match(o, n, round(score, 4), method, bool(review))
        self._enqueue(o, n)
        # the neighbourhoods of matched neighbours just changed: look at them again
        for x in (*self.OLD.callers[o], *self.OLD.callees[o]):
            y = self.o2n.get(x)
            if y is not None:
                self._enqueue(x, y)
        for y in (*self.NEW.callers[n], *self.NEW.callees[n]):
            x = self.n2o.get(y)
            if x is not None:
                self._enqueue(x, y)

    def _enqueue(self, o: int, n: int) -> None:
        if (o, n) not in self.queued:
            self.queued.add((o, n))
            self.queue.append((o, n))

    def unmatched_old(self) -> list[int]:
        return [i for i in self.OLD.order if i not in self.o2n]

    def unmatched_new(self) -> list[int]:
        return [i for i in self.NEW.order if i not in self.n2o]

    def callee_check(self, o: int, n: int) -> tuple[int, int, int]:
        """(agree, disagree, defined callees) of the pair's callees under the current match:
        a callee matched to a callee of the other side agrees, matched elsewhere disagrees."""
        co = [c for c in self.OLD.callees[o] if not self.OLD.recs[c].imported]
        cn = [c for c in self.NEW.callees[n] if not self.NEW.recs[c].imported]
        o2n, n2o = self.o2n, self.n2o
        agree = disagree = 0
        if len(co) == len(cn):
            for a, b in zip(co, cn, strict=True):
                m = o2n.get(a)
                if m is not None:
                    if m == b:
                        agree += 1
                    else:
                        disagree += 1
                elif b in n2o:
                    disagree += 1
        else:
            mapped = {o2n[a] for a in co if a in o2n}
            known = {b for b in cn if b in n2o}
            agree = len(mapped & known)
            disagree = len(mapped ^ known)
        return agree, disagree, max(len(co), len(cn))

    # ---------------------------------------------------------------- similarity
    def content(self, o: int, n: int) -> tuple[float, float]:
        key = (o, n)
        v = self._content.get(key)
        if v is None:
            v = self.feats.content_similarity(self.OLD.recs[o], self.NEW.recs[n])
            self._content[key] = v
        return v

    def _graph_term(self, lo: Sequence[int], ln: Sequence[int]) -> float | None:
        """Agreement of two neighbour lists under the current match: a neighbour matched to
        a neighbour of the other side counts 1, a pair of still unknown ones counts 1/2."""
        if not lo and not ln:
            return None
        o2n, n2o = self.o2n, self.n2o
        mapped = {o2n[x] for x in lo if x in o2n}
        unk_o = len(lo) - len(mapped)
        unk_n = sum(1 for y in ln if y not in n2o)
        agree = len(mapped.intersection(ln)) if mapped else 0
        return (agree + 0.5 * min(unk_o, unk_n)) / max(len(lo), len(ln))

    def update_anchors(self) -> None:
        if self._anchors_at == len(self.result):
            return
        self._anchors_at = len(self.result)
        self._compute_anchors()

    def _compute_anchors(self) -> None:
        """Matched pairs that keep their relative order in both index sequences.

        Linkers lay functions out in object-file and source order; between two builds most
        matched pairs keep their order, so an unmatched function most likely sits between
        the images of its nearest matched neighbours in index order (a diff of the function
        sequence). Crossing pairs are dropped by a longest increasing subsequence.
        """
        pairs = sorted((o, n) for n, o in self.n2o.items() if not self.NEW.recs[n].imported)
        tails: list[int] = []  # new index at the end of the best chain of each length
        tail_pos: list[int] = []
        prev = [-1] * len(pairs)
        for k, (_o, n) in enumerate(pairs):
            j = bisect.bisect_left(tails, n)
            if j == len(tails):
                tails.append(n)
                tail_pos.append(k)
            else:
                tails[j] = n
                tail_pos[j] = k
            prev[k] = tail_pos[j - 1] if j else -1
        chain = []
        k = tail_pos[-1] if tail_pos else -1
        while k >= 0:
            chain.append(pairs[k])
            k = prev[k]
        chain.reverse()
        self.anchor_o = [o for o, _ in chain]
        self.anchor_n = [n for _, n in chain]
        self.span_o = (self.OLD.order[0] - 1, self.OLD.order[-1] + 1) if self.OLD.order else (0, 0)
        self.span_n = (self.NEW.order[0] - 1, self.NEW.order[-1] + 1) if self.NEW.order else (0, 0)

    def locality(self, o: int, n: int) -> float | None:
        """1.0 when ``n`` sits where ``o`` sits between matched anchors, 0.0 outside the gap."""
        ao = self.anchor_o
        if ao is None:
            return None
        an = self.anchor_n
        k = bisect.bisect_left(ao, o)
        lo_o, lo_n = (ao[k - 1], an[k - 1]) if k else (self.span_o[0], self.span_n[0])
        hi_o, hi_n = (ao[k], an[k]) if k < len(ao) else (self.span_o[1], self.span_n[1])
        if not lo_n < n < hi_n:
            return 0.0
        fo = (o - lo_o) / (hi_o - lo_o)
        fn = (n - lo_n) / (hi_n - lo_n)
        return 0.5 + 0.5 * (1.0 - abs(fo - fn))

    def similarity(self, o: int, n: int, sig_penalty: bool = True) -> float:
        ro = self.OLD.recs[o]
        rn = self.NEW.recs[n]
        total, wsum = self.content(o, n)
        g = self._graph_term(self.OLD.callees[o], self.NEW.callees[n])
        if g is not None:
            total += 0.25 * g
            wsum += 0.25
        g = self._graph_term(self.OLD.callers[o], self.NEW.callers[n])
        if g is not None:
            total += 0.15 * g
            wsum += 0.15
        loc = self.locality(o, n)
        if loc is not None:
            total += 0.2 * loc
            wsum += 0.2
        s = total / wsum if wsum else 0.0
        if sig_penalty and ro.type_sig != rn.type_sig:
            s *= 0.8
        if ro.shape_hash and ro.shape_hash == rn.shape_hash and not self.callee_check(o, n)[1]:
            s = max(s, 0.9)  # same normalised code, callees not contradicting
        # very small functions carry little evidence; temper their score
        small = min(ro.instr_count, rn.instr_count)
        if small < self.MIN_TINY:
            s *= 0.85 + 0.15 * small / self.MIN_TINY
        return s

    # ---------------------------------------------------------------- stages 1-4
    def stage_imports(self) -> None:
        go: dict[str, list[int]] = defaultdict(list)
        gn: dict[str, list[int]] = defaultdict(list)
        for i in self.unmatched_old():
            r = self.OLD.recs[i]
            if r.imported and r.import_name and not _import_field_minified(r.import_name):
                go[r.import_name].append(i)
        for i in self.unmatched_new():
            r = self.NEW.recs[i]
            if r.imported and r.import_name and not _import_field_minified(r.import_name):
                gn[r.import_name].append(i)
        for key in sorted(go):
            lo, ln = go[key], gn.get(key)
            if ln and len(lo) == len(ln):  # the same import twice is the same function
                for o, n in zip(lo, ln, strict=True):
                    self.accept(o, n, _SCORE["import"], "import")

    def _groups(self, attr: str) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        go: dict[str, list[int]] = defaultdict(list)
        gn: dict[str, list[int]] = defaultdict(list)
        for i in self.unmatched_old():
            r = self.OLD.recs[i]
            h = getattr(r, attr)
            if h and not r.imported:
                go[h].append(i)
        for i in self.unmatched_new():
            r = self.NEW.recs[i]
            h = getattr(r, attr)
            if h and not r.imported:
                gn[h].append(i)
        return go, gn

    def stage_hash(self, attr: str, method: str) -> int:
        go, gn = self._groups(attr)
        if attr == "body_hash":
            # Equal bytes name the same callees, globals and types only when those indices
            # mean the same in both versions. A body unique while its shape is not (wrappers
            # calling different targets at coinciding indices) needs its callees verified.
            so, sn = self._groups("shape_hash")
        pairs = []
        for h, lo in go.items():
            ln = gn.get(h)
            if not (ln and len(lo) == 1 and len(ln) == 1):
                continue
            o, n = lo[0], ln[0]
            agree, disagree, total = self.callee_check(o, n)
            if disagree:
                continue
            if attr == "body_hash":
                sh_o = self.OLD.recs[o].shape_hash
                sh_n = self.NEW.recs[n].shape_hash
                shape_unique = len(so.get(sh_o, ())) <= 1 and len(sn.get(sh_n, ())) <= 1
                if not shape_unique and agree < total:
                    continue
                if not shape_unique and total == 0:
                    continue
            pairs.append((o, n))
        pairs.sort()
        for o, n in pairs:
            self.accept(o, n, _SCORE[method], method)
        return len(pairs)

    def stage_names(self) -> int:
        def index(side: _Side, matched: dict[int, int]) -> dict[str, list[int]]:
            g: dict[str, list[int]] = defaultdict(list)
            for i in side.order:
                for nm in side.recs[i].names:
                    g[nm].append(i)
            # a name shared by several functions of one side identifies none of them;
            # only then drop the already matched ones
            return {k: v for k, v in g.items() if len(v) == 1 and v[0] not in matched}

        go = index(self.OLD, self.o2n)
        gn = index(self.NEW, self.n2o)
        cand_o: dict[int, set[int]] = defaultdict(set)
        cand_n: dict[int, set[int]] = defaultdict(set)
        for nm, lo in go.items():
            ln = gn.get(nm)
            if not ln:
                continue
            o, n = lo[0], ln[0]
            ro, rn = self.OLD.recs[o], self.NEW.recs[n]
            if ro.imported != rn.imported:
                continue
            if _weak_name(nm) and ro.type_sig != rn.type_sig:
                continue
            cand_o[o].add(n)
            cand_n[n].add(o)
        count = 0
        for o in sorted(cand_o):
            ns = cand_o[o]
            if len(ns) != 1:
                continue
            n = next(iter(ns))
            if len(cand_n[n]) != 1:
                continue
            self.accept(o, n, _SCORE["name"], "name")
            count += 1
        return count

    # ---------------------------------------------------------------- stage 5
    def propagate(self) -> None:
        OLD, NEW = self.OLD, self.NEW
        self.update_anchors()
        while True:
            while self.queue:
                o, n = self.queue.popleft()
                self.queued.discard((o, n))
                self._resolve(OLD.callees[o], NEW.callees[n], ordered=True)
                self._resolve(OLD.callers[o], NEW.callers[n], ordered=False)
            # the function table(s) as one more ordered neighbourhood of a matched root
            if not (OLD.table and NEW.table):
                break
            before = len(self.result)
            self._resolve(OLD.table, NEW.table, ordered=True)
            if len(self.result) == before:
                break

    def _resolve(self, lo: Sequence[int], ln: Sequence[int], ordered: bool) -> None:
        o2n, n2o = self.o2n, self.n2o
        uo = [x for x in lo if x not in o2n]
        if not uo:
            return
        un = [y for y in ln if y not in n2o]
        if not un:
            return
        OLD, NEW = self.OLD.recs, self.NEW.recs

        # (a) hash groups inside the neighbourhood
        for attr, score in (("body_hash", 0.99), ("shape_hash", 0.97)):
            go: dict[str, list[int]] = defaultdict(list)
            gn: dict[str, list[int]] = defaultdict(list)
            for x in uo:
                h = getattr(OLD[x], attr)
                if h:
                    go[h].append(x)
            for y in un:
                h = getattr(NEW[y], attr)
                if h:
                    gn[h].append(y)
            if attr == "body_hash":
                shapes_o = Counter(OLD[x].shape_hash for x in uo)
                shapes_n = Counter(NEW[y].shape_hash for y in un)
            hit = False
            for h, xs in go.items():
                ys = gn.get(h)
                if not ys or len(xs) != len(ys) or (len(xs) > 1 and not ordered):
                    continue
                pairs = list(zip(xs, ys, strict=True))
                checks = [self.callee_check(x, y) for x, y in pairs]
                if any(c[1] for c in checks):
                    continue
                if attr == "body_hash" and len(xs) == 1:
                    x, y = xs[0], ys[0]
                    dup = shapes_o[OLD[x].shape_hash] > 1 or shapes_n[NEW[y].shape_hash] > 1
                    agree, _, total = checks[0]
                    if dup and (total == 0 or agree < total):
                        continue
                # several equal bodies called in the same order: pair by call position
                s = score if len(xs) == 1 else score - 0.04
                for x, y in pairs:
                    self.accept(x, y, s, "callgraph")
                hit = True
            if hit:
                uo = [x for x in uo if x not in o2n]
                un = [y for y in un if y not in n2o]
                if not uo or not un:
                    return

        # (b) imports (no body): the only unmatched import pair with the same signature
        io = [x for x in uo if OLD[x].imported]
        inn = [y for y in un if NEW[y].imported]
        if io and inn:
            self._resolve_imports(io, inn)
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
        uo = [x for x in uo if not OLD[x].imported]
        un = [y for y in un if not NEW[y].imported]
        if not uo or not un:
            return
        if len(uo) > self.SMALL_HOOD or len(un) > self.SMALL_HOOD:
            if ordered:
                self._resolve_gaps(lo, ln)
            return

        # (c) a single unmatched pair
        if len(uo) == 1 and len(un) == 1:
            x, y = uo[0], un[0]
            s = self.similarity(x, y)
            same = OLD[x].type_sig == NEW[y].type_sig
            if s >= (self.CG_SINGLE if same else self.CG_SINGLE_XSIG):
                self.accept(x, y, self._cg_score(s), "callgraph", self._cg_score(s) < REVIEW_SCORE)
            return

        # (d) a signature unique in both neighbourhoods, provided the neighbourhood is not
        # full of look-alikes (a signature change can make the wrong pair the unique one)
        so: dict[str, list[int]] = defaultdict(list)
        sn: dict[str, list[int]] = defaultdict(list)
        for x in uo:
            so[OLD[x].type_sig].append(x)
        for y in un:
            sn[NEW[y].type_sig].append(y)
        hit = False
        for sig, xs in so.items():
            ys = sn.get(sig)
            if not (ys and len(xs) == 1 and len(ys) == 1):
                continue
            x, y = xs[0], ys[0]
            s = self.similarity(x, y)
            if s < self.CG_UNIQUE_SIG:
                continue
            plain = self.similarity(x, y, sig_penalty=False)
            cx, cy = OLD[x].instr_count, NEW[y].instr_count
            rival = max(
                [
                    self.similarity(x, y2, sig_penalty=False)
                    for y2 in un
                    if y2 != y and _plausible_size(cx, NEW[y2].instr_count)
                ]
                + [
                    self.similarity(x2, y, sig_penalty=False)
                    for x2 in uo
                    if x2 != x and _plausible_size(OLD[x2].instr_count, cy)
                ],
                default=0.0,
            )
            if plain - rival >= self.CG_RIVAL_MARGIN:
                self.accept(x, y, self._cg_score(s), "callgraph")
                hit = True
        if hit:
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
            if not uo or not un:
                return

        # (e) position between matched anchors in the call sequence
        if ordered:
            self._resolve_gaps(lo, ln)
            uo = [x for x in uo if x not in o2n]
            un = [y for y in un if y not in n2o]
            if not uo or not un:
                return

        # (f) a clear mutual best inside the small neighbourhood
        self._resolve_best(uo, un)

    def _cg_score(self, s: float) -> float:
        # neighbour evidence lifts the similarity: the pair sits where the other's does
        return min(0.95, 0.3 + 0.7 * s)

    def _resolve_imports(self, io: list[int], inn: list[int]) -> None:
        OLD, NEW = self.OLD.recs, self.NEW.recs
        so: dict[str, list[int]] = defaultdict(list)
        sn: dict[str, list[int]] = defaultdict(list)
        for x in io:
            so[OLD[x].type_sig].append(x)
        for y in inn:
            sn[NEW[y].type_sig].append(y)
        for sig, xs in so.items():
            ys = sn.get(sig)
            if ys and len(xs) == 1 and len(ys) == 1:
                x, y = xs[0], ys[0]
                same_name = OLD[x].import_name == NEW[y].import_name
                self.accept(x, y, 0.9 if same_name else 0.7, "callgraph")

    def _resolve_gaps(self, lo: Sequence[int], ln: Sequence[int]) -> None:
        """Callees between the same two matched anchors of both call sequences."""
        o2n, n2o = self.o2n, self.n2o
        pos_n = {y: j for j, y in enumerate(ln)}
        anchors = []  # (i, j) positions of matched pairs, kept monotone
        last_j = -1
        for i, x in enumerate(lo):
            y = o2n.get(x)
            if y is None:
                continue
            j = pos_n.get(y)
            if j is None or j <= last_j:
                continue
            anchors.append((i, j))
            last_j = j
        if not anchors:
            return
        bounds = [(-1, -1), *anchors, (len(lo), len(ln))]
        OLD, NEW = self.OLD.recs, self.NEW.recs
        for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
            xs = [x for x in lo[i0 + 1 : i1] if x not in o2n and not OLD[x].imported]
            ys = [y for y in ln[j0 + 1 : j1] if y not in n2o and not NEW[y].imported]
            if len(xs) == 1 and len(ys) == 1:
                x, y = xs[0], ys[0]
                if OLD[x].type_sig != NEW[y].type_sig:
                    continue
                s = self.similarity(x, y)
                if s >= self.CG_GAP:
                    self.accept(x, y, self._cg_score(s), "callgraph")

    def _resolve_best(self, uo: list[int], un: list[int]) -> None:
        """A pair clearly ahead of every other pair of the neighbourhood that shares one of
        its functions. Rivals are compared without the signature penalty, so a changed
        signature cannot hand the win to a look-alike that happens to keep the old one."""
        OLD, NEW = self.OLD.recs, self.NEW.recs
        plain = {
            (x, y): self.similarity(x, y, sig_penalty=False)
            for x in uo
            for y in un
            if _plausible_size(OLD[x].instr_count, NEW[y].instr_count)
        }
        by_o: dict[int, list[tuple[float, int]]] = defaultdict(list)
        by_n: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for (x, y), p in plain.items():
            by_o[x].append((p, y))
            by_n[y].append((p, x))
        for (x, y), p in sorted(plain.items(), key=lambda kv: (-kv[1], kv[0])):
            if p < self.CG_BEST or x in self.o2n or y in self.n2o:
                continue
            s = self.similarity(x, y)
            if s < self.CG_BEST:
                continue
            second = max(
                [t for t, y2 in by_o[x] if y2 != y and y2 not in self.n2o]
                + [t for t, x2 in by_n[y] if x2 != x and x2 not in self.o2n],
                default=0.0,
            )
            if p - second >= self.CG_BEST_MARGIN:
                self.accept(x, y, self._cg_score(s), "callgraph")

    # ---------------------------------------------------------------- stage 6
    def candidates(self) -> dict[int, set[int]]:
        """Blocking: bounded candidate lists, generated from both sides (so that the margin
        of a pair sees the rivals of both of its functions). Returns new -> {old}."""
        uo = [i for i in self.unmatched_old() if not self.OLD.recs[i].imported]
        un = [i for i in self.unmatched_new() if not self.NEW.recs[i].imported]
        out: dict[int, set[int]] = defaultdict(set)
        if not uo or not un:
            return out
        for n, os_ in self._candidates_one_way(self.NEW, self.OLD, un, uo, self.n2o).items():
            out[n].update(os_)
        for o, ns in self._candidates_one_way(self.OLD, self.NEW, uo, un, self.o2n).items():
            for n in ns:
                out[n].add(o)
        return out

    def _candidates_one_way(
        self, src: _Side, dst: _Side, us: list[int], ud: list[int], s2d: dict[int, int]
    ) -> dict[int, list[int]]:
        WINDOW = 12  # nearest in size with the same signature, each way
        CAP = 40
        RARE = 4  # a string/constant shared by at most this many unmatched functions
        by_sig: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i in ud:
            r = dst.recs[i]
            by_sig[r.type_sig].append((r.instr_count, i))
        for v in by_sig.values():
            v.sort()
        s_index: dict[str, list[int]] = defaultdict(list)
        c_index: dict[int, list[int]] = defaultdict(list)
        for i in ud:
            r = dst.recs[i]
            for s in set(r.strings):
                s_index[s].append(i)
            for c in set(r.consts):
                if c >= 256 or c <= -256:
                    c_index[c].append(i)
        ud_set = set(ud)
        out: dict[int, list[int]] = {}
        for x in us:
            rx = src.recs[x]
            cand: dict[int, float] = {}
            lst = by_sig.get(rx.type_sig)
            if lst:
                k = bisect.bisect_left(lst, (rx.instr_count, -1))
                for cnt, i in lst[max(0, k - WINDOW) : k + WINDOW]:
                    if size_ratio(cnt, rx.instr_count) >= 0.4 or abs(cnt - rx.instr_count) <= 8:
                        cand[i] = cand.get(i, 0.0) + 1.0
            for s in set(rx.strings):
                hits = s_index.get(s)
                if hits and len(hits) <= RARE:
                    for i in hits:
                        cand[i] = cand.get(i, 0.0) + 2.0
            for c in set(rx.consts):
                hits = c_index.get(c)
                if hits and len(hits) <= RARE:
                    for i in hits:
                        cand[i] = cand.get(i, 0.0) + 1.0
            # neighbours of matched neighbours
            for rel_s, rel_d in ((src.callees, dst.callers), (src.callers, dst.callees)):
                for m in rel_s[x]:
                    dm = s2d.get(m)
                    if dm is None:
                        continue
                    hood = rel_d[dm]
                    if len(hood) > 64:
                        continue
                    for i in hood:
                        if i in ud_set:
                            cand[i] = cand.get(i, 0.0) + 1.5
            if not cand:
                continue
            if len(cand) > CAP:
                ic = rx.instr_count
                ranked = sorted(
                    cand, key=lambda i: (-(cand[i] + size_ratio(dst.recs[i].instr_count, ic)), i)
                )
                out[x] = ranked[:CAP]
            else:
                out[x] = list(cand)
        return out

    def similarity_round(self, threshold: float, min_margin: float) -> int:
        """Best-first one-to-one assignment over the blocked candidates.

        Scores go stale as pairs are accepted (the matched-neighbour terms change), so a
        popped pair whose neighbourhood changed since it was scored is scored again and
        pushed back (lazy greedy). A pair is taken only when it is ``min_margin`` ahead of
        every other free candidate of either function; the rest waits for more evidence.
        """
        self.update_anchors()
        state = len(self.result)
        if self._scored is not None and self._scored[0] == state:
            scored = self._scored[1]  # nothing matched since: same candidates, same scores
        else:
            cands = self.candidates()
            scored = [
                (self.similarity(o, n), o, n) for n in sorted(cands) for o in sorted(cands[n])
            ]
            self._scored = (state, scored)
        if not scored:
            return 0
        OLD, NEW = self.OLD, self.NEW
        heap: list[tuple[float, int, int, int]] = []
        alive_o: dict[int, dict[int, float]] = defaultdict(dict)
        alive_n: dict[int, dict[int, float]] = defaultdict(dict)
        for s, o, n in scored:
            heap.append((-s, o, n, 0))
            alive_o[o][n] = s
            alive_n[n][o] = s
        heapq.heapify(heap)
        epoch = 0
        touched_o: dict[int, int] = {}
        touched_n: dict[int, int] = {}
        count = 0
        while heap:
            neg, o, n, seen = heapq.heappop(heap)
            if o in self.o2n or n in self.n2o:
                continue
            if touched_o.get(o, -1) >= seen or touched_n.get(n, -1) >= seen:
                s = self.similarity(o, n)
                alive_o[o][n] = s
                alive_n[n][o] = s
                heapq.heappush(heap, (-s, o, n, epoch + 1))
                continue
            s = -neg
            if s < threshold:
                break
            # rivals still free decide whether to take the pair at all; rivals taken by a
            # match that is itself only a guess (flagged) still count against confidence
            second = tentative = 0.0
            for other, t in alive_n[n].items():
                if other != o:
                    m = self.o2n.get(other)
                    if m is None:
                        second = max(second, t)
                    elif self.result[m].review:
                        tentative = max(tentative, t)
            for other, t in alive_o[o].items():
                if other != n:
                    m = self.n2o.get(other)
                    if m is None:
                        second = max(second, t)
                    elif self.result[other].review:
                        tentative = max(tentative, t)
            margin = s - second
            if margin <= 1e-9 or margin < min_margin:
                continue  # no clear winner yet: wait for more evidence
            review = s < REVIEW_SCORE or s - max(second, tentative) < REVIEW_MARGIN
            self.accept(o, n, s, "similarity", review)
            count += 1
            epoch += 1
            for x in (*OLD.callers[o], *OLD.callees[o]):
                touched_o[x] = epoch
            for y in (*NEW.callers[n], *NEW.callees[n]):
                touched_n[y] = epoch
        return count

    def gap_align(self, threshold: float) -> int:
        """Order-preserving alignment of the unmatched functions between two consecutive
        anchors (a diff of the two function sequences, weighted by similarity).

        Families of near-identical functions (template instances, per-parameter copies)
        defeat content similarity, but the linker keeps them in source order: inside a gap
        the best non-crossing assignment pairs them in order. Matches made here whose
        content alone does not single them out are flagged for review.
        """
        self.update_anchors()
        ao, an = self.anchor_o, self.anchor_n
        if ao is None:
            return 0
        OLD, NEW = self.OLD, self.NEW
        uo = [i for i in OLD.order if i not in self.o2n and not OLD.recs[i].imported]
        un = [i for i in NEW.order if i not in self.n2o and not NEW.recs[i].imported]
        if not uo or not un:
            return 0
        bo = [self.span_o[0], *ao, self.span_o[1]]
        bn = [self.span_n[0], *an, self.span_n[1]]
        count = 0
        io = jn = 0
        for k in range(len(bo) - 1):
            xs = []
            while io < len(uo) and uo[io] < bo[k + 1]:
                if uo[io] > bo[k]:
                    xs.append(uo[io])
                io += 1
            ys = []
            while jn < len(un) and un[jn] < bn[k + 1]:
                if un[jn] > bn[k]:
                    ys.append(un[jn])
                jn += 1
            if not xs or not ys or len(xs) * len(ys) > self.GAP_CELLS:
                continue
            if len(xs) == 1 and len(ys) == 1:
                # the only unmatched function between the same two anchors on both sides
                x, y = xs[0], ys[0]
                s = self.similarity(x, y)
                same_sig = OLD.recs[x].type_sig == NEW.recs[y].type_sig
                if s >= threshold or (same_sig and s >= self.GAP_SINGLE):
                    self.accept(x, y, s, "similarity", s < REVIEW_SCORE)
                    count += 1
                continue
            count += self._align(xs, ys, threshold)
        return count

    def _align(self, xs: list[int], ys: list[int], threshold: float) -> int:
        S = [[self.similarity(x, y) for y in ys] for x in xs]
        nx, ny = len(xs), len(ys)
        # Longest common subsequence over the pairs at or above the threshold, ties broken
        # by total similarity: the diff principle (keep order, align as much as possible)
        # rather than "most similar first", which shifts whole families by one.
        best = [[0.0] * (ny + 1) for _ in range(nx + 1)]
        move = [[0] * (ny + 1) for _ in range(nx + 1)]  # 1 up, 2 left, 3 diagonal
        for i in range(1, nx + 1):
            row, prev, srow, mrow = best[i], best[i - 1], S[i - 1], move[i]
            for j in range(1, ny + 1):
                if prev[j] >= row[j - 1]:
                    v, m = prev[j], 1
                else:
                    v, m = row[j - 1], 2
                s = srow[j - 1]
                if s >= threshold and prev[j - 1] + self.ALIGN_PAIR + s > v:
                    v, m = prev[j - 1] + self.ALIGN_PAIR + s, 3
                row[j] = v
                mrow[j] = m
        pairs = []
        i, j = nx, ny
        while i > 0 and j > 0:
            m = move[i][j]
            if m == 3:
                pairs.append((i - 1, j - 1))
                i -= 1
                j -= 1
            elif m == 1:
                i -= 1
            else:
                j -= 1
        count = 0
        for i, j in reversed(pairs):
            s = S[i][j]
            rivals = [S[i][jj] for jj in range(ny) if jj != j] + [
                S[ii][j] for ii in range(nx) if ii != i
            ]
            margin = s - max(rivals, default=0.0)
            review = s < REVIEW_SCORE or margin < REVIEW_MARGIN
            self.accept(xs[i], ys[j], s, "similarity", review)
            count += 1
        return count

    # ---------------------------------------------------------------- leftovers
    def stage_equal_groups(self) -> int:
        """Identical bodies (or shapes) left in groups of equal size: pair by index order,
        flagged for review (the code is the same, which alias is which is a guess)."""
        count = 0
        for attr, score in (("body_hash", 0.9), ("shape_hash", 0.85)):
            go: dict[str, list[int]] = defaultdict(list)
            gn: dict[str, list[int]] = defaultdict(list)
            for i in self.unmatched_old():
                r = self.OLD.recs[i]
                if getattr(r, attr) and not r.imported:
                    go[getattr(r, attr)].append(i)
            for i in self.unmatched_new():
                r = self.NEW.recs[i]
                if getattr(r, attr) and not r.imported:
                    gn[getattr(r, attr)].append(i)
            for h in sorted(go, key=lambda k: go[k][0]):
                xs, ys = go[h], gn.get(h)
                if not ys or len(xs) != len(ys):
                    continue
                if any(self.callee_check(x, y)[1] for x, y in zip(xs, ys, strict=True)):
                    continue  # the order pairing contradicts matched callees
                for x, y in zip(xs, ys, strict=True):
                    self.accept(x, y, score, "body" if attr == "body_hash" else "shape", True)
                    count += 1
        return count

    def stage_minified_imports(self) -> None:
        go: dict[tuple[str, str], list[int]] = defaultdict(list)
        gn: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in self.unmatched_old():
            r = self.OLD.recs[i]
            if r.imported and r.import_name:
                go[(r.import_name, r.type_sig)].append(i)
        for i in self.unmatched_new():
            r = self.NEW.recs[i]
            if r.imported and r.import_name:
                gn[(r.import_name, r.type_sig)].append(i)
        for key in sorted(go):
            xs, ys = go[key], gn.get(key)
            if ys and len(xs) == 1 and len(ys) == 1:
                # minified names are handed out in order: the same slot is some evidence
                if xs[0] == ys[0]:
                    self.accept(xs[0], ys[0], 0.75, "import")
                else:
                    self.accept(xs[0], ys[0], 0.5, "import", True)

    # ---------------------------------------------------------------- driver
    def run(self, fuzzy: bool) -> list[Match]:
        self.stage_imports()
        while True:
            before = len(self.result)
            self.stage_hash("body_hash", "body")
            self.stage_hash("shape_hash", "shape")
            self.stage_names()
            self.propagate()
            if len(self.result) == before:
                break
        if fuzzy:
            for threshold, margin in self.ROUNDS:
                while True:
                    got = self.similarity_round(threshold, margin)
                    self.propagate()
                    if threshold <= self.GAP_FROM:
                        got += self.gap_align(max(threshold, self.GAP_MIN))
                        self.propagate()
                    if not got:
                        break
            self.stage_equal_groups()
            self.propagate()
            self.stage_minified_imports()
            self.propagate()
        return [self.result[n] for n in sorted(self.result)]


def match_functions(
    old: Sequence[FuncRecord], new: Sequence[FuncRecord], *, fuzzy: bool = True
) -> list[Match]:
    """One-to-one matches between the functions of ``old`` and ``new``, sorted by new index.

    ``fuzzy=False``: only unique, non-similarity evidence (imports, hashes, names, call
    graph), what ingest uses to carry stable identities.
    """
    return _Matcher(old, new).run(fuzzy)
