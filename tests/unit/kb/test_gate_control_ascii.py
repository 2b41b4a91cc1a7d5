"""The gate's control-character check answers printable ASCII without its pattern
(``gate_rules._has_control``): the same answer as the pattern for every code point and for
random texts, and a name a module carries is refused or accepted as before."""

from __future__ import annotations

import random
import re

from kbtool.kb import gate_rules
from kbtool.textutil import BIDI, INVISIBLE

_PATTERN = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}]")


def test_every_code_point_alone_and_between_letters() -> None:
    for cp in range(0x110000):
        c = chr(cp)
        for text in (c, f"a{c}b"):
            assert gate_rules._has_control(text) == (_PATTERN.search(text) is not None), hex(cp)


def test_random_texts() -> None:
    rnd = random.Random(30)
    for _ in range(20_000):
        text = "".join(
            chr(rnd.choice((rnd.randrange(0x80), rnd.randrange(0x3000), rnd.randrange(0x110000))))
            for _ in range(rnd.randrange(12))
        )
        assert gate_rules._has_control(text) == (_PATTERN.search(text) is not None), repr(text)


def test_binary_names_and_signatures_refused_as_before() -> None:
    assert gate_rules.validate_name("ZSTD_compress", "binary") is None
    assert gate_rules.validate_name("a\x7fb", "binary") is not None
    assert gate_rules.validate_name("a\u202eb", "binary") is not None
    assert gate_rules.validate_name("caf\u00e9", "binary") is None
    assert gate_rules.validate_type_signature("(i32) -> i32") is None
    assert gate_rules.validate_type_signature("(i32)\n") is not None


def test_a_module_name_compiles_no_pattern() -> None:
    fresh = gate_rules.LazyPattern(gate_rules._CONTROL._source[0])
    saved, gate_rules._CONTROL = gate_rules._CONTROL, fresh
    try:
        assert gate_rules.validate_name("ZSTD_decompress", "binary") is None
        assert "search" not in vars(fresh)  # never compiled
        assert gate_rules.validate_name("x\u200by", "binary") is not None
        assert "search" in vars(fresh)
    finally:
        gate_rules._CONTROL = saved
