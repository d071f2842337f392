"""The HTTP face, `system1 serve`: FastAPI on the gateway core, run by uvicorn.

Routes (docs/serve.md has the status mapping, security and examples):
  POST /v1/judge, POST /v1/decide   the native API: exactly the payload `Gateway.judge` /
                                    `decide` take, exactly the result dict they return;
                                    `?chain=A,B` (or `?provider=`) is the CLI's `--chain`:
                                    this call's rung order
  GET  /v1/status, GET /v1/health   what `system1 status` / `system1 health` print
  GET  /healthz                     liveness + readiness (`loading` until the first rung is warm); no auth
  /mcp                              MCP Streamable HTTP (the SDK's own transport, the stdio server's tools)
  GET  /metrics                     Prometheus text (prometheus.py)
  POST /v1/systemone, GET /v1/models  the Jev wire (jev_wire.py's router)

The modules, outside in:
  serving.py   the server's lifecycle: the bind, uvicorn, graceful stop, `system1 serve`
  app.py       the ASGI app: the outer middleware (face, activity, access log), error
               handlers, the generated OpenAPI, the warm-up
  security.py  Host/Origin checks, the bearer key and the body limit, before any route runs
  routes.py    the native routes: read the body raw, let the gateway validate and answer
  mcp.py       the MCP tools' view of the gateway and the SDK's transport security

Importing this package imports nothing heavy; its modules import FastAPI, uvicorn and the
`mcp` SDK.
"""
