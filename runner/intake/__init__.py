"""The one intake: what a turn reads that the CLI in the box could have written, read bounded, never trusted."""
