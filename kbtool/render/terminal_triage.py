"""The short diff of ``kbtool ui diff`` / ``kbtool diff`` (issue 29.4): the summary, the top
modified functions in triage order with their reasons, one line per group for the rest. Split
from :mod:`kbtool.render.terminal`, which re-exports every name here; pure, names literal."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from kbtool.render.terminal_summary import CLASS_STYLE, _delta, printable_name, summary_text
from kbtool.render.text import lit

TOP_DEFAULT = 20  # entries the short `ui diff` lists by triage


def _fn_label(m: dict) -> Text:
    return (
        lit(m["name"], "bold")
        if m.get("name")
        else Text(f"func[{m['to_index']}]", style="bold dim")
    )


def triage_lines(view: dict, *, top: int = TOP_DEFAULT, from_id=None, to_id=None) -> Group:
    """The short diff (issue 29.4): the summary, the ``top`` modified functions in triage
    order with their reasons, then one line per group for the rest (layout changes,
    relocations, churn, other modified, new, deleted); ``--all`` gives the full listing."""
    report, cl = view["report"], view["changelog"]
    mods = cl["modified"]
    groups = cl.get("groups") or {}
    kinds = groups.get("kinds") or {}
    parts: list = [summary_text(report)]
    if cl.get("warning"):
        parts.append(Text.assemble(("warning: ", "bold yellow"), lit(cl["warning"])))
    ranked = [m for m in mods if m.get("triage_kind") in ("fix", "change")]
    shown = ranked[:top]
    parts.append(
        Text.assemble(
            ("\nmodified", CLASS_STYLE["modified"]),
            f" {len(mods)}: {kinds.get('fix', 0)} look like fixes, {kinds.get('change', 0)} other "
            f"changes, {kinds.get('churn', 0)} churn, {kinds.get('layout', 0)} offset shifts only"
            f" — top {len(shown)} by triage (patch-like first):",
        )
    )
    for rank, m in enumerate(shown, 1):
        head = Text(f"{rank:>3}. ")
        head.append_text(_fn_label(m))
        head.append(f"  #{m['from_index']}→#{m['to_index']}  ", style="dim")
        head.append(f"{_delta(m['instr_from'], m['instr_to'], 'instr')}", style="dim")
        head.append(f"  triage {m['triage']:.1f}", style="cyan")
        if m.get("runtime"):
            head.append("  runtime", style="magenta")
        parts.append(head)
        for r in m.get("reasons", [])[:3]:
            style = "green" if r.startswith("+") else "yellow"
            parts.append(Padding(lit(r, style), (0, 0, 0, 7)))
    rest = ranked[top:]
    for g in groups.get("layout", [])[:4]:
        names = ", ".join(
            printable_name(f["name"]) if f["name"] else f"func[{f['to_index']}]"
            for f in g["functions"][:4]
        )
        more = f" +{g['count'] - 4} more" if g["count"] > 4 else ""
        parts.append(
            Text.assemble(
                ("layout ", "bold yellow"),
                f"struct offsets {g['delta']:+d} ({', '.join(g['offsets'][:3])}"
                f"{', …' if len(g['offsets']) > 3 else ''}) in {g['count']} functions "
                f"({g['layout_only']} with no other change): ",
                lit(names + more, "dim"),
            )
        )
    if groups.get("relocated"):
        parts.append(
            Text.assemble(
                ("relocated ", "bold blue"),
                f"{groups['relocated']:,} functions are the same code with data addresses moved "
                f"(moved/unchanged, not modified)",
            )
        )
    churn = [m for m in mods if m.get("triage_kind") == "churn"]
    if churn:
        parts.append(
            Text.assemble(
                ("churn ", "bold magenta"),
                f"{len(churn)} refactor/inlining changes: ",
                lit(_names_of(churn), "dim"),
            )
        )
    layout_only = [m for m in mods if m.get("triage_kind") == "layout"]
    if layout_only and not groups.get("layout"):
        parts.append(
            Text.assemble(
                ("offsets ", "bold yellow"),
                f"{len(layout_only)} with offset shifts only: ",
                lit(_names_of(layout_only), "dim"),
            )
        )
    if rest:
        parts.append(
            Text.assemble(
                ("more ", "bold"),
                f"{len(rest)} lower-ranked changes: ",
                lit(_names_of(rest), "dim"),
            )
        )
    if cl["new"]:
        parts.append(
            Text.assemble(
                ("new ", CLASS_STYLE["new"]),
                f"{len(cl['new'])}: ",
                lit(_names_of(cl["new"]), "dim"),
            )
        )
    if cl["deleted"]:
        parts.append(
            Text.assemble(
                ("deleted ", CLASS_STYLE["deleted"]),
                f"{len(cl['deleted'])}: ",
                lit(_names_of(cl["deleted"], "from_index"), "dim"),
            )
        )
    if cl["imports_added"] or cl["imports_removed"]:
        parts.append(
            Text.assemble(
                ("imports ", "bold"), f"+{len(cl['imports_added'])} -{len(cl['imports_removed'])}"
            )
        )
    if from_id is not None:
        parts.append(
            Text(
                f"full listing: kbtool ui diff {from_id} {to_id} --all · one function:"
                f" kbtool ui diff {from_id} {to_id} --function STABLE_ID",
                style="dim",
            )
        )
    return Group(*parts)


def _names_of(items: list[dict], key: str = "to_index", limit: int = 6) -> str:
    names = [
        printable_name(m["name"]) if m.get("name") else f"func[{m[key]}]" for m in items[:limit]
    ]
    return ", ".join(names) + (f" +{len(items) - limit} more" if len(items) > limit else "")


def triage_counts(cl: dict, top: int = TOP_DEFAULT) -> dict:
    """How the short view accounts for every modified function (no loss): shown in the top
    list, or counted in one of the group lines."""
    mods = cl["modified"]
    ranked = [m for m in mods if m.get("triage_kind") in ("fix", "change")]
    return {
        "modified": len(mods),
        "top": min(top, len(ranked)),
        "more": max(0, len(ranked) - top),
        "churn": sum(1 for m in mods if m.get("triage_kind") == "churn"),
        "layout_only": sum(1 for m in mods if m.get("triage_kind") == "layout"),
    }
