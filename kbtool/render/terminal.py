"""Rich terminal views over the query layer (read-only): coverage, the diff table and changelog.

Every string that comes from a binary or the KB (names, strings, labels) is rendered with
:func:`kbtool.render.text.lit`: literally, never parsed as Rich markup, controls escaped.
"""

from __future__ import annotations

from rich import box
from rich.cells import cell_len, set_cell_size
from rich.console import Group
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kbtool.kb.provenance import PROVENANCES, colour
from kbtool.render.rows import ansi_writer, plain_console, row_segments, row_text

# re-exported: the shared diff vocabulary and the short triage view were split out and stay
# importable from here
from kbtool.render.terminal_summary import (  # noqa: F401
    CLASS_ORDER,
    CLASS_STYLE,
    _delta,
    printable_name,
    summary_text,
)
from kbtool.render.terminal_triage import (  # noqa: F401
    TOP_DEFAULT,
    _fn_label,
    _names_of,
    triage_counts,
    triage_lines,
)
from kbtool.render.text import lit
from kbtool.textutil import printable

PROVENANCE_STYLE: dict[str | None, str] = {
    **{p: ("bold " if p == "human" else "") + colour(p) for p in PROVENANCES},
    None: colour(None),  # unnamed
}


def coverage_table(cov: dict, *, title: str = "coverage") -> Table:
    """A table of defined, named, coverage % and the split by provenance."""
    t = Table(title=title)
    t.add_column("defined", justify="right")
    t.add_column("named", justify="right")
    t.add_column("coverage", justify="right")
    t.add_column("human", justify="right", style=PROVENANCE_STYLE["human"])
    t.add_column("oracle", justify="right", style=PROVENANCE_STYLE["oracle"])
    t.add_column("export", justify="right", style=PROVENANCE_STYLE["export"])
    t.add_column("agent", justify="right", style=PROVENANCE_STYLE["agent"])
    t.add_column("diff-carry", justify="right", style=PROVENANCE_STYLE["diff-carry"])
    t.add_row(
        str(cov["defined"]),
        str(cov["named"]),
        f"{cov['coverage_pct']:.1f}%",
        str(cov["human_named"]),
        str(cov["oracle_named"]),
        str(cov["export_named"]),
        str(cov["agent_named"]),
        str(cov["diff_carry_named"]),
    )
    return t


# ---------------------------------------------------------------- diff


def parse_only(only: str | list[str] | tuple[str, ...] | None) -> frozenset[str] | None:
    """``"modified,new"`` -> the classifications to show (None: all). Also ``review``,
    ``runtime`` and ``changed`` (modified, new, deleted). Unknown words raise ValueError."""
    if only is None:
        return None
    words = [
        w.strip().lower()
        for part in ([only] if isinstance(only, str) else only)
        for w in str(part).split(",")
        if w.strip()
    ]
    if not words or "all" in words:
        return None
    known = set(CLASS_ORDER) | {"review", "runtime", "changed", "added", "removed"}
    bad = [w for w in words if w not in known]
    if bad:
        raise ValueError(
            f"unknown --only value {', '.join(bad)!s}; use any of "
            "unchanged, moved, modified, new, deleted, changed, review, runtime, all"
        )
    alias = {"added": "new", "removed": "deleted"}
    out: set[str] = set()
    for w in words:
        if w == "changed":
            out |= {"modified", "new", "deleted"}
        else:
            out.add(alias.get(w, w))
    return frozenset(out)


def _keep(change: dict, only: frozenset[str] | None) -> bool:
    if only is None:
        return True
    if change["classification"] in only:
        return True
    if "review" in only and change.get("review"):
        return True
    return "runtime" in only and bool(change.get("runtime"))


keep_change = _keep  # the one filter of --only words, shared with MCP get_diff's `only`


#: what the flags column of ``ui diff`` / ``diff`` means (the legend under the table)
FLAG_LEGEND = (
    ("rt", "magenta", "runtime/toolchain code"),
    ("churn", "magenta", "runtime code changed with the toolchain"),
    ("review", "bold red", "an uncertain match to check"),
)


