"""The conformance matrix around single turns: cells, runs, reports, reproduction, CI plans."""
