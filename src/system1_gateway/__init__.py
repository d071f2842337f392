"""System-1 Gateway: typed one-pass decisions from any engine, behind one stable interface."""

__version__ = "0.1.0"
