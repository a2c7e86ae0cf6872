"""The dashboard (docs/dashboard.md): read-only pages under /ui/ of the HTTP port, gathered through the
admin calls (so any broker of a cluster and a `--workers` server show every broker). `routes.add_ui` mounts
it on the app rockmq/http/app.py makes; the broker and the workers supervisor hand in where the admin
calls go and how to read their own counters."""
