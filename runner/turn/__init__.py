"""The turn runtime: one case through one CLI in its container, from request to record."""
