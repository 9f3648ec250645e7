"""The ``jobq`` command line."""
