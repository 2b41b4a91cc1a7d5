"""The one error type of the wasm layer."""

from __future__ import annotations


class WasmFormatError(ValueError):
    """Malformed or truncated WebAssembly input.

    ``offset`` is the byte offset in the file where the reader stopped, ``expected`` says
    what it expected to find there; ``detail`` optionally adds context.
    ``str(e) == f"offset 0x{offset:x}: expected {expected}"`` (+ ``"; " + detail``).
    """

    def __init__(self, offset: int, expected: str, detail: str | None = None) -> None:
        self.offset = int(offset)
        self.expected = expected
        self.detail = detail
        msg = f"offset 0x{self.offset:x}: expected {expected}"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)

    def __reduce__(self):  # picklable across worker processes
        return (WasmFormatError, (self.offset, self.expected, self.detail))
