"""The package's architecture rules, read from its source (and, for start-up, from what a command loads)."""
