"""Every kbtool screen's footer: Textual's :class:`~textual.widgets.Footer`, rebuilt only when
what it shows changes.

Textual's footer recomposes (removes and mounts every key) each time the screen's bindings are
refreshed: a focus change, a new table, a row highlighted... Opening the diff screen refreshed
them eight times (~8 key widgets mounted and styled each time, before the first rows). This
footer coalesces the refreshes into one per frame, skips one that shows the same keys, and
only flips the keys' ``disabled`` state in place when nothing else changed (a row under the
cursor makes ``h`` available), grouped keys (the heatmap's moves) included. A screen under
another one is not followed (its keys are checked again when it is shown: Textual refreshes
the bindings then). A compact footer's keys are made with their ``-compact`` class already
set: Textual's key sets it when mounted (its ``compact`` watcher), which styled every key a
second time. What is drawn is Textual's.
"""

from __future__ import annotations

from collections import defaultdict

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

# the default CSS of the widgets a footer's keys are made of, as Textual adds it when the first
# of each is registered: (location, text, tie breaker, scope), read once (see DiffFooter)
_KEYS_CSS: list[tuple[tuple[str, str], str, int, str]] = []

# (key, key display, description, action, tooltip, its group's (description, compact) or
# None) of one shown key, and whether enabled
_Key = tuple[str, str, str, str, str, tuple[str, bool] | None]


class DiffFooter(Footer):
    """A :class:`Footer` that recomposes only when its keys change (see the module)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pending = False
        self._shown: tuple[tuple[_Key, ...], tuple[bool, ...]] | None = None
        self.recomposed = 0  # full rebuilds (for tests)

    def _post_register(self, app) -> None:
        """Also the keys' rules (a group, a key, a group's label: the order Textual registers
        them in), so they are parsed with the screen's first mount: added by the keys' first
        recompose, after the first frame, they made the whole stylesheet's rules map again."""
        super()._post_register(app)
        if not _KEYS_CSS:
            for widget in (KeyGroup(), FooterKey("", "", "", ""), FooterLabel("")):
                _KEYS_CSS.extend(widget._get_default_css())
        add = app.stylesheet.add_source
        for read_from, css, tie_breaker, scope in _KEYS_CSS:
            add(css, read_from=read_from, is_default_css=True, tie_breaker=tie_breaker, scope=scope)

    def _keys(self) -> tuple[tuple[_Key, ...], tuple[bool, ...]] | None:
        """The keys :meth:`Footer.compose` would show and their enabled state, or None when it
        would show the palette's (then it is rebuilt as Textual does)."""
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            return None
        by_action: defaultdict[str, list] = defaultdict(list)
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                by_action[binding.action].append((binding, enabled, tooltip))
        keys: list[_Key] = []
        states: list[bool] = []
        for multi in by_action.values():
            binding, enabled, tooltip = multi[0]
            group = binding.group
            keys.append(
                (
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    tooltip or "",
                    None if group is None else (group.description, bool(group.compact)),
                )
            )
            states.append(bool(enabled))
        return tuple(keys), tuple(states)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if self.compact and isinstance(widget, FooterKey):
                # what its watcher sets once mounted (compact bound to the footer's), unstyled
                widget.add_class("-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if not (self.is_attached and screen is self.screen and screen.is_current):
            return  # a screen under another: checked when it is shown again
        if self._pending:
            return
        self._pending = True  # one update for every refresh asked before the next frame
        self.call_after_refresh(self._update_keys)

    def _set_in_place(self, wanted: tuple[tuple[_Key, ...], tuple[bool, ...]] | None) -> bool:
        """The keys shown are ``wanted``'s (only their states set here)? Else False."""
        if wanted is None or self._shown is None:
            return False
        if wanted == self._shown:
            return True  # the same keys, the same states
        if wanted[0] != self._shown[0]:
            return False
        widgets = list(self.query(FooterKey))  # grouped keys too, in the order shown
        if len(widgets) != len(wanted[1]) or any(
            (w.key, w.action) != (k[0], k[3]) for w, k in zip(widgets, wanted[0], strict=True)
        ):
            return False
        for w, enabled in zip(widgets, wanted[1], strict=True):
            w._disabled = not enabled  # as FooterKey(disabled=...) sets them
            w.set_class(not enabled, "-disabled")
        self._shown = wanted
        return True

    async def _update_keys(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        wanted = self._keys()
        if self._set_in_place(wanted):
            return
        self._shown = wanted
        self.recomposed += 1
        await self.recompose()
