"""The group protocol client against the embedded broker: every request and its error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiokafka.client import AIOKafkaClient

from streamjoin.assignment.consumer.consumer_protocol import (
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from streamjoin.assignment.model import Assignment, Subscription, TopicPartition
from streamjoin.broker import Broker, EmbeddedBroker
from streamjoin.group.coordinator import GroupCoordinatorClient, JoinResult
from streamjoin.group.errors import (
    CoordinatorUnavailable,
    ErrorCode,
    FatalGroupError,
    MemberFenced,
    MemberIdRequired,
)
from streamjoin.group.rejoin_pace import TANSU_REJOIN_DELAY_MS, rejoin_delay_ms
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts

pytestmark = pytest.mark.broker

SESSION_MS = 2_000  # the embedded broker holds every JoinGroup for half the session timeout


@pytest.fixture
async def client(broker: Broker) -> AsyncIterator[AIOKafkaClient]:
    kafka = AIOKafkaClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30_000)
    await kafka.bootstrap()
    yield kafka
    await kafka.close()


async def join_new_member(coordinator: GroupCoordinatorClient, topic: str) -> JoinResult:
    metadata = encode_subscription(Subscription((topic,), b"hello"))
    with pytest.raises(MemberIdRequired) as required:
        # A broker that just started may still be loading the group's coordinator.
        await coordinator.retrying(
            lambda: coordinator.join(
                member_id="",
                group_instance_id=None,
                session_timeout_ms=SESSION_MS,
                rebalance_timeout_ms=SESSION_MS,
                protocols=[("range", metadata)],
            ),
            within=60,
        )
    assert required.value.member_id
    return await coordinator.join(
        member_id=required.value.member_id,
        group_instance_id=None,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        protocols=[("range", metadata)],
    )


async def test_a_member_joins_syncs_commits_and_leaves(
    broker: Broker, client: AIOKafkaClient, unique: str
) -> None:
    topic = f"t-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    coordinator = GroupCoordinatorClient(client, f"g-{unique}")
    await coordinator.ensure_known()
    joined = await join_new_member(coordinator, topic)
    assert joined.is_leader
    assert joined.protocol_name == "range"
    [member] = joined.members
    assert member.member_id == joined.member_id
    assert decode_subscription(member.metadata).user_data == b"hello"

    mine = Assignment((TopicPartition(topic, 0), TopicPartition(topic, 1)))
    data = await coordinator.sync(
        generation=joined.generation,
        member_id=joined.member_id,
        group_instance_id=None,
        assignments={joined.member_id: encode_assignment(mine)},
    )
    assert data == encode_assignment(mine)
    await coordinator.heartbeat(generation=joined.generation, member_id=joined.member_id)

    tp0 = TopicPartition(topic, 0)
    await coordinator.commit(
        generation=joined.generation, member_id=joined.member_id, offsets={tp0: 42}
    )
    assert await coordinator.fetch_committed([tp0, TopicPartition(topic, 1)]) == {
        tp0: 42,
        TopicPartition(topic, 1): None,
    }

    with pytest.raises(MemberFenced) as stale:
        await coordinator.commit(
            generation=joined.generation - 1, member_id=joined.member_id, offsets={tp0: 50}
        )
    assert stale.value.code == ErrorCode.ILLEGAL_GENERATION
    assert not stale.value.forget_member_id
    assert f"generation {joined.generation - 1}" in str(stale.value)
    assert f"{topic}-0" in str(stale.value)
    assert (await coordinator.fetch_committed([tp0]))[tp0] == 42

    with pytest.raises(MemberFenced) as unknown:
        await coordinator.commit(
            generation=joined.generation, member_id="nobody", offsets={tp0: 50}
        )
    assert unknown.value.forget_member_id

    await coordinator.leave(member_id=joined.member_id)
    with pytest.raises(MemberFenced):
        await coordinator.heartbeat(generation=joined.generation, member_id=joined.member_id)


async def test_a_member_without_the_groups_protocol_is_refused_with_advice(
    client: AIOKafkaClient, unique: str
) -> None:
    coordinator = GroupCoordinatorClient(client, f"g-{unique}")
    await coordinator.ensure_known()
    await join_new_member(coordinator, f"t-{unique}")
    with pytest.raises(FatalGroupError, match="list that assignor too") as refused:
        await coordinator.join(
            member_id="",
            group_instance_id=None,
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=SESSION_MS,
            protocols=[("roundrobin", encode_subscription(Subscription((f"t-{unique}",))))],
        )
    assert refused.value.code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


async def test_partition_counts_never_create_a_topic(
    broker: Broker, client: AIOKafkaClient, unique: str
) -> None:
    await ensure_topics(broker.bootstrap, [TopicSpec(f"t-{unique}", 3)])
    coordinator = GroupCoordinatorClient(client, f"g-{unique}")
    counts = await coordinator.partition_counts([f"t-{unique}", f"missing-{unique}"])
    assert counts == {f"t-{unique}": 3}
    async with open_admin(broker.bootstrap) as admin:
        assert f"missing-{unique}" not in await partition_counts(admin)


async def test_an_unreachable_coordinator_is_forgotten(client: AIOKafkaClient, unique: str) -> None:
    coordinator = GroupCoordinatorClient(client, f"g-{unique}")
    coordinator.coordinator_id = 987_654  # a node that is not in the cluster
    with pytest.raises(CoordinatorUnavailable):
        await coordinator.heartbeat(generation=1, member_id="m")
    assert coordinator.coordinator_id is None
    assert await coordinator.ensure_known() != 987_654


async def test_only_tansu_makes_a_follow_up_rejoin_wait(each_broker: Broker, unique: str) -> None:
    """Apache Kafka answers every SyncGroup at once, Tansu polls: its cluster id tells it apart."""
    kafka = AIOKafkaClient(bootstrap_servers=each_broker.bootstrap)
    await kafka.bootstrap()
    try:
        coordinator = GroupCoordinatorClient(kafka, f"g-{unique}")
        await coordinator.ensure_known()
        cluster_id = await coordinator.cluster_id()
    finally:
        await kafka.close()
    assert cluster_id
    tansu = isinstance(each_broker, EmbeddedBroker)
    assert rejoin_delay_ms(cluster_id) == (TANSU_REJOIN_DELAY_MS if tansu else 0)
