"""jobq-tui: the live terminal monitor for a jobq database."""
