"""File I/O rules shared by every command: read only regular files within a size cap; write only files k3deploy wrote."""
