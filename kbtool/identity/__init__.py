"""Pure function identity: matcher records, features, the matcher, new stable ids (no DB)."""
