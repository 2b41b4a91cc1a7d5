"""Rich renderers over plain dicts (no DB, no SQL)."""
