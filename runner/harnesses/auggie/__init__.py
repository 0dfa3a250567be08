"""Augment Auggie CLI (``auggie --print --output-format json``): why its column is unavailable.

Profile: ``harness_profiles/auggie.yaml``. Why it is unavailable, and what was measured: ``docs/columns/auggie.md``.
"""
