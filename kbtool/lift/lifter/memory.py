"""Loads and stores: addresses, data labels, field hooks, and the shadow-stack frame
(:func:`.prepass._prepass` finds it, slots read ``frame->local_0c``, :func:`_frame_struct`
declares it).
"""

from __future__ import annotations

import re
from typing import Final

from kbtool.wasm.opcodes import MNEMONICS

from ..context import LiftModule
from .base import (
    _E,
    _LOAD_CT,
    _STORE_CT,
    F_CALL,
    F_GLOB,
    F_MEM,
    _c_ident,
    _i32_text,
    _p,
    c_ident_path,
)
from .core import _Core
from .dataindex import _ANY, align_states, assigned, balanced, masked, scaled, summed
from .opnames import (
    OP_I32_ADD,
    OP_I32_SUB,
)
from .views import CT_FLOAT, CT_SIZE, CT_TAG, Acc, overlap_groups, use

#: i32.sub / i32.add, the ops of a shadow-stack prologue ``global.get SP; i32.const N; i32.sub``
_I32_SUB: Final = OP_I32_SUB
_I32_ADD: Final = OP_I32_ADD


_SHIFT: Final = {2: 1, 4: 2, 8: 3}  # log2 of an access width
#: the frame slots' names at the first offsets (``local_0c``), made once: a format spec in
#: an f-string is a ``str.format`` call under mypyc
_SLOTS: Final = [f"local_{o:02x}" for o in range(1024)]


def _slot(o: int) -> str:
    """``f"local_{o:02x}"``, the name of the frame slot at offset ``o``."""
    if 0 <= o < 1024:
        return _SLOTS[o]
    return f"local_{o:02x}"


