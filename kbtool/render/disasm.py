"""The disassembly listing's text, made from instruction records (pure: records in, text out).

The records are :class:`kbtool.lift.disasm.Listing` / ``Instr`` (read by attribute here, so
this module imports nothing from the pure layers). The format, objdump-like::

    func[12] <name>: (i32, i32) -> i32
     ;; a comment line of the KB          (at most 40)
     ;; prototype: int f(int a, int b)
     local[2..3]: i32
     0003e1:   call $sqlite3_free  ;; // the KB's line comment
     0003e6:   i32.const 1048  ;; .rodata.str "hello"

one instruction per line: ``<file offset>: <indent><mnemonic> <operands>[  ;; note]``,
indented two spaces per block level (at most 40 levels). Calls show the callee
(``$name``, ``func[812] <unnamed>``, ``func[9999] <out of range>``), globals their name,
locals their name after the index, a constant or a static access the data item it points
at, a pointer constant its string. Every piece of text in a record is already escaped.
"""

from __future__ import annotations

from typing import Any

MAX_INDENT = 40


def ref_text(ref: Any) -> str:
    """The operand text of a resolved reference (function, global, local, type)."""
    kind = ref.kind
    if kind == "func":
        if not ref.valid:
            return f"func[{ref.index}] <out of range>"
        return f"${ref.name}" if ref.name else f"func[{ref.index}] <unnamed>"
    if kind == "global":
        return f"${ref.name}" if ref.name else str(ref.index)
    if kind == "local":
        return f"{ref.index} <{ref.name}>" if ref.name else str(ref.index)
    raise ValueError(f"no operand text for a {kind} reference")


def operand_text(ins: Any) -> str:
    """The operands of one instruction as the listing shows them ("" for none)."""
    ref = ins.ref
    if ref is not None and ref.kind != "type":
        return ref_text(ref)
    return ins.operands


def operand_tokens(ins: Any) -> list[str]:
    """The operands as the tokens a reader compares one by one (a callee or global name is
    one token even with spaces in it); ``" ".join`` of them is :func:`operand_text`."""
    ref = ins.ref
    if ref is not None and ref.kind in ("func", "global"):
        return [ref_text(ref)]
    if ref is not None and ref.kind == "local":
        return [str(ref.index)] + ([f"<{ref.name}>"] if ref.name else [])
    return ins.operands.split(" ") if ins.operands else []


def note_text(ins: Any) -> str:
    """The line's note without the two spaces before it ("" for none): the data item, the
    string, the KB's line comment (each ``;; ...``)."""
    parts = []
    d = ins.data
    if d is not None:
        parts.append(
            f";; {d.label}"
            + (f"+{d.delta}" if d.delta else "")
            + (f' "{d.text}"' if d.text else "")
        )
    elif ins.string:
        parts.append(f';; "{ins.string}"')
    if ins.line_comment:
        parts.append(f";; // {ins.line_comment}")
    return "  ".join(parts)


def instr_text(ins: Any) -> str:
    """One instruction without its offset and indent: ``mnemonic operands[  ;; note]``."""
    ops = operand_text(ins)
    text = f"{ins.mnemonic} {ops}" if ops else ins.mnemonic
    note = note_text(ins)
    return f"{text}  {note}" if note else text


def indent(ins: Any) -> str:
    return "  " * min(ins.depth, MAX_INDENT)


def instr_line(ins: Any) -> str:
    """The listing line of one instruction."""
    return f" {ins.offset:06x}: {indent(ins)}{instr_text(ins)}"


def header_line(listing: Any) -> str:
    return f"func[{listing.func_index}] <{listing.name or 'unnamed'}>: {listing.signature}"


def head_lines(listing: Any) -> list[str]:
    """The lines above the first instruction: header, KB comment and prototype, locals."""
    if listing.error is not None:
        return [f"func[{listing.func_index}] <{listing.name or 'unnamed'}>:"]
    if listing.imported is not None:
        mod, field = listing.imported
        return [header_line(listing) + f"  ;; import {mod}.{field}"]
    lines = [header_line(listing)]
    lines += [f" ;; {row}" for row in listing.comment]
    if listing.prototype:
        lines.append(f" ;; prototype: {listing.prototype}")
    for first, count, ty in listing.locals:
        rng = f"{first}" if count == 1 else f"{first}..{first + count - 1}"
        lines.append(f" local[{rng}]: {ty}")
    return lines


def tail_lines(listing: Any) -> list[str]:
    """The lines below the last instruction (a cut, a decoding error)."""
    if listing.error is not None:
        return [error_line(listing.error)]
    if listing.truncated is not None:
        return [f" ;; ... truncated after {listing.truncated} instructions"]
    return []


def error_line(message: str) -> str:
    """The note standing for a body the decoder rejects (``message``: one line, escaped)."""
    return f" ;; kbtool: cannot disassemble this body: {message}"


def listing_lines(listing: Any) -> list[str]:
    """Every line of the listing, without newlines."""
    return [*head_lines(listing), *map(instr_line, listing.instrs), *tail_lines(listing)]


def render_listing(listing: Any) -> str:
    """The listing's text, one line per row, each ending in a newline."""
    return "\n".join(listing_lines(listing)) + "\n"


def render_error(message: str) -> str:
    """The whole listing of a function the service cannot disassemble (no header)."""
    return error_line(message)[1:] + "\n"
