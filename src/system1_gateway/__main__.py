"""`python -I -m system1_gateway`: the stdio MCP server (what MCP clients register)."""

import sys

from .mcp_server import main

sys.exit(main())
