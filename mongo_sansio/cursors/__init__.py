"""(being written: see issue 5)."""
