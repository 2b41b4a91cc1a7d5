"""GC proposal ops as prelude helper calls (field types from :mod:`kbtool.lift.gctypes`) and
``br_on_*`` as conditional breaks.
"""

from __future__ import annotations

from kbtool.wasm.opcodes import MNEMONICS, PREFIX_BASE

from .base import _E, F_CALL, F_MEM, LiftError, _gc_suffix, _gc_value, _heaptype_c, _merge_list
from .control import _Control
from .opnames import OP_BR_ON_NON_NULL, OP_BR_ON_NULL


class _Gc(_Control):
    # -- GC proposal and br_on_*: prelude helper calls with the ops' stack effects
    def gc_type(self, ti, kind: str):
        gc = self.lm.gc
        t = gc[ti] if isinstance(ti, int) and 0 <= ti < len(gc) else None
        if t is None or t[0] != kind:
            raise LiftError(f"type {ti} is not a {kind} type")
        return t[1]

    def gc_call(self, text: str, args: list[_E], ty: str | None, fl: int = F_CALL) -> None:
        """Push ``text`` (a helper call over ``args``) as a value of type ``ty``, or emit it
        as a statement when ``ty`` is None (a heap write: readers of the heap spill first)."""
        afl, locs = _merge_list(args)
        if ty is None:
            self.spill_flags(F_MEM | F_CALL)
            self.emit(f"{text};")
            return
        if fl & F_CALL:
            self.spill_effects()
        self.push(_E(text, 0, ty, afl | fl, locs))

    def gc_op(self, i, op, imms) -> None:  # noqa: C901 - one dispatch over the GC ops
        name = MNEMONICS[op]
        if (
            op == OP_BR_ON_NULL
            or op == OP_BR_ON_NON_NULL
            or name in ("br_on_cast", "br_on_cast_fail")
        ):
            self.br_on(i, op, name, imms)
            return
        if name in ("struct.new", "struct.new_default"):
            fields = self.gc_type(imms[0], "struct")
            if name == "struct.new_default":
                self.gc_call(f"struct_new_default({imms[0]})", [], "anyref")
                return
            args = self.popn(len(fields))
            texts = ", ".join([str(imms[0])] + [a.text for a in args])
            self.gc_call(f"struct_new({texts})", args, "anyref")
        elif name.startswith("struct.get"):
            fields = self.gc_type(imms[0], "struct")
            if imms[1] >= len(fields):
                raise LiftError(f"field {imms[1]} out of range")
            ref = self.pop()
            ft = fields[imms[1]]
            h = "struct_" + (name[-5:] if name != "struct.get" else "get_" + _gc_suffix(ft))
            self.gc_call(f"{h}({ref.text}, {imms[0]}, {imms[1]})", [ref], _gc_value(ft), F_MEM)
        elif name == "struct.set":
            fields = self.gc_type(imms[0], "struct")
            if imms[1] >= len(fields):
                raise LiftError(f"field {imms[1]} out of range")
            v = self.pop()
            ref = self.pop()
            h = "struct_set_" + _gc_suffix(fields[imms[1]])
            self.gc_call(f"{h}({ref.text}, {imms[0]}, {imms[1]}, {v.text})", [ref, v], None)
        elif name.startswith("array."):
            self.array_op(name, imms)
        elif name in ("ref.test", "ref.cast"):
            ref = self.pop()
            null = int(op in (PREFIX_BASE[0xFB] + 0x15, PREFIX_BASE[0xFB] + 0x17))
            ht = _heaptype_c(imms[0])
            if name == "ref.test":
                self.gc_call(f"ref_test({ref.text}, {ht}, {null})", [ref], "i32", 0)
            else:  # traps on failure: keep its place among effects
                self.gc_call(f"ref_cast({ref.text}, {ht}, {null})", [ref], "anyref")
        elif name in ("any.convert_extern", "extern.convert_any", "i31.get_s", "i31.get_u"):
            ref = self.pop()
            ty = "i32" if name.startswith("i31") else "anyref"
            h = name.replace(".", "_")
            self.gc_call(f"{h}({ref.text})", [ref], ty, F_CALL if ty == "i32" else 0)
        elif name == "ref.i31":
            v = self.pop()
            self.gc_call(f"ref_i31({v.text})", [v], "anyref", 0)
        else:
            raise LiftError(f"no C rendering for {name}")

    def array_op(self, name: str, imms) -> None:
        if name == "array.len":
            ref = self.pop()
            self.gc_call(f"array_len({ref.text})", [ref], "i32", F_MEM)
            return
        t = imms[0]
        et = self.gc_type(t, "array")
        sfx = _gc_suffix(et)
        if name == "array.new":
            n = self.pop()
            v = self.pop()
            self.gc_call(f"array_new_{sfx}({t}, {v.text}, {n.text})", [v, n], "anyref")
        elif name == "array.new_default":
            n = self.pop()
            self.gc_call(f"array_new_default({t}, {n.text})", [n], "anyref")
        elif name == "array.new_fixed":
            if imms[1] > 10_000:
                raise LiftError(f"array.new_fixed with {imms[1]} values")
            vals = self.popn(imms[1])
            texts = ", ".join([str(t), str(imms[1])] + [v.text for v in vals])
            self.gc_call(f"array_new_fixed({texts})", vals, "anyref")
        elif name in ("array.new_data", "array.new_elem"):
            n = self.pop()
            off = self.pop()
            h = name.replace(".", "_")
            self.gc_call(f"{h}({t}, {imms[1]}, {off.text}, {n.text})", [off, n], "anyref")
        elif name.startswith("array.get"):
            i_ = self.pop()
            ref = self.pop()
            h = "array_" + (name[-5:] if name != "array.get" else "get_" + sfx)
            self.gc_call(f"{h}({ref.text}, {t}, {i_.text})", [ref, i_], _gc_value(et), F_MEM)
        elif name == "array.set":
            v = self.pop()
            i_ = self.pop()
            ref = self.pop()
            self.gc_call(
                f"array_set_{sfx}({ref.text}, {t}, {i_.text}, {v.text})", [ref, i_, v], None
            )
        elif name == "array.fill":
            n = self.pop()
            v = self.pop()
            off = self.pop()
            ref = self.pop()
            args = [ref, off, v, n]
            self.gc_call(
                f"array_fill_{sfx}({ref.text}, {t}, {off.text}, {v.text}, {n.text})", args, None
            )
        elif name == "array.copy":
            self.gc_type(imms[1], "array")
            n, soff, src, doff, dst = (self.pop() for _ in range(5))
            args = [dst, doff, src, soff, n]
            texts = ", ".join([str(t), str(imms[1])] + [a.text for a in args])
            self.gc_call(f"array_copy({texts})", args, None)
        elif name in ("array.init_data", "array.init_elem"):
            n, soff, doff, ref = (self.pop() for _ in range(4))
            args = [ref, doff, soff, n]
            texts = ", ".join([str(t), str(imms[1])] + [a.text for a in args])
            self.gc_call(f"{name.replace('.', '_')}({texts})", args, None)
        else:
            raise LiftError(f"no C rendering for {name}")

    def br_on(self, i, op, name, imms) -> None:
        """``br_on_null`` / ``br_on_non_null`` / ``br_on_cast[_fail]``: a conditional break
        on a test of the reference on top of the stack (kept in a named value)."""
        label = imms[0] if op in (OP_BR_ON_NULL, OP_BR_ON_NON_NULL) else imms[1]
        ref = self.pop()
        if ref.prec or ref.fl or ref.const is not None:
            ref = self.spill(ref)
        r = ref.text
        if op == OP_BR_ON_NULL:  # branch on null without the ref; else the ref stays
            self.br_if(
                i, label, _E(f"{r} == REF_NULL", 7, "i32", 0, ref.locs, neg=f"{r} != REF_NULL")
            )
            self.stack.append(ref)
            return
        if op == OP_BR_ON_NON_NULL:  # branch with the ref when not null; else it is dropped
            self.stack.append(ref)
            cond = _E(f"{r} != REF_NULL", 7, "i32", 0, ref.locs, neg=f"{r} == REF_NULL")
            self.br_if(i, label, cond, keep=1)
            self.pop()
            return
        flags = imms[0]
        test = f"ref_test({r}, {_heaptype_c(imms[3])}, {int(bool(flags & 2))})"
        self.stack.append(ref)
        if name == "br_on_cast":
            cond = _E(test, 0, "i32", 0, ref.locs, neg=f"!{test}")
        else:
            cond = _E(f"!{test}", 2, "i32", 0, ref.locs, neg=test)
        self.br_if(i, label, cond, keep=1)
