"""kbtool.glue: JavaScript loaders shipped beside a module (read as untrusted text, never run)."""

from .emscripten import parse_glue
from .model import NO_SHAPE_NOTE, GlueNames

__all__ = ["NO_SHAPE_NOTE", "GlueNames", "parse_glue"]
