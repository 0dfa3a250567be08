"""Not a harness package: ``HARNESS`` is a string (the entry point ``broken-object``)."""

HARNESS = "not a HarnessPackage"
