"""The web front-end: the dashboard page and the read-only JSON API.

``kbtool.web.router.route`` is the pure routing function (the single source of truth);
``kbtool.web.app.create_app`` adapts it to Starlette and ``kbtool.web.app.serve`` runs it
on uvicorn. Starlette and uvicorn are imported only by :mod:`kbtool.web.app`.
"""

from kbtool.web.router import route

__all__ = ["route"]
