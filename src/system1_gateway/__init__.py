"""System-1 Gateway: typed one-pass decisions from any engine, behind one stable interface."""

# One definition of the release: the wheel's metadata (pyproject reads `__version__`), the CLI's
# --version, `capabilities`, the MCP server info and the plugin manifests (a test holds those).
# Each minor release is named after the chapter of *Thinking, Fast and Slow* with its number.
__version__ = "0.3.0"
__codename__ = "The Lazy Controller"
