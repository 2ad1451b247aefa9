"""The only package that imports `kubernetes` (always lazily, inside functions)."""
