"""The pair similarity's weighted Jaccard by exact integer weights gives the very floats of
the reference form (two ``math.fsum`` over the intersection and the symmetric difference),
and the bigram cosine's dot product is the plain one."""

from __future__ import annotations

import math
import random
from collections import Counter

from kbtool.identity import features as F


def test_exact_weighted_jaccard_is_the_fsum_one() -> None:
    rnd = random.Random(5)
    n = 5000
    idf = {k: math.log(n / rnd.randint(1, n)) + 0.05 for k in range(3000)}
    default = math.log(n)
    wt = F._Weights(idf, default)
    for t in range(20000):
        # keys past 3000 are not in idf: the default weight
        a = frozenset(rnd.sample(range(3100), rnd.randint(0, 40)))
        if t % 3:
            b = frozenset(rnd.sample(range(3100), rnd.randint(0, 40)))
        else:  # a large overlap
            b = frozenset([*list(a)[: rnd.randint(0, len(a))], *rnd.sample(range(3100), 3)])
        want = F._weighted_jaccard(a, b, idf, default)
        got = F._weighted_jaccard_exact(a, wt.total(a), b, wt.total(b), wt)
        assert got == want, (a, b)


def test_cosine_is_the_plain_dot_product() -> None:
    rnd = random.Random(9)
    for _ in range(2000):
        a = Counter({rnd.randint(0, 60): rnd.randint(1, 9) for _ in range(rnd.randint(0, 30))})
        b = Counter({rnd.randint(0, 60): rnd.randint(1, 9) for _ in range(rnd.randint(0, 30))})
        na = math.sqrt(sum(v * v for v in a.values())) or 1.0
        nb = math.sqrt(sum(v * v for v in b.values())) or 1.0
        if not a or not b:
            want = 1.0 if not a and not b else 0.0
        else:
            want = sum(v * b[k] for k, v in a.items() if k in b) / (na * nb)
        assert F._cosine(a, na, b, nb) == want
