"""Stages 1-4: imports, exact body hash, shape hash, names the binaries carry."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .base import _SCORE, _import_field_minified, _Side, _weak_name
from .callgraph import CallgraphStage


class ExactStages(CallgraphStage):
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

    def _groups(self, attr: str) -> tuple[dict[Any, list[int]], dict[Any, list[int]]]:
        """The unmatched defined functions of each side by their ``attr`` hash (the body or
        the shape hash), in index order: from the sides' dense arrays (a plain dict, no
        ``defaultdict`` miss per new hash)."""
        body = attr == "body_hash"
        return (
            _hash_index(self.OLD, self.o2n_a, body),
            _hash_index(self.NEW, self.n2o_a, body),
        )

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
        go = _name_index(self.OLD, self.o2n)
        gn = _name_index(self.NEW, self.n2o)
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


def _hash_index(side: _Side, image: list[int], body: bool) -> dict[Any, list[int]]:
    """hash -> the unmatched (``image[i] < 0``) defined functions of ``side`` holding it."""
    ha = side.body_a if body else side.shape_a
    imp = side.imp_a
    g: dict[Any, list[int]] = {}
    for i in side.order:
        if image[i] >= 0:
            continue
        h = ha[i]
        if h and not imp[i]:
            got = g.get(h)
            if got is None:
                g[h] = [i]
            else:
                got.append(i)
    return g


def _name_index(side: _Side, matched: dict[int, int]) -> dict[str, list[int]]:
    """name -> [the one function of ``side`` carrying it], unless already matched."""
    g: dict[str, list[int]] = defaultdict(list)
    for i in side.order:
        for nm in side.recs[i].names:
            g[nm].append(i)
    # a name shared by several functions of one side identifies none of them;
    # only then drop the already matched ones
    return {k: v for k, v in g.items() if len(v) == 1 and v[0] not in matched}
