"""Harnesses: the coding-agent CLIs the runner drives inside containers, and runner's own two (the reference
client, the model-only loop).

A harness is one folder here, found by its id (``-`` as ``_``): its package (``HARNESS``, a
:class:`~runner.harnesses.package.HarnessPackage`), its profile(s), its image folder(s) under ``images/`` and its
evidence (``README.md``). What they share is beside them: profiles (:mod:`.profile`), reading a CLI's stdout
(:mod:`.stream`), runner's own interpreters and the registry of every package's (:mod:`.interpreters`).
"""
