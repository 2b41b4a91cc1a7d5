"""Tool errors: every failure of a tool call reaches the client as one line.

A KB error (unknown version id or stable_id, missing or locked KB) carries its own message
(plus, for an unknown id, the tool that lists the ids); an integer SQLite cannot hold says
the range; a full disk or a disk I/O error says so; anything else is logged with its
traceback on stderr and the client reads a generic one-line internal error.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from kbtool.kb.errors import KBError, UnknownStableIdError, UnknownVersionError
from kbtool.mcp.registry import MAX_INT, AnswerTooLarge, bound

log = logging.getLogger("kbtool.mcp")


def as_tool(
    fn: Callable[..., Any],
    render: Callable[[Any], str],
    tool_error: type[Exception],
    db_path: str | None = None,
) -> Callable[..., str]:
    """``fn`` as an SDK tool: same name, docstring and parameters; returns one string;
    raises only the SDK's tool error, with a one-line message and no traceback. With
    ``db_path``, the call runs bound to that KB (:func:`kbtool.mcp.registry.bound`)."""

    @functools.wraps(fn)
    def tool(**kwargs: Any) -> str:
        try:
            if db_path is None:
                return render(fn(**kwargs))
            with bound(db_path):
                return render(fn(**kwargs))
        except KBError as exc:
            raise tool_error(message(exc)) from None
        except AnswerTooLarge as exc:
            log.warning("tool %s: %s", fn.__name__, exc)
            raise tool_error(str(exc)) from None
        except OverflowError:  # an integer SQLite cannot hold (the schemas bound them too)
            raise tool_error(f"a number is out of range (0..{MAX_INT})") from None
        except Exception as exc:
            problem = _disk_problem(exc)  # the KB's disk: an answer the agent can act on
            if problem is not None:
                log.warning("tool %s: %s", fn.__name__, exc)
                raise tool_error(
                    f"{problem}: {fn.__name__} could not write the KB; free some"
                    " space (or check the disk) and call it again"
                ) from None
            log.exception("tool %s failed", fn.__name__)
            raise tool_error(
                f"internal error in {fn.__name__}; the server's log (stderr) has the details"
            ) from None

    tool.__signature__ = inspect.signature(fn).replace(return_annotation=str)
    tool.__annotations__ = {**fn.__annotations__, "return": str}
    return tool


def _disk_problem(exc: BaseException) -> str | None:
    """``"disk full"`` for SQLite's SQLITE_FULL or an OSError ENOSPC/EDQUOT/EFBIG,
    ``"disk I/O error"`` for SQLite's SQLITE_IOERR (e.g. a file size limit), else None."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        return "disk full" if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else None
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return "disk full"
    if (code is not None and code & 0xFF == sqlite3.SQLITE_IOERR) or "disk I/O error" in str(exc):
        return "disk I/O error"
    return None


def message(exc: KBError) -> str:
    text = (str(exc) or exc.__class__.__name__).splitlines()[0]
    if isinstance(exc, UnknownVersionError):
        return text + "; over MCP, list_versions gives the ids"
    if isinstance(exc, UnknownStableIdError):
        return text + "; over MCP, list_functions(version_id) or search_symbols(query) give them"
    return text
