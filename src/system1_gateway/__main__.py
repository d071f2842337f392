"""`python -m system1_gateway` runs the CLI (the MCP server takes this entry in a later release)."""

import sys

from .cli import main

sys.exit(main())
