"""`streamjoin query app:joins STORE [KEY] --endpoint HOST:PORT`: one key of a store the running
workers keep, or (without KEY) its keys from --from-key to --to-key, asked of any worker (the
one asked forwards to each key's owner)."""

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
from streamjoin.query.stores import QueryableStore, queryable_stores

__all__ = ("register",)


async def _get(endpoints: list[str], store: str, key: str, **options: Any) -> dict[str, Any]:
    async with QueryClient(endpoints) as client:
        return await client.get(store, key, **options)


async def _range(endpoints: list[str], store: str, **options: Any) -> dict[str, Any]:
    async with QueryClient(endpoints) as client:
        return await client.range(store, **options)


def _check(
    store: QueryableStore,
    key: str | None,
    *,
    key_range: bool,
    window: bool,
    as_of: int | None,
) -> None:
    """Options that do not fit the store or each other: one line saying so."""
    if key is not None and key_range:
        fail("give a KEY or a key range (--from-key/--to-key/--limit), not both")
    if key is None and not store.ordered:
        fail(escape(f"store {store.name!r} ({store.kind}) is not ordered by key: give a KEY"))
    if window and (key is None or store.kind != "window"):
        fail(
            "--from/--to (times) apply to a KEY of a window store; key ranges: --from-key/--to-key"
        )
    if as_of is not None and (key is None or store.kind != "versioned"):
        fail(
            escape(
                f"--as-of applies to a KEY of a versioned table; {store.name!r} is a {store.kind}"
            )
        )


def query(  # noqa: PLR0917 - one parameter per command-line option
    app: Annotated[str, typer.Argument(help="The app, as MODULE:ATTRIBUTE (e.g. app:joins).")],
    store: Annotated[
        str, typer.Argument(help="A table's topic name, or a store name `describe` shows.")
    ],
    endpoint: Annotated[
        list[str],
        typer.Option(
            metavar="HOST:PORT",
            help="A worker's query endpoint (--query-port); repeat to try others if it fails.",
        ),
    ],
    key: Annotated[
        str | None,
        typer.Argument(
            help="The key (JSON for keys that are not str/bytes); without it, a table's keys "
            "from --from-key to --to-key.",
            show_default=False,
        ),
    ] = None,
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
    as_of: Annotated[
        int | None,
        typer.Option(
            "--as-of", metavar="MS", help="Versioned tables: the value valid at this time."
        ),
    ] = None,
    from_key: Annotated[
        str | None,
        typer.Option("--from-key", metavar="KEY", help="Tables without KEY: keys from this one."),
    ] = None,
    to_key: Annotated[
        str | None,
        typer.Option(
            "--to-key", metavar="KEY", help="Tables without KEY: keys before this one (excluded)."
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Tables without KEY: at most N keys (default 1000).",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", help="text (readable) or json (the answer as served).")
    ] = "text",
    app_dir: Annotated[Path, typer.Option(help="Directory to import MODULE from.")] = Path("."),
) -> None:
    """Read one key of a store, or a key range of a table, from the running workers."""
    if output_format not in ("text", "json"):
        fail(f"--format {output_format!r}: use text or json")
    try:
        stores = queryable_stores(load_app(app, app_dir).joins)
    except StreamJoinError as exc:
        fail(escape(str(exc)))
    if store not in stores:
        fail(escape(f"no store named {store!r}; the stores are: {', '.join(sorted(stores))}"))
    key_range = from_key is not None or to_key is not None or limit is not None
    window = start is not None or end is not None
    _check(stores[store], key, key_range=key_range, window=window, as_of=as_of)
    try:
        if key is None:
            answer = asyncio.run(
                _range(
                    endpoint,
                    store,
                    start=from_key,
                    end=to_key,
                    allow_stale=allow_stale,
                    limit=limit,
                )
            )
        else:
            answer = asyncio.run(
                _get(
                    endpoint,
                    store,
                    key,
                    allow_stale=allow_stale,
                    start_ms=start,
                    end_ms=end,
                    as_of_ms=as_of,
                )
            )
    except QueryFailed as exc:
        fail(escape(f"{exc} (status {exc.status})" if exc.status else str(exc)), 1)
    if output_format == "json":
        typer.echo(json.dumps(answer))
    elif key is not None:
        typer.echo(_entry(store, answer))
    else:
        for entry in answer["entries"]:
            typer.echo(_entry(store, entry))
        if answer["truncated"]:
            typer.echo(f"(the first {len(answer['entries'])} keys: more with a higher --limit)")


def _entry(store: str, answer: dict[str, Any]) -> str:
    """One key's answer as two lines (three for a versioned table's)."""
    key = answer["key"] if isinstance(answer["key"], str) else json.dumps(answer["key"])
    text = (
        f"{store} {key} = {json.dumps(answer['value'])}\n"
        f"  partition {answer['partition']}, {answer['role']} copy at {answer['served_by']}, "
        f"lag {answer['lag_records']} records / {answer['lag_ms']} ms"
    )
    if "valid_to" in answer:
        until = "still valid" if answer["valid_to"] is None else f"to {answer['valid_to']}"
        text += f"\n  valid from {answer['timestamp']} {until}"
    return text


def register(app: typer.Typer) -> None:
    app.command()(query)
