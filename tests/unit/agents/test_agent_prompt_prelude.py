"""The naming prompt's C leaves out the compiler prelude, also when the lifter packs several
callee prototypes onto one line (the prompt lists the callees by name above the code)."""

from __future__ import annotations

from kbtool.agents.prompts import c_text

C = """\
int32_t malloc(int32_t); int32_t ZSTD_compress(int32_t, int32_t, int32_t, int32_t, int32_t);
int32_t printf(int32_t, int32_t);
extern uint8_t *M;
int32_t f55(int32_t a0, int32_t a1) {
  a1 = strlen(a0);
  free(a1);
  return printf(a0, a1);
}"""


def test_packed_prototype_lines_are_left_out_and_the_body_kept():
    shown = c_text({"index": 55, "c": C}).splitlines()
    assert shown[0] == "int32_t f55(int32_t a0, int32_t a1) {"
    assert shown[1:] == C.splitlines()[4:]
