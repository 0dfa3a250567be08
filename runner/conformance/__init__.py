"""Conformance: the cases (matrix rows), the prompt a CLI is given, and the behaviours a CLI can show."""
