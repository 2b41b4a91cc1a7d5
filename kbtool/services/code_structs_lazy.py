"""The recovered structs' C layouts made on first use (issue 30 point 1): only the lifted C
asks for them (its field hook), so a version read back from the code store
(:mod:`kbtool.services.code_store`) shows its disassembly without decoding ffmpeg's ~900
structs (~450 KB) or laying them out (~20 ms of a cold preparation's CPU)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kbtool.services.code_structs import StructFields

_MADE = ("layouts", "members", "_params")  # what StructFields.__init__ sets from the structs


class LazyStructFields(StructFields):
    """:class:`StructFields` over ``structs()``, called (once) when a layout is first
    needed. ``hooked`` is what ``bool()`` of the built one is (kept beside the structs), so
    asking whether there is a hook at all does not build it."""

    def __init__(self, structs: Callable[[], list[dict[str, Any]]], hooked: bool) -> None:
        self.lm = None
        self._structs = structs
        self._hooked = hooked
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return self._hooked

    def __getattr__(self, name: str) -> Any:
        if name not in _MADE:
            raise AttributeError(name)
        with self._lock:
            if "layouts" not in self.__dict__:
                lm = self.lm
                built = StructFields(self._structs())
                self._params = built._params
                self.members = built.members
                self.layouts = built.layouts
                self.lm = lm
        return self.__dict__[name]
