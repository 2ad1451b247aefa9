"""Network reads shared by the commands: every body streamed under a byte cap and inside a time budget."""
