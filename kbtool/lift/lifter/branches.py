"""Branches: ``break``/``continue``/``goto``/``return`` for ``br``, ``br_if`` (a loop's exit
test becomes its ``while`` head) and ``br_table`` as a C ``switch``.
"""

from __future__ import annotations

from .base import _E, MAX_BREAK_WALK, LiftError, _i64_text, _p, _same_len
from .core import _Frame
from .opnames import OP_DROP, OP_END, OP_I32_CONST, OP_I64_CONST, OP_LOCAL_GET, OP_RETURN
from .values import _Values


class _Branches(_Values):
    def cond_text(self, c: _E, negate: bool = False) -> str:
        if not negate:
            return c.text if c.prec < 14 else f"({c.text})"
        if c.neg is not None:
            return c.neg
        return f"!{_p(c, 0)}" if c.prec == 0 else f"!({c.text})"

    def tail_return(self, t: _Frame, vals: list[_E]) -> str | None:
        """``return ...;`` when the code after ``t``'s end only returns (so a branch to
        ``t`` needs no goto): block ends without results, then the function end, possibly
        after one ``local.get``/constant that becomes the returned value."""
        ops = self.ops
        last = len(ops) - 1
        j = t.blk.end + 1
        func_res = self.frames[0].results
        if vals:
            if j == last and len(vals) == len(func_res) == 1:
                return f"return {vals[0].text};"
            return None
        end_of = self.end_of
        while j < last and ops[j] == OP_END:
            b = end_of.get(j)
            if b is None or self.blocks[b].bt != "":
                return None
            j += 1
        if j == last or ops[j] == OP_RETURN:
            return "return;" if not func_res else None
        if (j == last - 1 or ops[j + 1] == OP_RETURN) and len(func_res) == 1:
            op = ops[j]
            imms = self.args[j]
            if op == OP_LOCAL_GET and imms[0] < len(self.locals_c):
                return f"return {self.locals_c[imms[0]]};"
            if op == OP_I32_CONST:
                return f"return {self.i32_const(imms[0]).text};"
            if op == OP_I64_CONST:
                return f"return {_i64_text(imms[0])};"
        return None

    def branch_values(self, depth: int, consume: bool) -> list[_E]:
        if depth >= len(self.frames):
            raise LiftError(f"branch depth {depth} out of range")
        t = self.frames[-1 - depth]
        n = len(t.params) if t.form in ("loop", "dowhile") else len(t.results)
        if consume:
            return self.popn(n)
        if n == 0:
            return []
        if len(self.stack) - n < self.frames[-1].height:
            raise LiftError("value stack underflow")
        for k in range(len(self.stack) - n, len(self.stack)):
            e = self.stack[k]
            if e.const is None:
                self.stack[k] = self.spill(e)
        return self.stack[-n:]

    def branch(self, depth: int, vals: list[_E], in_switch: bool = False) -> list[str]:
        """Statements for a branch to ``depth`` carrying ``vals`` (emitted by the caller)."""
        frames = self.frames
        t = frames[-1 - depth]
        lines: list[str] = []
        if t.form == "func":
            res = t.results
            if not res:
                lines.append("return;")
            elif len(res) == 1:
                lines.append(f"return {vals[0].text};")
            else:
                st = self.ret_type(res)
                lines.append(f"return ({st}){{{', '.join(v.text for v in vals)}}};")
            return lines
        lp = self.loopish
        ti = len(frames) - 1 - depth
        if t.form not in ("loop", "dowhile"):
            lf = frames[lp[-1]] if lp else None
            if (
                lf is not None
                and lf.form == "loop"
                and not lf.headed
                and not vals
                and not in_switch
                and len(self.out) == lf.cond + 2
                and lp[-1] > ti
                and self.break_lands(ti, lp[-1])
            ):
                # a loop's leading exit test stays a `break` so the loop reads `while (!c)`
                lf.branched = True
                self.brk_frame = lp[-1]
                return ["break;"]
            ret = self.tail_return(t, vals)
            if ret is not None:
                return [ret]
        targets = t.par_vars if t.form in ("loop", "dowhile") else t.res_vars
        if len(targets) > 1:
            tmps = []
            for v in vals:
                tn = self.new_temp(v.ty)
                lines.append(f"{tn} = {v.text};")
                tmps.append(tn)
            _same_len(targets, tmps)
            lines += [f"{var} = {tn};" for var, tn in zip(targets, tmps)]  # noqa: B905 - _same_len checked
        else:
            _same_len(targets, vals)
            lines += [f"{var} = {v.text};" for var, v in zip(targets, vals) if var != v.text]  # noqa: B905 - _same_len checked
        # C constructs between here and the target that capture `break` / `continue`
        # (frames above the target's index: the innermost loop-like one and open switches)
        if lp and lp[-1] > ti:
            brk_ok = cont_ok = False
        else:
            cont_ok = True
            brk_ok = not in_switch and not any(k > ti for k in self.sw_open)
        if t.form in ("loop", "dowhile"):
            if cont_ok and t.form == "loop":
                t.conts += 1
                lines.append("continue;")
            else:
                if not t.label:
                    t.label = f"L{t.id}"
                t.label_used = True
                lines.append(f"goto {t.label};")
                self.stats.gotos += 1
            return lines
        if brk_ok and (t.form == "dowhile0" or t.switch_open):
            t.branched = True
            self.brk_frame = ti
            lines.append("break;")
            return lines
        if not in_switch and lp and self.break_lands(ti, lp[-1]):
            # leaving the innermost loop lands where the target's end leads: `break`
            frames[lp[-1]].branched = True
            self.brk_frame = lp[-1]
            lines.append("break;")
            return lines
        t.branched = True
        if not t.label:
            t.label = f"L{t.id}"
        t.label_used = True
        lines.append(f"goto {t.label};")
        self.stats.gotos += 1
        return lines

    def landing(self, j: int) -> int:
        """Where control goes after the ``end`` at ``j``: past every directly following
        ``end`` of a block, loop or if without results (they are no-ops on the way out)."""
        ops = self.ops
        end_of = self.end_of
        blocks = self.blocks
        n = len(ops)
        steps = 0
        while j < n and ops[j] == OP_END and steps < MAX_BREAK_WALK:
            b = end_of.get(j)
            if b is None:
                return j
            blk = blocks[b]
            if blk.bt != "" or blk.kind not in ("block", "loop", "if"):
                return j
            j += 1
            steps += 1
        return j

    def break_lands(self, ti: int, li: int) -> bool:
        """Whether ``break`` out of loop-like frame ``li`` (the innermost one) goes where a
        branch to block frame ``ti`` goes: no switch open inside the loop, and both ends
        land on the same instruction."""
        if any(k > li for k in self.sw_open):
            return False
        t = self.frames[ti]
        lf = self.frames[li]
        if lf.blk.bt != "" or t.blk.bt != "" or lf.form not in ("loop", "dowhile", "dowhile0"):
            return False
        self.budget.spend(8)
        return self.landing(lf.blk.end) == self.landing(t.blk.end)

    def br_if(self, i: int, depth: int, c: _E | None = None, keep: int = 0) -> None:
        plain = c is None  # a br_if (not a br_on_* with its own test)
        if c is None:
            c = self.pop()
        if depth >= len(self.frames):
            raise LiftError(f"branch depth {depth} out of range")
        t = self.frames[-1 - depth]
        if t.form == "dowhile" and depth == 0 and i == t.blk.end - 1 and not keep:
            self.spill_for_call()
            t.cond = c
            return
        dropped = (
            plain
            and t.form not in ("loop", "dowhile", "func")
            and len(t.results) == 1
            and self.cur + 1 < len(self.ops)
            and self.ops[self.cur + 1] == OP_DROP
        )
        # a value the fall-through path drops right away needs no temporary
        vals = self.branch_values(depth, consume=dropped)
        self.spill_for_call()
        if t.form == "ifconv" and depth == 0 and not vals and self.tail_return(t, vals) is None:
            self.emit(f"if ({self.cond_text(c, negate=True)}) {{")
            t.heads.append(len(self.out))
            t.opened += 1
            t.branched = True
            self.extra += 1
            return
        lines = self.branch(depth, vals)
        if (
            len(lines) == 2
            and len(t.res_vars) == 1
            and t.form not in ("loop", "dowhile", "func")
            and lines[0].startswith(t.res_vars[0] + " = ")
            and (lines[1] == "break;" or lines[1].startswith("goto "))
        ):
            # the block's result variable is read only after the block: assign it before
            # the test, so the branch is a one-line `if (c) break;`
            self.emit(lines[0])
            lines = lines[1:]
        if dropped:
            self.stack.append(_E("0", 0, t.results[0], const=0))
        ct = self.cond_text(c)
        if len(lines) == 1:
            line = lines[0]
            if line == "break;":
                lf = self.frames[self.brk_frame]
                out = self.out
                if lf.form == "loop" and not lf.headed and len(out) == lf.cond + 2:
                    # the loop's first statement is its exit test: `while (!c) {`
                    hl = out[lf.cond + 1]
                    if hl is not None and hl.endswith("while (1) {"):
                        out[lf.cond + 1] = hl[: -len("1) {")] + self.cond_text(c, True) + ") {"
                        self.add_marks(lf.cond + 1, self.take_pending())
                        lf.headed = True
                        return
            self.emit(f"if ({ct}) {line}")
            if line == "continue;":
                t.last_cont = (len(self.out) - 1, ct)
        else:
            self.emit(f"if ({ct}) {{")
            for line in lines:
                self.emit("  " + line)
            self.emit("}")

    def case_heads(self, ks: list[int], default: bool) -> list[str]:
        heads = [f"case {k}:" for k in ks] + (["default:"] if default else [])
        return [" ".join(heads[j : j + 8]) for j in range(0, len(heads), 8)]

    def br_table(self, i, labels, default):
        idx = self.pop()
        n_vals = self.branch_values(default, consume=False)
        frames = self.frames
        for d in set(labels):
            if d >= len(frames):
                raise LiftError(f"branch depth {d} out of range")
            t = frames[-1 - d]
            if len(t.params if t.form in ("loop", "dowhile") else t.results) != len(n_vals):
                raise LiftError("br_table targets of different arities")
        self.spill_for_call()
        members = self.switches.get(i)
        if members is not None:
            self.switch_chain(idx, labels, default, len(members))
            return
        groups: dict[int, list[int]] = {}
        for k, d in enumerate(labels):
            groups.setdefault(d, []).append(k)
        if not groups:
            for line in self.branch(default, n_vals):
                self.emit(line)
            self.dead = True
            return
        self.emit(f"switch ({idx.text}) {{")
        top = self.frames[-1]
        nxt_end = i + 1 < len(self.ops) and self.ops[i + 1] == OP_END
        order = sorted(groups.items(), key=lambda kv: kv[1][0])
        entries = [(d, ks) for d, ks in order if d != default] + [(default, None)]
        for d, ks in entries:
            if ks is None:
                head = "default:"
            else:
                heads = [f"case {k}:" for k in ks]
                if len(heads) > 8:
                    for j in range(0, len(heads) - 8, 8):
                        self.emit("  " + " ".join(heads[j : j + 8]))
                    heads = heads[(len(heads) - 1) // 8 * 8 :]
                head = " ".join(heads)
            t = self.frames[-1 - d]
            if (
                d == 0
                and nxt_end
                and t is top
                and t.form not in ("loop", "dowhile", "func")
                and not (t.res_vars or t.par_vars)
            ):
                t.branched = True
                lines = ["break;"]
            else:
                lines = self.branch(d, n_vals, in_switch=True)
            self.emit(f"  {head} " + " ".join(lines))
        self.emit("}")
        self.dead = True

    def switch_chain(self, idx: _E, labels, default: int, n: int) -> None:
        """``switch`` whose case labels go to the ends of the ``n`` innermost frames."""
        groups: dict[int, list[int]] = {}
        merged = self.frames[-1].blk.merged
        if merged is not None:  # the tests after it on the same value joined it
            gt = merged.guard_test()
            default = merged.default if gt is None else gt[0]
            for v, d in merged.cases:
                groups.setdefault(d, []).append(v)
        else:
            for k, d in enumerate(labels):
                groups.setdefault(d, []).append(k)
        self.emit(f"switch ({idx.text}) {{")
        self.extra += 2
        for d in sorted(set(groups) | {default}):
            heads = self.case_heads(groups.get(d, []), d == default)
            if d < n:
                self.frames[-1 - d].cases.extend(heads)
                continue
            lines = self.branch(d, [], in_switch=True)
            self.extra -= 1
            for h in heads[:-1]:
                self.emit(h)
            self.emit(f"{heads[-1]} " + " ".join(lines))
            self.extra += 1
        self.frames[-n].switch_open = True
        self.sw_open.append(len(self.frames) - n)
        self.dead = True

    def do_br(self, depth: int) -> None:
        vals = self.branch_values(depth, consume=True)
        self.spill_for_call()
        for line in self.branch(depth, vals):
            self.emit(line)
        self.dead = True
