"""The command line: one module per command, the options apart (options), the entry point (main)."""
