"""Ask each worker's endpoint for its live state (GET <status URL>/status), all at once, each
within a few seconds: a worker that does not answer leaves only its live figures out."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import aiohttp

__all__ = ("fetch_statuses",)


async def fetch_statuses(
    urls: Iterable[str], timeout_s: float = 3.0
) -> dict[str, dict[str, Any] | str]:
    """Each URL's /status document, or one line saying why there is none."""
    wanted = sorted(set(urls))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
        answers = await asyncio.gather(*(_fetch(session, url, timeout_s) for url in wanted))
    return dict(zip(wanted, answers, strict=True))


async def _fetch(
    session: aiohttp.ClientSession, url: str, timeout_s: float
) -> dict[str, Any] | str:
    try:
        async with session.get(url.rstrip("/") + "/status") as response:
            if response.status != 200:
                return f"HTTP {response.status} from {url}/status"
            document = await response.json(content_type=None)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except aiohttp.ClientConnectorError as exc:
        return f"cannot connect ({exc.os_error.strerror or exc.os_error})"
    except (aiohttp.ClientError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}".rstrip(": ")
    if not isinstance(document, dict) or "members" not in document:
        return f"{url}/status did not answer with a worker's status"
    return document
