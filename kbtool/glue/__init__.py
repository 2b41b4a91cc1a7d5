"""kbtool.glue: JavaScript loaders shipped beside a module (read as untrusted text, never run)."""

from .emscripten import NO_SHAPE_NOTE, GlueNames, parse_glue

__all__ = ["NO_SHAPE_NOTE", "GlueNames", "parse_glue"]
