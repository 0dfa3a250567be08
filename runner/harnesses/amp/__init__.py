"""Sourcegraph Amp CLI (``amp -x --stream-json``): why its column is unavailable.

Profile: ``harness_profiles/amp.yaml``. Why it is unavailable, and what was measured: ``docs/columns/amp.md``.
"""
