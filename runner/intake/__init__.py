"""The one intake: what a turn reads that the CLI in the box could have written, read bounded, never trusted.

The rule: everything the CLI could have written (files in its HOME and the turn dir, the stream transport's archives
and frames, what it prints, its model requests) is hostile input. It reaches runner through this package alone, read
bounded while it is read (never read whole and checked after), without following a link, with every path confined to
where it must be, and never taken for one of runner's own files. :mod:`runner.intake.payload` holds the byte side
(JSON of bounded depth and size, text that is valid Unicode, compressed bodies inflated up to a bound), pure;
:mod:`runner.intake.files` the file side (a tree opened component by component from a directory descriptor runner
owns, regular files only, and a bounded copy or extraction into a directory runner owns).

This package is a floor of its own in the layer rule (tests/unit/test_layers.py): it imports nothing of runner but
:mod:`runner.errors`, and every layer above it may use it (the core, which does no I/O, only its pure side).
"""
