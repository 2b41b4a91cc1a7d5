"""Command palette provider: jump to a function by name, stable_id, index (``#1031``, ``2:1031``),
referenced string (``"text``) or constant (``=0x10``)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from kbtool.kb import queries
from kbtool.textutil import printable
from kbtool.tui.widgets.palette import name_text

if TYPE_CHECKING:
    from kbtool.tui.app import KbApp


class FunctionJumpProvider(Provider):
    """``ctrl+p`` then a name substring, stable_id prefix, ``#index``, ``"string`` or ``=const``."""

    @property
    def kb(self) -> KbApp:
        return self.app  # type: ignore[return-value]

    async def discover(self) -> Hits:
        yield DiscoveryHit(
            Text("Go to versions"),
            self.kb.action_versions,
            text="Go to versions",
            help="every ingested version (v)",
        )
        yield DiscoveryHit(
            Text("Search functions"),
            self.kb.action_search,
            text="Search functions",
            help="named functions of every version (/)",
        )
        yield DiscoveryHit(
            Text("Diff two versions"),
            self.kb.action_diff,
            text="Diff two versions",
            help="what changed between releases (d)",
        )

    async def search(self, query: str) -> Hits:
        text = query.strip()
        if not text or text.startswith(('"', "=")) and len(text) < 2:
            return
        from kbtool.services import nav  # not before the palette's first search (start-up)

        for rank, hit in enumerate(nav.located(self.kb.conn, text, self.kb.version_id)):
            display = Text()
            display.append_text(name_text(hit["name"], hit["provenance"]))
            display.append(f"  v{hit['version_id']} #{hit['index']}", style="dim")
            plain = f"#{hit['index']} {hit['name'] or 'unnamed'} {hit['stable_id']}"
            yield Hit(
                1.0 - rank * 0.01,
                display,
                partial(self.kb.open_detail, hit["version_id"], hit["index"]),
                text=plain,
                help=escape(printable(f"stable_id {hit['stable_id']}")),
            )
        rows = queries.find_functions(self.kb.conn, text, limit=20)
        for rank, row in enumerate(rows):
            display = Text()
            display.append_text(name_text(row["name"], row["provenance"]))
            display.append(f"  v{row['version_id']} #{row['index']}", style="dim")
            plain = f"{row['name'] or 'unnamed'} {row['stable_id']}"
            exact = row["name"] == text or row["stable_id"] == text
            score = 1.0 if exact else max(0.1, 0.95 - rank * 0.02)
            yield Hit(
                score,
                display,
                partial(self.kb.open_detail, row["version_id"], row["index"]),
                text=plain,
                help=escape(printable(f"stable_id {row['stable_id']}")),
            )
