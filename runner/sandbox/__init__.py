"""The Docker Engine, pinned images and the hardened container."""