def flags_legend(shown: set[str] | frozenset[str] | None = None) -> Text | None:
    """One line explaining the flags (``rt``, ``churn``, ``review``) that appear in
    ``shown`` (None: all of them); None when no flag is shown."""
    t = Text("flags: ", style="dim")
    n = 0
    for word, style, meaning in FLAG_LEGEND:
        if shown is not None and word not in shown:
            continue
        if n:
            t.append(" · ", style="dim")
        t.append(word, style=style)
        t.append(f" = {meaning}", style="dim")
        n += 1
    return t if n else None


def shown_flags(report: dict, keep: frozenset[str] | None, toolchain_changed: bool) -> set[str]:
    """The flag words the change table of ``report`` shows (rows kept by ``keep``)."""
    out: set[str] = set()
    for c in report["changes"]:
        if (c.get("runtime") or c.get("review")) and _keep(c, keep):
            out.update(_flags(c, toolchain_changed).plain.split())
    return out


def _evidence_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "; ".join(_evidence_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_evidence_value(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def evidence_table(items: list, *, title: str | None = "evidence") -> Table:
    """The evidence of an annotation as a table: one row per item (oldest first), with its
    source, actor and the rest as ``key: value`` lines. Every value is shown literally."""
    t = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    t.add_column("#", justify="right", style="dim", no_wrap=True)
    t.add_column("source", no_wrap=True)
    t.add_column("actor", no_wrap=True)
    t.add_column("details", overflow="fold")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            t.add_row(str(n), Text("—", style="dim"), Text("—", style="dim"), lit(item))
            continue
        rest = [(k, v) for k, v in item.items() if k not in ("source", "actor")]
        details = Text()
        for i, (k, v) in enumerate(rest):
            if i:
                details.append("\n")
            details.append_text(lit(k, "dim"))
            details.append(": ", style="dim")
            details.append_text(lit(_evidence_value(v)))
        t.add_row(
            str(n),
            lit(item.get("source"), "bold"),
            lit(item.get("actor")),
            details if rest else Text("—", style="dim"),
        )
    return t


def _fmt_conf(value) -> Text:
    return Text("" if value is None else f"{value:.2f}", justify="right")


def _flag_parts(change: dict, toolchain_changed: bool) -> list[tuple[str, str]]:
    """The flags cell as (text, style) pieces: ``rt``/``churn``, a space, ``review``."""
    parts: list[tuple[str, str]] = []
    if change.get("runtime"):
        churn = toolchain_changed and change["classification"] in ("modified", "new", "deleted")
        parts.append(("churn" if churn else "rt", "magenta"))  # runtime (toolchain) code
    if change.get("review"):
        if parts:
            parts.append((" ", ""))
        parts.append(("review", "bold red"))
    return parts


def _flags(change: dict, toolchain_changed: bool) -> Text:
    t = Text()
    for text, style in _flag_parts(change, toolchain_changed):
        t.append(text, style=style or None)
    return t


def diff_table_from_report(
    report: dict,
    *,
    only=None,
    toolchain_changed: bool = False,
    title: str | None = None,
    show_score: bool = True,
) -> Table:
    """The change table of a report (one row per change kept by ``only``), the flags
    legend as its caption."""
    keep = parse_only(only) if not isinstance(only, frozenset) else only
    t = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
        title_justify="left",
        caption_justify="left",
        caption=flags_legend(shown_flags(report, keep, toolchain_changed)),
    )
    # only the name column gives way on a narrow terminal (long names end in an ellipsis)
    t.add_column("change", no_wrap=True)
    t.add_column("from", justify="right", no_wrap=True)
    t.add_column("to", justify="right", no_wrap=True)
    t.add_column("name", overflow="ellipsis", min_width=12)
    t.add_column("provenance", no_wrap=True)
    t.add_column("conf", justify="right", no_wrap=True)
    if show_score:
        t.add_column("score", justify="right", no_wrap=True)
    t.add_column("flags", no_wrap=True)
    for c in report["changes"]:
        if not _keep(c, keep):
            continue
        cls = c["classification"]
        prov = c.get("provenance")
        cells = [
            Text(cls, style=CLASS_STYLE.get(cls, "")),
            "" if c.get("from_index") is None else str(c["from_index"]),
            "" if c.get("to_index") is None else str(c["to_index"]),
            lit(
                c.get("name"),
                PROVENANCE_STYLE.get(prov, PROVENANCE_STYLE[None]) if c.get("name") else "dim",
            ),
            lit(prov, PROVENANCE_STYLE.get(prov, "")) if prov else Text("—", style="dim"),
            _fmt_conf(c.get("confidence")),
        ]
        if show_score:
            cells.append(_fmt_conf(c.get("score")))
        cells.append(_flags(c, toolchain_changed))
        t.add_row(*cells)
    return t


def _idx(v) -> str:
    return "" if v is None else str(v)


def _diff_widths(
    rows: list[dict], flag_lens: list[int], width: int, show_score: bool
) -> tuple[int, int, int, int, int, int]:
    """Column widths of the change table (change, from, to, name, provenance, flags): every
    column as wide as its widest cell; the name takes what ``width`` leaves (at least 12)."""
    w_cls = max([6, *(len(c["classification"]) for c in rows)])
    w_from = max([4, *(len(_idx(c["from_index"])) for c in rows)])
    w_to = max([2, *(len(_idx(c["to_index"])) for c in rows)])
    w_prov = max([10, *(len(c["provenance"] or "—") for c in rows)])
    w_flags = max([5, *flag_lens])
    fixed = [w_cls, w_from, w_to, w_prov, 4] + ([5] if show_score else []) + [w_flags]
    gaps = 2 * len(fixed)  # two spaces between the columns, the name column included
    w_name = max(12, width - sum(fixed) - gaps)
    w_name = min(w_name, max([4, *(len(printable_name(c["name"])) for c in rows)]))
    return w_cls, w_from, w_to, w_name, w_prov, w_flags


def diff_lines(
    report: dict, *, width: int, only=None, toolchain_changed: bool = False, show_score: bool = True
) -> Text:
    """The change table as one Rich Text laid out to ``width`` columns: the same columns as
    :func:`diff_table_from_report`, ten times faster to print for thousands of rows (a Rich
    Table measures every cell). Only the name column gives way (ellipsis)."""
    keep = parse_only(only) if not isinstance(only, frozenset) else only
    rows = [c for c in report["changes"] if _keep(c, keep)]
    flags = [_flags(c, toolchain_changed) for c in rows]
    w_cls, w_from, w_to, w_name, w_prov, w_flags = _diff_widths(
        rows, [f.cell_len for f in flags], width, show_score
    )

    out = Text(no_wrap=True, overflow="ellipsis")

    def cell(text: Text | str, w: int, right: bool = False, style: str = "") -> Text:
        t = text if isinstance(text, Text) else Text(text, style=style)
        t = t.copy()
        if t.cell_len > w:
            t.truncate(w, overflow="ellipsis")
        pad = " " * (w - t.cell_len)
        return Text.assemble(pad, t) if right else Text.assemble(t, pad)

    head = [
        cell("change", w_cls),
        cell("from", w_from, True),
        cell("to", w_to, True),
        cell("name", w_name),
        cell("provenance", w_prov),
        cell("conf", 4, True),
    ]
    if show_score:
        head.append(cell("score", 5, True))
    head.append(cell("flags", w_flags))
    line = Text("  ").join(head)
    line.stylize("bold")
    out.append_text(line)
    out.append("\n" + "─" * line.cell_len, style="dim")
    for c, fl in zip(rows, flags, strict=True):
        cls = c["classification"]
        prov = c.get("provenance")
        name = c.get("name")
        parts = [
            cell(cls, w_cls, style=CLASS_STYLE.get(cls, "")),
            cell(_idx(c["from_index"]), w_from, True),
            cell(_idx(c["to_index"]), w_to, True),
            cell(
                lit(name, PROVENANCE_STYLE.get(prov, PROVENANCE_STYLE[None]))
                if name
                else Text("—", style="dim"),
                w_name,
            ),
            cell(
                lit(prov, PROVENANCE_STYLE.get(prov, "")) if prov else Text("—", style="dim"),
                w_prov,
            ),
            cell(_fmt_conf(c.get("confidence")), 4, True),
        ]
        if show_score:
            parts.append(cell(_fmt_conf(c.get("score")), 5, True))
        parts.append(cell(fl, w_flags))
        out.append("\n")
        out.append_text(Text("  ").join(parts))
    return out


class DiffRows:
    """:func:`diff_lines` as a renderable that writes its segments directly: the same lines
    and styles, several times faster for tens of thousands of rows (no Text per cell, no
    wrapping pass). A table wider than the console falls back to :func:`diff_lines`. Its
    lines are never wider than the console: print it with ``crop=False`` (no second pass
    over every segment)."""

    def __init__(
        self,
        report: dict,
        *,
        width: int,
        only=None,
        toolchain_changed: bool = False,
        show_score: bool = True,
    ) -> None:
        self.report, self.width, self.only = report, width, only
        self.toolchain_changed, self.show_score = toolchain_changed, show_score

    def __rich_console__(self, console, options):
        keep = parse_only(self.only) if not isinstance(self.only, frozenset) else self.only
        rows = [c for c in self.report["changes"] if _keep(c, keep)]
        flags = [_flag_parts(c, self.toolchain_changed) for c in rows]
        widths = _diff_widths(
            rows, [sum(cell_len(t) for t, _ in f) for f in flags], self.width, self.show_score
        )
        w_cls, w_from, w_to, w_name, w_prov, w_flags = widths
        line_len = sum(widths) + 4 + (5 if self.show_score else 0) + 2 * (6 + self.show_score)
        if line_len > options.max_width:  # Text's own per-line ellipsis decides
            text = diff_lines(
                self.report,
                width=self.width,
                only=keep,
                toolchain_changed=self.toolchain_changed,
                show_score=self.show_score,
            )
            text.overflow = None  # as console.print(text, crop=True): each line is cropped
            for line in Segment.split_and_crop_lines(
                console.render(text, options), options.max_width, pad=False
            ):
                yield from line
            return
        styles: dict[str, Style | None] = {"": None}

        def style_of(name: str) -> Style | None:
            if name not in styles:
                styles[name] = console.get_style(name)
            return styles[name]

        head = [
            _fit("change", w_cls),
            _fit("from", w_from, True),
            _fit("to", w_to, True),
            _fit("name", w_name),
            _fit("provenance", w_prov),
            _fit("conf", 4, True),
            *([_fit("score", 5, True)] if self.show_score else []),
            _fit("flags", w_flags),
        ]
        head_line = "  ".join(head)
        plain = plain_console(console)
        ansi = None if plain else ansi_writer(console)  # colour: each row pre-rendered
        if plain:  # no styles written: each row one string, all rows one segment
            lines = [head_line, "─" * cell_len(head_line)]
        elif ansi is not None:
            lines = [
                ansi([Segment(head_line, style_of("bold"))]),
                ansi([Segment("─" * cell_len(head_line), style_of("dim"))]),
            ]
        else:
            yield Segment(head_line, style_of("bold"))
            yield Segment.line()
            yield Segment("─" * cell_len(head_line), style_of("dim"))
        dim = ("—", "dim")
        for c, fl in zip(rows, flags, strict=True):
            cls, prov, name = c["classification"], c.get("provenance"), c.get("name")
            cells: list[tuple[list[tuple[str, str]], int, bool]] = [
                ([(cls, CLASS_STYLE.get(cls, ""))], w_cls, False),
                ([(_idx(c["from_index"]), "")], w_from, True),
                ([(_idx(c["to_index"]), "")], w_to, True),
                (
                    [(printable(name), PROVENANCE_STYLE.get(prov, PROVENANCE_STYLE[None]))]
                    if name
                    else [dim],
                    w_name,
                    False,
                ),
                (
                    [(printable(prov), PROVENANCE_STYLE.get(prov, ""))] if prov else [dim],
                    w_prov,
                    False,
                ),
                ([(_conf(c.get("confidence")), "")], 4, True),
            ]
            if self.show_score:
                cells.append(([(_conf(c.get("score")), "")], 5, True))
            cells.append((fl, w_flags, False))
            if plain:
                lines.append(row_text(cells))
                continue
            if ansi is not None:
                lines.append(ansi(row_segments(cells, style_of)))
                continue
            yield Segment.line()
            yield from row_segments(cells, style_of)
        if plain or ansi is not None:
            lines.append("")
            yield Segment("\n".join(lines))
            return
        yield Segment.line()


def _conf(value) -> str:
    return "" if value is None else f"{value:.2f}"


def _fit(text: str, w: int, right: bool = False) -> str:
    """``text`` cut to ``w`` cells with an ellipsis (as :meth:`Text.truncate`), padded."""
    if cell_len(text) > w:
        text = set_cell_size(text, w - 1) + "…"
    pad = " " * (w - cell_len(text))
    return pad + text if right else text + pad


def _names(values: list[str], style: str) -> Text:
    t = Text()
    for i, v in enumerate(values):
        if i:
            t.append(", ", style="dim")
        t.append_text(lit(v, style))
    return t


def _strings(values: list[str], style: str) -> Text:
    t = Text()
    for i, v in enumerate(values):
        if i:
            t.append("  ")
        t.append_text(lit(repr(v), style))
    return t


_ORDER_WORDS = {
    "triage": "patch-like first (triage)",
    "index": "by index",
    "weight": "most changed first",
}


def changelog_from_data(cl: dict, *, only=None):
    """Rich renderable of :func:`kbtool.services.diff.changelog.changelog` data."""

    keep = parse_only(only) if not isinstance(only, frozenset) else only

    def show(cls: str) -> bool:
        return keep is None or cls in keep

    parts: list = [
        Text.assemble(
            "\n",
            ("changelog", "bold underline"),
            " ",
            lit(cl["from"], "bold"),
            " → ",
            lit(cl["to"], "bold"),
        )
    ]
    if show("modified"):
        named = sum(1 for m in cl["modified"] if m["name"])
        parts.append(
            Text.assemble(
                ("\nmodified", CLASS_STYLE["modified"]),
                f" ({len(cl['modified'])}: {named} named, {len(cl['modified']) - named} unnamed;"
                f" {_ORDER_WORDS.get(cl.get('order', 'weight'), 'most changed first')})",
            )
        )
        for m in cl["modified"]:
            head = Text("  ")
            if m["name"]:
                head.append_text(lit(m["name"], "bold"))
            else:
                head.append(f"func[{m['to_index']}]", style="bold dim")
            head.append(f"  #{m['from_index']}→#{m['to_index']}  ", style="dim")
            head.append(
                f"{_delta(m['instr_from'], m['instr_to'], 'instr')}, "
                f"{_delta(m['size_from'], m['size_to'], 'B')}"
            )
            if m["runtime"]:
                head.append("  runtime", style="magenta")
            if m["review"]:
                head.append("  review", style="bold red")
            if "triage" in m:
                head.append(f"  triage {m['triage']:.1f}", style="cyan")
            parts.append(head)
            for r in m.get("reasons", [])[:3]:
                parts.append(Padding(lit("why: " + r, "cyan"), (0, 0, 0, 4)))
            if m.get("hint"):
                parts.append(
                    Padding(Text.assemble(("refs ", "dim"), lit(m["hint"], "dim")), (0, 0, 0, 4))
                )
            lines = []
            if m["calls_added"]:
                lines.append(
                    Text.assemble(("+ calls ", "green"), _names(m["calls_added"], "green"))
                )
            if m["calls_removed"]:
                lines.append(Text.assemble(("- calls ", "red"), _names(m["calls_removed"], "red")))
            if m["strings_added"]:
                lines.append(
                    Text.assemble(("+ strings ", "green"), _strings(m["strings_added"], "green"))
                )
            if m["strings_removed"]:
                lines.append(
                    Text.assemble(("- strings ", "red"), _strings(m["strings_removed"], "red"))
                )
            shown = ("calls added", "calls removed", "strings added", "strings removed")
            for item in m.get("items", []):
                if not item.startswith(shown) and not item.endswith(" instructions"):
                    lines.append(Text.assemble(("~ ", "yellow"), lit(item, "yellow")))
            for line in lines:
                parts.append(Padding(line, (0, 0, 0, 4)))
    if show("new"):
        parts.append(Text.assemble(("\nnew", CLASS_STYLE["new"]), f" ({len(cl['new'])})"))
        for f in cl["new"]:
            parts.append(_function_head(f, f["to_index"]))
            if f["strings"]:
                more = (
                    f" (+{f['string_count'] - len(f['strings'])} more)"
                    if f["string_count"] > len(f["strings"])
                    else ""
                )
                parts.append(
                    Padding(
                        Text.assemble(
                            ("strings ", "dim"), _strings(f["strings"], ""), (more, "dim")
                        ),
                        (0, 0, 0, 4),
                    )
                )
            if f["calls"]:
                parts.append(
                    Padding(Text.assemble(("calls ", "dim"), _names(f["calls"], "")), (0, 0, 0, 4))
                )
    if show("deleted"):
        parts.append(
            Text.assemble(("\ndeleted", CLASS_STYLE["deleted"]), f" ({len(cl['deleted'])})")
        )
        for f in cl["deleted"]:
            parts.append(_function_head(f, f["from_index"]))
            if f["strings"]:
                parts.append(
                    Padding(
                        Text.assemble(("strings ", "dim"), _strings(f["strings"], "")), (0, 0, 0, 4)
                    )
                )
    if cl["imports_added"] or cl["imports_removed"]:
        parts.append(Text("\nimports", style="bold"))
        if cl["imports_added"]:
            parts.append(Text.assemble("  ", ("+ ", "green"), _names(cl["imports_added"], "green")))
        if cl["imports_removed"]:
            parts.append(Text.assemble("  ", ("- ", "red"), _names(cl["imports_removed"], "red")))
    return Group(*parts)


def _function_head(f: dict, index: int) -> Text:
    """``#index name  N instr, M B  [runtime]`` for a new or deleted function (name literal)."""
    head = Text(f"  #{index} ")
    head.append_text(lit(f["name"] or "unnamed", "bold" if f["name"] else "dim"))
    head.append(f"  {f['instr']:,} instr, {f['size']:,} B", style="dim")
    if f["runtime"]:
        head.append("  runtime", style="magenta")
    return head


def render_view(view: dict, console, *, only=None) -> None:
    """Print a :func:`kbtool.services.diff.view.diff_view`: the summary, the change table
    (score column from 100 columns up) with the flags legend under it, then the semantic
    changelog."""
    keep = parse_only(only) if not isinstance(only, frozenset) else only
    report = view["report"]
    console.print(summary_text(report))
    console.print()
    console.print(
        DiffRows(
            report,
            width=console.width,
            only=keep,
            toolchain_changed=view["toolchain_changed"],
            show_score=console.width >= 100,
        ),
        no_wrap=True,
        crop=False,
    )
    legend = flags_legend(shown_flags(report, keep, view["toolchain_changed"]))
    if legend is not None:
        console.print(legend)
    from kbtool.render.changelog_lines import ChangelogLines

    # the same bytes as changelog_from_data printed (tests/surface/render/test_changelog_lines.py)
    console.print(ChangelogLines(view["changelog"], only=keep), crop=False)
