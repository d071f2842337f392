"""Helpers shared by the test modules: starting the real processes a test talks to (the CLI,
`system1 serve`, the daemon) and talking HTTP to them. Test modules import from here, never
from one another; `daemon.start_daemon` is a fixture, registered for every module by
conftest.py's `pytest_plugins`."""
