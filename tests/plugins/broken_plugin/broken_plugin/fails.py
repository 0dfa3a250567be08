"""A module that cannot be imported (the entry point ``broken-import``)."""

raise ImportError("broken_plugin.fails is deliberately broken")
