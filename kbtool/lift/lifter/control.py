"""Opening and closing blocks: ``if``/``else``, ``try``, ternaries, and loops rewritten
as ``while (c)``, ``do { } while (c)`` or ``for (...)`` when their shape allows.
"""

from __future__ import annotations

import re

from ..names import comment_text
from .base import _E, _STEP, F_CALL, MAX_INDENT, LiftError, _merge, _p, _same_len
from .branches import _Branches
from .core import _Frame, split_marks
from .opnames import OP_CATCH, OP_IF


class _Control(_Branches):
    # -- control flow
    def open_block(self, i: int, op: int, imms: tuple) -> None:
        b = self.open_at[i]
        blk = self.blocks[b]
        params, results = self.blocktype(imms[0])
        cond = self.pop() if op == OP_IF else None
        pvals = self.popn(len(params))
        self.spill_all()
        if cond is not None and cond.fl & F_CALL:
            pass  # evaluated in the if head, after the spills: order preserved
        fr = _Frame(blk, blk.form, params, results, len(self.stack))
        self.nlabel += 1
        fr.id = self.nlabel
        fr.res_vars = [self.new_temp(t, "r") for t in results]
        if params:
            fr.par_vars = []
            _same_len(pvals, params)
            for v, t in zip(pvals, params):  # noqa: B905 - _same_len checked
                name = self.new_temp(t, "t")
                self.emit(f"{name} = {v.text};")
                fr.par_vars.append(name)
        form = blk.form
        if form == "loop":
            self.out.append(None)  # placeholder for the loop-head label (before the loop)
            fr.cond = len(self.out) - 1
            self.emit("while (1) {")
        elif form == "dowhile" or form == "dowhile0":
            self.emit("do {")
        elif form == "if":
            assert cond is not None
            self.emit(f"if ({self.cond_text(cond)}) {{")
            fr_heads = [len(self.out)]
        elif form == "try":
            self.emit("if (wasm_try()) {")
        elif form == "try_table":
            clauses = ", ".join(
                f"{('catch', 'catch_ref', 'catch_all', 'catch_all_ref')[ck]}"
                f"{'' if tag is None else ' ' + str(tag)} -> {lab}"
                for ck, tag, lab in imms[1]
            )
            self.emit(f"/* try_table: {comment_text(clauses)} */")
        if form == "if":
            fr.heads = fr_heads
            if len(results) == 1 and not params:
                fr.tern = [cond, None]
        fr.ind = self.frames[-1].ind + (
            0 if form in ("plain", "try_table", "ifconv", "switchtail") else 1
        )
        self.frames.append(fr)
        if form == "loop" or form == "dowhile" or form == "dowhile0":
            self.loopish.append(len(self.frames) - 1)
        if form == "loop":
            fr.label = f"L{fr.id}"
        for k, pv in enumerate(fr.par_vars):
            self.stack.append(_E(pv, 0, params[k]))
        d = len(self.frames)
        if d > self.stats.max_depth:
            self.stats.max_depth = d

    def fallthrough_assign(self, fr: _Frame) -> None:
        vals = self.popn(len(fr.results))
        self.assign(fr.res_vars, vals)

    def assign(self, vars_, vals) -> list[str]:
        lines = []
        if len(vars_) > 1:
            tmps = []
            for v in vals:
                t = self.new_temp(v.ty)
                lines.append(f"{t} = {v.text};")
                tmps.append(t)
            _same_len(vars_, tmps)
            for var, t in zip(vars_, tmps):  # noqa: B905 - _same_len checked
                lines.append(f"{var} = {t};")
        else:
            _same_len(vars_, vals)
            for var, v in zip(vars_, vals):  # noqa: B905 - _same_len checked
                if var != v.text:
                    lines.append(f"{var} = {v.text};")
        for line in lines:
            self.emit(line)
        return lines

    def do_else(self):
        fr = self.frames[-1]
        if fr.tern is not None:
            ok = not self.dead and len(self.stack) == fr.height + 1
            fr.tern[1] = self.stack[-1] if ok else None
        if not self.dead:
            self.fallthrough_assign(fr)
            fr.then_live = True
        if fr.tern is not None and (fr.tern[1] is None or len(self.out) != fr.heads[0] + 1):
            fr.tern = None
        del self.stack[fr.height :]
        self.dead = False
        fr.has_else = True
        self.frames.pop()
        self.emit("} else {")
        self.frames.append(fr)
        for k, v in enumerate(fr.par_vars):
            self.stack.append(_E(v, 0, fr.params[k]))

    def do_catch(self, op, imms):
        fr = self.frames[-1]
        if not self.dead:
            self.fallthrough_assign(fr)
        del self.stack[fr.height :]
        self.dead = False
        self.frames.pop()
        if op == OP_CATCH:
            self.emit(f"}} else if (wasm_catch({imms[0]})) {{")
            self.frames.append(fr)
            tag = self.tag_type(imms[0])
            for k, p in enumerate(tag.params):
                fn = {
                    "i32": "wasm_exn_i32",
                    "i64": "wasm_exn_i64",
                    "f32": "wasm_exn_f32",
                    "f64": "wasm_exn_f64",
                    "v128": "wasm_exn_v128",
                }.get(p, "wasm_exn_ref")
                self.stack.append(_E(f"{fn}({k})", 0, p, F_CALL))
        else:
            self.emit("} else {")
            self.frames.append(fr)
        fr.has_else = True

    def do_end(self, i: int) -> None:
        fr = self.frames[-1]
        reach = not self.dead
        if fr.form == "func":
            if reach and fr.results:
                vals = self.branch_values(0, consume=True)
                for line in self.branch(0, vals):
                    self.emit(line)
            self.frames.pop()
            return
        if (
            fr.tern is not None
            and reach
            and fr.has_else
            and not fr.branched
            and len(self.stack) == fr.height + 1
            and len(self.out) == fr.heads[0] + 2
        ):
            # `if (c) { r = a; } else { r = b; }` is the expression `c ? a : b`
            c, a = fr.tern
            b = self.stack.pop()
            self.rescue_notes(fr.heads[0] - 1)
            del self.out[fr.heads[0] - 1 :]
            rname = fr.res_vars[0]
            self.temps = [x for x in self.temps if x[1] != rname]
            self.frames.pop()
            fl, locs = _merge(c, a, b)
            u = a.u or b.u
            self.push(
                _E(
                    f"{_p(c, 12)} ? {_p(a, 12)} : {_p(b, 13)}",
                    13,
                    fr.results[0],
                    fl,
                    locs,
                    u=u,
                    nn=a.nn and b.nn,
                )
            )
            return
        if reach:
            self.fallthrough_assign(fr)
        if len(self.stack) > fr.height:
            del self.stack[fr.height :]
        form = fr.form
        after_reachable = reach or fr.branched or fr.then_live
        if form == "if" and not fr.has_else:
            if tuple(fr.params) != tuple(fr.results):
                # the implicit else passes the params on as the results
                raise LiftError("if without else whose results differ from its params")
            if fr.results and fr.par_vars:
                fr.has_else = True
                self.frames.pop()
                self.emit("} else {")
                self.frames.append(fr)
                _same_len(fr.par_vars, fr.params)
                pv = [_E(v, 0, t) for v, t in zip(fr.par_vars, fr.params)]  # noqa: B905 - _same_len checked
                self.assign(fr.res_vars, pv)
            after_reachable = True
        self.frames.pop()
        if self.loopish and self.loopish[-1] == len(self.frames):
            self.loopish.pop()
        if form == "loop":
            out = self.out
            lc = fr.last_cont
            head = fr.cond + 1
            hl = out[head]
            last, last_marks = split_marks(out[-1] if out else None)
            if (
                reach
                and fr.conts == 1
                and not fr.headed
                and lc is not None
                and lc[0] == len(out) - 1
                and hl is not None
                and hl.endswith("while (1) {")
                # the `if (c) continue;` is a statement of the loop body itself (not nested
                # in an if whose condition and brace the rewrite would drop)
                and last is not None
                and last.strip() == f"if ({lc[1]}) continue;"
                and len(last) - len(last.lstrip()) == len(hl) - len(hl.lstrip()) + 2
            ):
                # `while (1) { ...; if (c) continue; break; }` is `do { ... } while (c);`
                out[head] = hl[: -len("while (1) {")] + "do {"
                self.add_marks(head, last_marks)
                out.pop()
                self.emit(f"}} while ({lc[1]});")
            elif reach and not fr.headed and self.guarded_loop(fr, head):
                self.emit("}")
            else:
                if reach:
                    self.emit("  break;")
                elif last is not None and last.strip() == "continue;":
                    out.pop()  # the end of a while (1) body loops anyway
                    self.add_marks(len(out) - 1, last_marks)
                    hl = split_marks(out[head])[0]
                    if fr.headed and fr.conts == 1 and hl is not None and hl.endswith(") {"):
                        pre = hl[: len(hl) - len(hl.lstrip())]
                        cond = hl.strip()[len("while (") : -len(") {")]
                        self.for_loop(fr, head, pre, cond, len(pre) + 2)
                self.emit("}")
            if fr.label_used:
                self.out[fr.cond] = "  " * min(fr.ind - 1, MAX_INDENT) + f"{fr.label}:;"
                self.stats.labels += 1
        elif form == "dowhile":
            c = self.cond_text(fr.cond) if isinstance(fr.cond, _E) else "0"
            self.emit(f"}} while ({c});")
            after_reachable = reach or fr.cond is not None
        elif form == "dowhile0":
            self.emit("} while (0);")
        elif form == "ifconv":
            for _ in range(fr.opened):
                self.extra -= 1
                self.close_if(fr.heads.pop())
                after_reachable = True
        elif form == "if" and not fr.has_else:
            self.close_if(fr.heads[0])
        elif form in ("if", "try"):
            self.emit("}")
            if form == "try":
                after_reachable = True
        if fr.cases:
            after_reachable = True
            self.extra -= 1
            if form == "switchtail":
                fr.cases[-1] += " break;"
            for h in fr.cases:
                self.emit(h)
            self.extra += 1
            if fr.blk.guarded is not None:
                self.guard_default(fr.blk.guarded)
        if form == "switchtail" and fr.switch_open:
            fr.switch_open = False
            self.sw_open.remove(len(self.frames))
            self.extra -= 2
            self.emit("}")
        if fr.label_used and form != "loop":
            self.emit(f"{fr.label}:;")
            self.stats.labels += 1
        if form == "loop" and fr.label_used:
            pass
        _same_len(fr.res_vars, fr.results)
        for v, t in zip(fr.res_vars, fr.results):  # noqa: B905 - _same_len checked
            self.stack.append(_E(v, 0, t))
        self.dead = not after_reachable

    def guard_default(self, g: tuple[int, str, bool, int, int]) -> None:
        """Under a merged switch's ``default:``: the values its range guard sent to the
        later tests go where the last one's default went (see :mod:`.switchmerge`)."""
        x, op, uns, k, depth = g
        name = self.locals_c[x]
        if uns:
            cond = f"(uint32_t){name} {op} {k & 0xFFFFFFFF}u"
        else:
            k = (k & 0xFFFFFFFF) - (1 << 32) if k & 0x80000000 else k & 0xFFFFFFFF
            cast = "(int32_t)" if self.lsign[x] else ""
            cond = f"{cast}{name} {op} {k}"
        lines = self.branch(depth, [])
        if len(lines) == 1:
            self.emit(f"if ({cond}) {lines[0]}")
        else:
            self.emit(f"if ({cond}) {{")
            for line in lines:
                self.emit("  " + line)
            self.emit("}")

    def guarded_loop(self, fr: _Frame, head: int) -> bool:
        """``while (1) { if (c) { body continue; } break; }`` (a loop whose whole body is
        an ``if`` that loops back) becomes ``while (c) { body }``, and a counted one
        ``for (i = a; c; i = i + k) { body }``; True when rewritten."""
        out = self.out
        n = len(out)
        hl = out[head]
        first = out[head + 1] if head + 1 < n else None
        if hl is None or first is None or n < head + 4 or not hl.endswith("while (1) {"):
            return False
        first, first_marks = split_marks(first)
        assert first is not None
        ind = len(first) - len(first.lstrip())
        fs = first.strip()
        last = out[-1]
        cont, cont_marks = split_marks(out[-2])
        cs = cont.strip() if cont is not None else ""
        if not (
            fs.startswith("if (")
            and fs.endswith(") {")
            and last is not None
            and last.strip() == "}"
            and len(last) - 1 == ind
            and cont is not None
            and len(cont) - len(cs) == ind + 2
            # the if's body must not fall through (it would leave the loop)
            and (cs in ("continue;", "break;") or cs.startswith(("return", "goto ")))
        ):
            return False
        for k in range(head + 2, n - 1):
            ln = out[k]
            if ln is not None and len(ln) - len(ln.lstrip()) <= ind:
                return False
        self.budget.spend(n - head)
        cond = fs[4:-3]
        dropped = cs == "continue;"
        body = [ln[2:] if ln is not None else None for ln in out[head + 2 : n - 1 - dropped]]
        del out[head + 1 :]
        out.extend(body)
        fr.headed = True
        pre = hl[: -len("while (1) {")]
        out[head] = f"{pre}while ({cond}) {{"
        self.add_marks(head, first_marks + (cont_marks if dropped else ""))
        if dropped and fr.conts == 1:
            self.for_loop(fr, head, pre[: len(pre) - len(pre.lstrip(" "))], cond, ind)
        return True

    def for_loop(self, fr: _Frame, head: int, pre: str, cond: str, ind: int) -> None:
        """``i = a; while (c) { body i += k; }`` (no other ``continue``) as
        ``for (i = a; c; i += k) { body }``."""
        out = self.out
        if fr.label_used or len(out) <= head + 1:
            return
        st, st_marks = split_marks(out[-1])
        step = None
        if st is not None and len(st) - len(st.lstrip()) == ind and st.endswith(";"):
            m = _STEP.match(st.strip())
            if m is not None and re.search(rf"\b{m.group(1)}\b", cond):
                step = st.strip()[:-1]
        if step is None:
            return
        out.pop()
        init = ""
        prev, prev_marks = split_marks(out[head - 2] if head >= 2 else None)
        var = step.split(" ", 1)[0].rstrip("+-")
        if (
            prev is not None
            and prev.startswith(pre)
            and not prev[len(pre) :].startswith(" ")
            and prev.startswith(pre + var + " = ")
            and prev.endswith(";")
            and "{" not in prev
            and "}" not in prev
        ):
            init = prev.strip()[:-1]
            out[head - 2] = None
            st_marks = prev_marks + st_marks
        head_marks = split_marks(out[head])[1]
        out[head] = f"{pre}for ({init}; {cond}; {step}) {{"
        self.add_marks(head, head_marks + st_marks)

    def close_if(self, head: int) -> None:
        """Close an ``if (...) {`` opened at ``out[head - 1]``; a single short statement
        body becomes ``if (...) stmt;``."""
        out = self.out
        if len(out) == head + 1:
            body = out[head]
            if (
                body is not None
                and len(body) < 100
                and body.endswith(";")
                and (not body.endswith(":;"))
                and "{" not in body
                and "}" not in body
            ):
                h = out[head - 1]
                assert h is not None
                out[head - 1] = h[:-1] + body.strip()
                out.pop()
                return
        self.emit("}")
