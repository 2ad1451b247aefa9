"""The profile used when none is given: the local rehearsal runs anywhere, so it is the safe default.

A module of its own so that the package's start-up names (profile/__init__.py) and the loader (profile/load.py) both
read it without importing each other."""

DEFAULT_PROFILE = "local-cpu"