class _Memory(_Core):
    #: load/store position -> local -> the power of two its value is a multiple of there
    #: (:func:`align_states`, computed at the first access that needs it)
    lalign: dict[int, dict[int, int]] | None = None
    #: base variable -> offset -> C type -> [accesses, loads] of its marked accesses (.views)
    vacc: Acc | None = None

    def addr(self, base: _E, offset: int) -> str:
        if base.const is not None and isinstance(base.const, int):
            a = (base.const & 0xFFFFFFFF) + offset
            if self.data_starts:
                label = self.data_ref(a)
                if label is not None:
                    return label
            return _i32_text(a) if offset else base.text
        if offset:
            return f"{_p(base, 4)} + {offset}"
        return base.text

    def frame_slot(self, base: _E, offset: int, ct: str, store: bool) -> str:
        """``frame->local_0c`` when ``base`` is a frame base local inside its region and
        the access fits one slot of the frame struct (the first access of an offset decides
        its type; a same-size integer access of the other signedness reads through a cast;
        an access overlapping another slot stays raw memory); else ""."""
        x = base.locs[0]
        regs = self.fregion.get(x)
        if regs is None or x < 0 or base.text != self.locals_c[x]:
            return ""
        i = self.cur
        n = -1
        for s, e, sz in regs:
            if s <= i < e:
                n = sz
                break
        if n < 0:
            return ""
        self.stats.frame_slots += 1
        size = CT_SIZE[ct]
        if offset + size > n:
            return ""
        slot = self.fslots.get(offset)
        name = _slot(offset)
        if slot is None:
            if len(self.fslots) + len(self.fextra) >= 512:
                return ""
            slot = self.fslots[offset] = (ct, size)
            if store:
                self.fsoft.add(offset)
        elif (
            offset in self.fsoft
            and not store
            and slot[1] == size
            and slot[0] != ct
            and (ct not in CT_FLOAT and slot[0] not in CT_FLOAT)
        ):
            # only stores saw the slot so far (their text has no type): the first load's
            # signedness types it, so the reads need no cast
            slot = self.fslots[offset] = (ct, size)
            self.fsoft.discard(offset)
        elif slot[1] != size or (slot[0] != ct and (ct in CT_FLOAT or slot[0] in CT_FLOAT)):
            # another view of the same bytes: a member of the union the slot becomes
            name = f"{name}_{CT_TAG[ct]}"
            ex = self.fextra.get(name)
            if ex is None:
                if len(self.fslots) + len(self.fextra) >= 512:
                    return ""
                ex = self.fextra[name] = (offset, ct, size)
            slot = (ex[1], ex[2])
        if not store and offset in self.fsoft and slot[0] == ct:
            self.fsoft.discard(offset)
        self.stats.frame_named += 1
        text = f"{self.fptr}->{name}"
        if slot[0] != ct and not store:
            return f"({ct}){text}"
        return text

    def frame_addr(self, base: _E, offset: int) -> str:
        """The slot name for the address ``base + offset`` when ``base`` is a frame base
        local inside its region (the address of a frame array or struct), else ""."""
        x = base.locs[0]
        regs = self.fregion.get(x)
        if regs is None or x < 0 or base.text != self.locals_c[x]:
            return ""
        i = self.cur
        for s, e, sz in regs:
            if s <= i < e:
                if 0 <= offset < sz and len(self.fesc) < 512:
                    self.fesc.add(offset)
                    return _slot(offset)
                return ""
        return ""

    def mem_ptr(self, base: _E, offset: int, ct: str, store: bool = False) -> str:
        if self.fregion and base.prec == 0 and base.const is None and len(base.locs) == 1:
            fs = self.frame_slot(base, offset, ct, store)
            if fs:
                return fs
        if self.hook is not None and base.prec == 0 and base.const is None and base.locs:
            r = self.hook(self.fi, base.text, offset, ct)
            if isinstance(r, tuple):  # (expression, guard, declaration): a typed struct field
                text, guard, decl = r
                if guard not in self.decl_types:
                    self.decl_types[guard] = decl
                return text
            if r:
                return c_ident_path(r)
        if self.dhook is not None and base.prec == 0 and base.fl == F_GLOB and not base.locs:
            # a global holding a pointer to a typed record: `((struct T *)(M + g))->f`
            gc = self.global_c
            g = gc.index(base.text) if base.text in gc else -1
            gr = self.dhook.global_field(g, base.text, offset, ct) if g >= 0 else None
            if gr is not None:
                if gr[1] not in self.decl_types:
                    self.decl_types[gr[1]] = gr[2]
                return gr[0]
        if base.const is not None and isinstance(base.const, int):
            if self.data_starts:  # a labelled static variable: its object, else M + label
                obj = self.data_access((base.const & 0xFFFFFFFF) + offset, ct, store)
                if obj:
                    return obj
                a = self.addr(base, offset)
            else:
                a = _i32_text((base.const & 0xFFFFFFFF) + offset)
            return f"*({ct} *)(M + {a})"
        if self.dobj and not offset and base.prec == 4 and "ADDR(" in base.text:
            el = self.data_sum_index(base.text, ct, store)  # `M + l2 + ADDR(tbl)`: `tbl[l2]`
            if el:
                return el
        # an unsigned sum is computed whole, wrapping like wasm: `M + l6 + l7` would add a
        # "negative" uint32_t l6 to the pointer as a huge offset
        b = f"({base.text})" if base.u and base.prec > 0 else _p(base, 4)
        if offset >= 1024 and self.data_starts:
            # an array in static data indexed by a computed value: `upper_to_lower[l3]`
            d = self.lm.data_label(offset)
            if d is not None and d[2] != 0 and self.dhook is not None:
                el = self.typed_index(d[0], d[1], d[2], base, ct, store)  # `ops[i].name`
                if el:
                    return el
            if d is not None and d[2] == 0:
                el = self.data_index(d[0], d[1], d[3], base, ct, store)
                if el:
                    return el
                label = self.data_ref(offset) or str(offset)
                return f"*({ct} *)(M + {b} + {label})"
        acc = self.vacc
        if (
            base.prec == 0
            and base.const is None
            and not base.fl & (F_GLOB | F_MEM | F_CALL)
            # (b is base.text; a base already counted is an identifier: no method call)
            and ((acc is not None and b in acc) or b.isidentifier())
        ):
            if acc is None:
                acc = self.vacc = {}
            return use(acc, ct, b, offset, not store)  # a local or temp: its view's (.views)
        if offset:
            return f"*({ct} *)(M + {b} + {offset})"
        return f"*({ct} *)(M + {b})"

    def data_access(self, a: int, ct: str, store: bool = False) -> str:
        """An access of C type ``ct`` at the constant address ``a`` as its data item's object:
        the whole item (``errno_value``), a field (``malloc_state.field_24``, a typed item's
        ``cfg.flags``) or a constant index (``tbl[3]``); "" when it does not fit the object
        as this function uses it (the caller keeps ``*(ct *)(M + ADDR(item) + 3)``)."""
        d = self.lm.data_label(a)
        if d is None:
            return ""
        ident, start, off, text = d
        hook = self.dhook
        typed = hook is not None and hook.item_type(start) is not None
        if text is not None and not typed:
            return ""  # a string: its label stays the address constant
        ob = self.data_obj(ident, start)
        size = CT_SIZE[ct]
        kind = ob[2]
        if kind == "t":
            hit = hook.item_field(start, off, ct) if hook is not None else None
            return "" if hit is None else _view(f"{ident}{hit[0]}", hit[1], ct, store)
        if kind == "b":
            if off == 0 and size >= ob[1]:
                # the whole item, or an item cut short by the next referenced address (an
                # access wider than it reads on: `data_10240` of 1 byte read as int32_t)
                ob[2], ob[3] = "s", ct
                return ident
            if off + size > ob[1]:
                return ""
            ob[2] = kind = "f"
        if kind == "s":
            return _view(ident, ob[3], ct, store) if off == 0 else ""
        if kind == "a":
            return _view(f"{ident}[{off // size}]", ob[3], ct, store) if off % size == 0 else ""
        fields: dict[int, str] = ob[4]
        got = fields.get(off)
        if got is None:
            if off + size > ob[1] or len(fields) >= 256:
                return ""
            for fo, fct in fields.items():
                if fo < off + size and off < fo + CT_SIZE[fct]:
                    return ""  # another view of the same bytes
            fields[off] = got = ct
        return _view(f"{ident}.field_{off}", got, ct, store)

    def data_index(
        self, ident: str, start: int, text: str | None, base: _E, ct: str, store: bool
    ) -> str:
        """``tbl[i]`` for an access of C type ``ct`` at ``M + base + tbl`` when ``base`` is an
        index scaled by the element size (``i << 2``, ``i * 4``; any index for bytes) and the
        item is (or becomes) an array of ``ct`` in this function; else ""."""
        if self.dhook is not None and self.dhook.item_type(start) is not None:
            return self.typed_index(ident, start, 0, base, ct, store)
        if text is not None:
            return ""
        idx = self.index_of(base, CT_SIZE[ct])
        if not idx:
            return ""
        ob = self.data_obj(ident, start)
        if ob[2] == "b":
            ob[2], ob[3] = "a", ct
        if ob[2] != "a":
            return ""
        return _view(f"{ident}[{idx}]", ob[3], ct, store)

    def typed_index(self, ident: str, start: int, off: int, base: _E, ct: str, store: bool) -> str:
        """``ops[i].name`` for an access ``off`` bytes into an element of a typed array item
        (``kbtool types apply V data ops 'struct op[3]'``) whose index is scaled by the
        element's size; else ""."""
        hook = self.dhook
        if hook is None or hook.item_type(start) is None:
            return ""
        stride = hook.item_stride(start)
        if stride <= 0 or off >= stride:
            return ""
        idx = self.index_of(base, stride)
        hit = hook.item_field(start, off, ct) if idx else None
        if hit is None or not hit[0].startswith("[0]"):
            return ""
        self.data_obj(ident, start)
        return _view(f"{ident}[{idx}]{hit[0][3:]}", hit[1], ct, store)

    def index_of(self, base: _E, size: int) -> str:
        """The element index of an address ``base`` scaled by ``size``: ``i`` of ``i << 2``
        or ``i * 12``, ``(x >> 8) & 255`` of ``(x >> 6) & 1020``, ``r * 3 + c`` of
        ``r * 12 + (c << 2)``, ``l5 >> 2`` of a local every value reaching the access is a
        multiple of 4 (:mod:`.dataindex`); else ""."""
        idx = scaled(base, size)
        if idx or size & (size - 1):
            return idx
        idx = masked(base, size) if base.prec == 8 else summed(base.text, size)
        if idx:
            return idx
        if base.tee is not None:  # `tbl[(l2 = i << 2) >> 2]`
            return assigned(base.text, size, self.locals_c)
        if base.prec == 0 and base.const is None and len(base.locs) == 1:
            x = base.locs[0]
            if x >= 0 and base.text == self.locals_c[x]:
                return self.local_index(x, size)
        return ""

    def local_index(self, x: int, size: int) -> str:
        """``l5 >> 2``: local ``x`` as the index of ``size``-byte elements when its value at
        the current access is a multiple of ``size`` on every path (:func:`align_states`),
        else ""."""
        np = len(self.lm.module.func_type(self.fi).params)
        al = self.lalign
        if al is None:
            al = self.lalign = align_states(self.ops, self.args, np)
        st = al.get(self.cur)
        if st is not None and st.get(x, _ANY if x >= np else 1) % size == 0:
            return f"{self.locals_c[x]} >> {size.bit_length() - 1}"
        return ""

    def data_sum_index(self, text: str, ct: str, store: bool) -> str:
        """``tbl[i]`` for an address computed as ``i + ADDR(tbl)`` or ``ADDR(tbl) + i`` (the
        table's address added in code, not in the offset immediate); else ""."""
        for ident, ob in self.dobj.items():
            a = f"ADDR({ident})"
            if text.endswith(" + " + a):
                idx = text[: -len(a) - 3]
            elif text.startswith(a + " + "):
                idx = text[len(a) + 3 :]
            else:
                continue
            if "ADDR(" in idx:
                return ""
            size = CT_SIZE[ct]
            if size > 1:
                shl = f" << {_SHIFT[size]})"
                inner = idx[1 : -len(shl)]
                if (
                    idx.startswith("(")
                    and idx.endswith(shl)
                    and balanced(inner)
                    and " = " not in inner  # `(l2 = i << 1)` keeps its value: `assigned`
                ):
                    idx = inner
                elif idx in self.locals_c:  # `l16 + ADDR(tbl)`, l16 a multiple of 8 here
                    idx = self.local_index(self.locals_c.index(idx), size)
                    if not idx:
                        return ""
                else:  # `r * 12 + (c << 2) + ADDR(tbl)`: `tbl[r * 3 + c]`
                    idx = summed(idx, size) or assigned(idx, size, self.locals_c)
                    if not idx:
                        return ""
            if ob[2] == "b":
                ob[2], ob[3] = "a", ct
            if ob[2] != "a":
                return ""
            return _view(f"{ident}[{idx}]", ob[3], ct, store)
        return ""

    def mem_op(self, op: int, imms: tuple) -> None:
        name = MNEMONICS[op]
        offset = imms[1]
        if name in _LOAD_CT:
            ct = _LOAD_CT[name]
            base = self.pop()
            if self.calls_pending():
                self.spill_flags(F_CALL)
            ty = name[:3]
            text = self.mem_ptr(base, offset, ct)
            prec = 2 if text[0] == "*" or text[0] == "(" else 0
            if ty == "i64" and ct != "int64_t":
                text = f"(int64_t){text}"
                prec = 2
            self.push(_E(text, prec, ty, base.fl | F_MEM, base.locs))
        else:
            ct = _STORE_CT[name]
            v = self.pop()
            base = self.pop()
            self.spill_flags(F_MEM | F_CALL)
            self.emit(f"{self.mem_ptr(base, offset, ct, True)} = {v.text};")


