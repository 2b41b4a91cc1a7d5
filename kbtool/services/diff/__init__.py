"""Diff services: pairing two stored versions, the report, the changelog, carry-over."""
