"""The pure core of a SharedOS turn: no I/O, no clocks of its own, fully unit-testable.

Read in the order of a turn: :mod:`vocabulary` (codes and texts as data), :mod:`outcomes`,
:mod:`canonical` (hashing), :mod:`tools` and :mod:`grants`, :mod:`world` (the conformance
world), :mod:`catalogue`, :mod:`envelope` (mediation and settlement) and :mod:`latch`;
:mod:`scrub` keeps secrets out of everything a run writes, and :mod:`visible` keeps what a CLI printed
from acting on whoever reads runner's output.
"""
