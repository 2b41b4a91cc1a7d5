"""Pure static analyses over decoded modules (no DB)."""
