"""The task tests' state manager on the suite's broker; their shared helpers
(task_state_fixtures.py) sit beside them."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from streamjoin.broker import Broker
from streamjoin.state.manager import StateManager

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
async def state(broker: Broker, unique: str, tmp_path: Path) -> AsyncIterator[StateManager]:
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    manager = StateManager(
        state_dir=tmp_path, app_id=f"tasks-{unique}", bootstrap=broker.bootstrap, producer=producer
    )
    await manager.start()
    yield manager
    await manager.close()
    await producer.stop()
