"""What the front-ends need from the naming backends, through services: the error they
catch, the list of backends, and the price parser of ``kbtool agent --price``."""

from __future__ import annotations

from kbtool.agents import BackendUnavailable, agent_backends
from kbtool.agents.costs import parse_price

__all__ = ["BackendUnavailable", "agent_backends", "parse_price"]
