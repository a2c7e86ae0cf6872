"""The HTTP port (docs/operations.md "Metrics"): a small aiohttp app on the server's own asyncio loop
serving /metrics (Prometheus text), /healthz and /readyz, HTTPS with the gRPC port's certificate and
/metrics behind HTTP Basic with authentication on. A later page (the dashboard) adds its routes to the
same app (`app.routes`)."""