def _setup_frame(
    lf: _Memory, lm: LiftModule, regions: list[tuple[int, int, int, int]], locals_c: list[str]
) -> None:
    """Prepare the frame struct the slots of the function's shadow-stack frames
    (``regions``, found by :func:`.prepass._prepass`) are named in."""
    # one pointer names the slots: keep one base local's regions (a nested frame of another
    # local re-points it, and the outer frame's later slots would read the inner frame)
    regions = [r for r in regions if r[0] == regions[0][0]]
    for x, s, e, n in regions:
        lf.fregion.setdefault(x, []).append((s, e, n))
        lf.fstart_at[s - 1] = x
        if n > lf.fsize:
            lf.fsize = n
    name = "frame"
    taken = set(locals_c)
    while name in taken or name in lm.module_idents:
        name += "_"
    lf.fptr = name
    lf.fstruct = _c_ident(lm.func_c[lf.fi] + "_frame")


def _frame_struct(lf: _Memory) -> str:
    """The declaration of the frame struct: named slots at their offsets, the bytes
    between them as arrays (packed, so every slot sits at its wasm offset); slots whose
    bytes overlap (an i64 slot also read as two i32) share an anonymous union, a member
    that starts later wrapped in a struct with leading padding."""
    fields: list[tuple[int, int, str, str]] = [
        (o, t[1], t[0], _slot(o)) for o, t in lf.fslots.items()
    ]
    for name, ex in lf.fextra.items():
        fields.append((ex[0], ex[2], ex[1], name))
    # an address taken where no slot starts: the object there is a byte array up to the
    # next slot or taken address (the frame's buffers and structs)
    starts = sorted(set(lf.fslots) | lf.fesc)
    for k, o in enumerate(starts):
        if o in lf.fesc and o not in lf.fslots:
            nxt = starts[k + 1] if k + 1 < len(starts) else lf.fsize
            fields.append((o, nxt - o, "uint8_t", f"{_slot(o)}[{nxt - o}]"))
    fields.sort(key=lambda f: (f[0], -f[1], f[3]))
    parts: list[str] = []
    pos = 0
    for o, end, group in overlap_groups(fields):
        if o > pos:
            parts.append(f"  uint8_t {_slot(pos)}[{o - pos}];")
        if len(group) == 1:
            parts.append(f"  {group[0][2]} {group[0][3]};")
        else:
            parts.append("  union __attribute__((packed)) {")
            for fo, _sz, ct, name in group:
                if fo == o:
                    parts.append(f"    {ct} {name};")
                else:
                    parts.append(
                        f"    struct __attribute__((packed)) {{ uint8_t pad_{name.split('[', 1)[0]}[{fo - o}]; "
                        f"{ct} {name}; }};"
                    )
            parts.append("  };")
        pos = end
    if pos < lf.fsize:
        parts.append(f"  uint8_t {_slot(pos)}[{lf.fsize - pos}];")
    # several members per line, in offset order (a union keeps its own lines); the struct
    # tag is the function's own, so it needs no include guard
    lines: list[str] = []
    for part in parts:
        if (
            lines
            and part.startswith("  ")
            and not part.startswith("   ")
            and not part.startswith("  union")
            and part != "  };"
            and lines[-1].startswith("  ")
            and not lines[-1].startswith("   ")
            and not lines[-1].startswith("  union")
            and lines[-1] != "  };"
            and len(lines[-1]) + len(part) <= 96
        ):
            lines[-1] += part[1:]
        else:
            lines.append(part)
    body = "\n".join(lines)
    return (
        f"struct __attribute__((packed)) {lf.fstruct} {{ /* shadow-stack frame, {lf.fsize} bytes */"
        f"\n{body}\n}};"
    )


