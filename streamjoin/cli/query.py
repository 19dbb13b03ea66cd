"""`streamjoin query app:joins STORE KEY --endpoint HOST:PORT`: one key of a store the running
workers keep, asked of any of them (the one asked forwards to the key's owner)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.dsl.loading import load_app
from streamjoin.errors import StreamJoinError
from streamjoin.query.client import QueryClient, QueryFailed
from streamjoin.query.stores import queryable_stores

__all__ = ("register",)


async def _get(
    endpoints: list[str],
    store: str,
    key: str,
    *,
    allow_stale: bool,
    start: int | None,
    end: int | None,
) -> dict[str, Any]:
    async with QueryClient(endpoints) as client:
        return await client.get(store, key, allow_stale, start_ms=start, end_ms=end)


def query(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[str, typer.Argument(help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")],
    store: Annotated[
        str, typer.Argument(help="A table's topic name, or a store name `describe` shows.")
    ],
    key: Annotated[str, typer.Argument(help="The key (JSON for keys that are not str/bytes).")],
    endpoint: Annotated[
        list[str],
        typer.Option(
            metavar="HOST:PORT",
            help="A worker's query endpoint (--query-port); repeat to try others if it fails.",
        ),
    ],
    allow_stale: Annotated[
        bool,
        typer.Option(
            "--allow-stale",
            help="Accept a standby's or a restoring copy (with its lag) when no active runs.",
        ),
    ] = False,
    start: Annotated[
        int | None, typer.Option("--from", metavar="MS", help="Window stores: from this time.")
    ] = None,
    end: Annotated[
        int | None, typer.Option("--to", metavar="MS", help="Window stores: up to this time.")
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", help="text (readable) or json (the answer as served).")
    ] = "text",
    app_dir: Annotated[Path, typer.Option(help="Directory to import MODULE from.")] = Path("."),
) -> None:
    """Read one key of a table or window store from the running workers."""
    if output_format not in ("text", "json"):
        fail(f"--format {output_format!r}: use text or json")
    try:
        stores = queryable_stores(load_app(app, app_dir).joins)
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    if store not in stores:
        fail(escape(f"no store named {store!r}; the stores are: {', '.join(sorted(stores))}"))
    try:
        answer = asyncio.run(
            _get(endpoint, store, key, allow_stale=allow_stale, start=start, end=end)
        )
    except QueryFailed as exc:
        fail(escape(f"{exc} (status {exc.status})" if exc.status else str(exc)), 1)
    if output_format == "json":
        typer.echo(json.dumps(answer))
        return
    typer.echo(
        f"{answer['store']} {answer['key']} = {json.dumps(answer['value'])}\n"
        f"  partition {answer['partition']}, {answer['role']} copy at {answer['served_by']}, "
        f"lag {answer['lag_records']} records / {answer['lag_ms']} ms"
    )


def register(app: typer.Typer) -> None:
    app.command()(query)
