"""Storage backends behind one contract (``base.Store``). Only this package touches SQL."""