def _view(text: str, have: str, want: str, store: bool) -> str:
    """An object of C type ``have`` accessed as ``want``: itself, through a cast when a load
    reads the same bytes with the other signedness (a store converts implicitly); else ""."""
    if have == want:
        return text
    if CT_SIZE[have] != CT_SIZE[want] or have in CT_FLOAT or want in CT_FLOAT:
        return ""
    return text if store else f"({want}){text}"


_MEMBER = re.compile(r"(?:->|\.)(\w+)")  # a member name used: `p->name`, `s.name`
_ADDR = re.compile(r"ADDR\(([^()]*)\)")


def _member_clash(lf: _Memory) -> None:
    """An item whose label is also a member name the function uses (``p->count`` beside the
    static ``count``) is renamed ``count_data`` in this function: its macro would expand the
    member too. The member names are found in one pass over the body (renames never add
    or remove one: a member use is never renamed)."""
    if not lf.dobj:
        return
    body = "\n".join([ln for ln in lf.out if ln is not None])
    members = set(_MEMBER.findall(body))
    for ident in list(lf.dobj):
        if ident not in members:
            continue
        if not body:
            body = "\n".join([ln for ln in lf.out if ln is not None])
        new = ident + "_data"
        while new in lf.lm.module_idents or re.search(rf"\b{new}\b", body):
            new += "_"
        pat = re.compile(rf"(?<![\w.>]){re.escape(ident)}\b")
        for k in range(len(lf.out)):
            ln = lf.out[k]
            if ln is not None and ident in ln:
                lf.out[k] = pat.sub(new, ln)
        lf.dobj[new] = lf.dobj.pop(ident)
        body = ""


