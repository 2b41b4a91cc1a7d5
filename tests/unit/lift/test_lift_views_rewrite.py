"""The typed views' post-pass on a function's marked text (kbtool/lift/lifter/views.py): the
accesses the lifter counted become fields through one lookup per access, a view's name
avoids the words of the body (labels, words in comments) read as a C tokenizer reads them,
and the rewrite keeps raw memory where a field's type would change what the C does."""

from __future__ import annotations

from kbtool.lift.lifter import views
from kbtool.lift.lifter.views import CLOSE, OPEN, mark, record, view_decls


def _lines(*texts: str) -> list[str | None]:
    return [*texts, None]


def test_a_view_name_avoids_a_label_and_a_word_of_a_comment():
    a = mark("int32_t", "l3", 8)
    b = mark("int32_t", "p0", 4)
    lines = _lines(f"  {a} = {b};", "  goto L3;", "  /* P0 is named here */", "L3:;")
    body = "\n".join(x for x in lines if x is not None)
    before, after = view_decls(lines, "f", {"l3", "p0"}, set(), body)
    assert "#define V_l3 ((int32_t *)(M + l3))" not in before  # a field at 8: a struct view
    assert "#define V_l3 ((struct f_l3_view *)(M + l3))" in before
    assert "#define V_p0 ((struct f_p0_view *)(M + p0))" in before
    assert lines[0] == "  V_l3->field_8 = V_p0->field_4;"
    assert after == ["#undef V_l3", "#undef V_p0"]


def test_a_name_inside_a_longer_word_is_free_but_one_after_digits_is_not():
    # `xL3`, `L30` and `x_P0` hold the names only inside other words; `12T1` is the digits
    # 12 and then the word T1 (as a regex tokenizer reads it)
    acc: views.Acc = {}
    for base in ("l3", "p0", "t1"):
        record(acc, "int32_t", base, 4, True)
    body = "xL3 L30 x_P0 12T1"
    before, _after = view_decls([], "f", set(), set(), body, acc=acc)
    names = [ln.split()[1] for ln in before if ln.startswith("#define")]
    assert names == ["L3", "P0", "V_t1"]


def test_marked_words_are_read_by_first_character_once():
    words = views._words_from("goto L3; L30: xL3; (L4) 9L5 L", "L")
    assert words == {"L3", "L30", "L4", "L5", "L"}
    assert views._words_from("é1 _a", "é") == set()  # a word starts with [A-Za-z_]


def test_the_rewrite_keeps_what_each_access_does():
    s8 = mark("int8_t", "p0", 1)
    u8 = mark("uint8_t", "p0", 1)
    lines = _lines(
        f"  l2 = {u8} + {u8};",  # the field's own type: no cast
        f"  l3 = {s8};",  # a signed read of an unsigned field: a cast
        f"  {s8} = l3;",  # a store converts implicitly
        f"  {s8} >>= 1;",  # a compound assignment shifts with its own signedness: raw
        f"  l4 = *{OPEN}(int8_t *)(M + p0 + l2){CLOSE};",  # a text another pass changed
    )
    acc: views.Acc = {}
    record(acc, "uint8_t", "p0", 1, True)
    record(acc, "uint8_t", "p0", 1, True)
    for load in (True, False, True):
        record(acc, "int8_t", "p0", 1, load)
    before, _after = view_decls(lines, "g", {"p0"}, set(), "", acc=acc)
    assert before == ["#define P0 ((uint8_t *)(M + p0))"]
    assert lines[:5] == [
        "  l2 = P0[1] + P0[1];",
        "  l3 = (int8_t)P0[1];",
        "  P0[1] = l3;",
        "  *(int8_t *)(M + p0 + 1) >>= 1;",
        "  l4 = *(int8_t *)(M + p0 + l2);",
    ]


def test_the_counted_accesses_match_the_accesses_read_back_from_the_text():
    s8 = mark("int8_t", "p0", 1)
    u8 = mark("uint8_t", "p0", 1)
    w = mark("int32_t", "l5", 0)
    text = _lines(f"  l2 = {u8} + {s8};", f"  {s8} = {w};", f"  {w} += 1;", f"  {u8} = 2;")
    acc: views.Acc = {}
    record(acc, "uint8_t", "p0", 1, True)
    record(acc, "int8_t", "p0", 1, True)
    record(acc, "int8_t", "p0", 1, False)
    record(acc, "int32_t", "l5", 0, True)
    record(acc, "int32_t", "l5", 0, True)  # `+=` reads the value too
    record(acc, "uint8_t", "p0", 1, False)
    assert _counts(views._kind(text)) == _counts(acc)
    assert _counts(acc) == {
        "p0": {1: {"uint8_t": (2, 1), "int8_t": (2, 1)}},
        "l5": {0: {"int32_t": (2, 2)}},
    }


def _counts(acc: views.Acc) -> dict[str, dict[int, dict[str, tuple[int, int]]]]:
    return {
        b: {o: {ct: (u.count, u.loads) for ct, u in cts.items()} for o, cts in offs.items()}
        for b, offs in acc.items()
    }


def test_each_kind_of_access_has_one_marked_text():
    acc: views.Acc = {}
    first = views.use(acc, "int32_t", "p0", 8, True)
    again = views.use(acc, "int32_t", "p0", 8, False)
    assert first == mark("int32_t", "p0", 8) == f"*{OPEN}(int32_t *)(M + p0 + 8){CLOSE}"
    assert again is first  # made once per kind
    assert views.use(acc, "int32_t", "p0", 0, True) == f"*{OPEN}(int32_t *)(M + p0){CLOSE}"
    assert _counts(acc) == {"p0": {8: {"int32_t": (2, 1)}, 0: {"int32_t": (1, 1)}}}
