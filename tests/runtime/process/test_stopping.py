"""A failed worker's stop steps end within seconds even when what they wait for never comes (a
send to a deleted topic waits for its metadata for minutes), and the right error comes out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from aiokafka.errors import KafkaConnectionError

from streamjoin.runtime.process import stopping
from streamjoin.runtime.process.stopping import closed, until_failed


@pytest.fixture(autouse=True)
def short_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopping, "_STEP_S", 0.05)


async def forever() -> None:
    await asyncio.Event().wait()


@pytest.fixture
async def released() -> AsyncIterator[asyncio.Event]:
    """Set when the test ends, so that what it left behind ends too: the session's event loop
    outlives the test, and a pending task collected later logs "Task was destroyed but it is
    pending!" inside another test."""
    release = asyncio.Event()
    yield release
    release.set()
    await asyncio.sleep(0.01)


async def stubborn(finished: list[str], released: asyncio.Event) -> None:
    """Waits until the test ends, and shrugs its first cancellation off (as a client's close
    that waits for its own requests may)."""
    try:
        await released.wait()
    except asyncio.CancelledError:
        await released.wait()
    finished.append("at the test's end")


async def test_a_close_that_never_ends_is_left_behind(
    caplog: pytest.LogCaptureFixture, released: asyncio.Event
) -> None:
    finished: list[str] = []
    await closed(stubborn(finished, released), quickly=True)
    assert not finished
    assert "left behind" in caplog.text


async def test_a_close_failing_on_the_broker_is_quiet_and_any_other_error_raised() -> None:
    async def refused() -> None:
        raise KafkaConnectionError("gone")

    async def broken() -> None:
        raise ValueError("a bug")

    await closed(refused(), quickly=True)
    with pytest.raises(ValueError, match="a bug"):
        await closed(broken(), quickly=True)


async def test_a_healthy_stop_waits_for_the_close() -> None:
    async def slow() -> None:
        await asyncio.sleep(0.2)  # four steps: not bounded when nothing failed
        done.append(True)

    done: list[bool] = []
    await closed(slow(), quickly=False)
    assert done == [True]


async def test_the_watch_error_comes_out_though_the_loop_will_not_stop(
    caplog: pytest.LogCaptureFixture, released: asyncio.Event
) -> None:
    async def watch() -> None:
        raise RuntimeError("the broker no longer has the app's topics")

    caplog.set_level(logging.WARNING, "streamjoin.runtime.process.stopping")
    with pytest.raises(RuntimeError, match="no longer has"):
        await until_failed(stubborn([], released), watch())
    assert "worker loop did not stop when cancelled" in caplog.text


async def test_the_loop_ending_ends_the_watch_and_its_error_comes_out() -> None:
    async def loop() -> None:
        raise ValueError("a record could not be processed")

    with pytest.raises(ValueError, match="could not be processed"):
        await until_failed(loop(), forever())
    await until_failed(asyncio.sleep(0), forever())