def _data_decls(lf: _Memory) -> tuple[list[str], list[str]]:
    """The objects of the data items the function uses, declared before it as macros over
    linear memory (``#define tbl (*(uint8_t (*)[])(M + 49760))``; fields in a packed struct
    of the function's own), and their ``#undef`` lines after it: each function types an item
    as it uses it, so another function's view never leaks into it."""
    before: list[str] = []
    after: list[str] = []
    whole: list[str] = []
    for ident, ob in lf.dobj.items():
        if ob[2] == "f" and len(ob[4]) == 1 and 0 in ob[4]:
            # only its first bytes are used here: the item reads as one variable
            ob[2], ob[3] = "s", ob[4][0]
            whole.append(ident)
    _member_clash(lf)
    if whole:
        pat = re.compile(r"\b(" + "|".join(re.escape(w) for w in whole) + r")\.field_0\b")
        for k in range(len(lf.out)):
            ln = lf.out[k]
            if ln is not None and ".field_0" in ln:
                lf.out[k] = pat.sub(r"\1", ln)
    addressed: set[str] | None = None
    for ident, ob in lf.dobj.items():
        start, size, kind, ct, fields, typed = ob
        if kind == "b":  # only addressed: unless the address became a number (values._number)
            if addressed is None:
                body = "\n".join([ln for ln in lf.out if ln is not None])
                addressed = set(_ADDR.findall(body))
            if ident not in addressed:
                continue
        at = f"(M + {start})"
        if kind == "s":
            obj = f"(*({ct} *){at})"
        elif kind == "a":
            obj = f"(*({ct} (*)[]){at})"
        elif kind == "t":
            obj = f"(*({typed}){at})"
        elif kind == "f":
            tag = _c_ident(f"{lf.lm.func_c[lf.fi]}_{ident}")
            parts: list[str] = []
            pos = 0
            for o in sorted(fields):
                if o > pos:
                    parts.append(f"uint8_t _pad{pos}[{o - pos}];")
                parts.append(f"{fields[o]} field_{o};")
                pos = o + CT_SIZE[fields[o]]
            before.append(f"struct __attribute__((packed)) {tag} {{ {' '.join(parts)} }};")
            obj = f"(*(struct {tag} *){at})"
        else:
            obj = f"(*(uint8_t (*)[{max(size, 1)}]){at})"
        before.append(f"#define {ident} {obj} /* data item, {size} bytes */")
        after.append(f"#undef {ident}")
    return before, after
