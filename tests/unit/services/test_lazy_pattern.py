"""A module-level pattern compiled when first used (``kbtool.textutil.LazyPattern``, issue 30.4:
patterns a small module's ingest never uses are not compiled at its start) answers exactly
as ``re.compile`` does, and nothing compiles it before a use."""

from __future__ import annotations

import copy
import re

from kbtool.textutil import LazyPattern


def test_answers_as_the_compiled_pattern() -> None:
    src, flags = r"(0x[0-9a-f]+|\d+)|g:(\w+)", re.IGNORECASE
    lazy, real = LazyPattern(src, flags), re.compile(src, flags)
    text = "g:SP 0X1F then 42, g:x and 0xZZ"
    assert lazy.match("0x1f").group(1) == real.match("0x1f").group(1)
    assert lazy.fullmatch("42") is not None and lazy.fullmatch("42 ") is None
    assert lazy.search(text).span() == real.search(text).span()
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.findall(text) == real.findall(text)
    assert lazy.sub("<>", text) == real.sub("<>", text)
    assert lazy.subn(lambda m: m.group(0)[::-1], text) == real.subn(
        lambda m: m.group(0)[::-1], text
    )
    assert lazy.split(text) == real.split(text)
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        real.pattern,
        real.flags,
        real.groups,
        real.groupindex,
    )
    b = LazyPattern(rb"\xfc\x08", re.DOTALL)
    assert [m.start() for m in b.finditer(b"\x00\xfc\x08\xfc\x08", 1, 5)] == [1, 3]


def test_compiled_at_the_first_use_only() -> None:
    seen: list[str] = []
    lazy = LazyPattern("[a-")  # an invalid pattern: compiling it would raise
    copy.copy(lazy)  # probing dunders (copy, pickle, hasattr) is not a use
    assert not hasattr(lazy, "__wrapped__")
    try:
        lazy.match("a")
    except re.error as exc:
        seen.append(str(exc))
    assert seen and "unterminated character set" in seen[0]
    ok = LazyPattern("a+")
    assert "match" not in vars(ok)
    assert ok.match("aa").group(0) == "aa"
    # after the first use its methods are plain attributes: no second compile, no hook
    assert vars(ok)["match"].__self__ is vars(ok)["sub"].__self__
    assert ok.sub("b", "caad") == "cbd"


def test_ingest_start_leaves_unused_checks_uncompiled() -> None:
    """Importing the ingest (a fresh process) compiles none of the checks a small module's ingest
    may never run: the people/agent name and summary checks, the 3-character minified test, Rust
    demangling; each still answers as before at its first use."""
    import subprocess
    import sys

    code = (
        "import kbtool.commands.ingest_cmd, kbtool.services.ingest\n"
        "from kbtool.kb import gate_rules as g\n"
        "from kbtool.identity import features as f\n"
        "from kbtool.analysis import families as fam\n"
        "pats = [g._IDENT, g._SUMMARY_CONTROL, f._SHORT3_RE, fam._RUST_HASH, fam._RUST_ESC_RE]\n"
        "print(sum('match' in vars(p) for p in pats))\n"
        "print(g.validate_name('a b', 'human'), g.validate_name('ns::f_1', 'agent'))\n"
        "print(g.validate_summary('ok\\tline\\n'), g.validate_summary('bad\\x1b'))\n"
        "print(f.is_minified_name('abc', module_minified=True),"
        " f.is_minified_name('abc'))\n"
        "print(fam.demangle_rust('_ZN4core3fmt5write17h0123456789abcdefE'))\n"
        "print(fam.demangle_rust('_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "0"
    assert out[1] == "invalid name: not a C-like identifier None"
    assert out[2].startswith("None invalid summary: control")
    assert out[3] == "True False"
    assert out[4] == "core::fmt::write"
    assert out[5] == "core::ptr::drop_in_place<u8>"
