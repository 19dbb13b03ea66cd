"""Interactive queries: read an app's tables and join state while it runs, from any worker
(HTTP on each worker's `--query-port`, the `streamjoin query` CLI and `QueryClient`)."""

from __future__ import annotations
