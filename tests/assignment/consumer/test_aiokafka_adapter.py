"""The aiokafka adapter, driven the way aiokafka's coordinator drives it (no broker)."""

from __future__ import annotations

from aiokafka.coordinator.protocol import ConsumerProtocol

from streamjoin.assignment.consumer.aiokafka_adapter import AiokafkaAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.stream_join_user_data import (
    decode_stream_join_subscription,
)


class FakeCluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.counts[topic])) if topic in self.counts else None


def rebalance(members: dict[str, AiokafkaAssignor], cluster: FakeCluster, topics: list[str]):
    """JoinGroup (metadata bytes), the leader's assign, SyncGroup (assignment bytes)."""
    joined = {
        m: ConsumerProtocol.METADATA.decode(a.metadata(topics).encode()) for m, a in members.items()
    }
    leader = members[min(members)]
    assignments = leader.assign(cluster, joined)
    result = {}
    for m, assignor in members.items():
        received = ConsumerProtocol.ASSIGNMENT.decode(assignments[m].encode())
        assignor.on_assignment(received)
        result[m] = sorted((tp.topic, tp.partition) for tp in received.partitions())
    return result


def test_name_and_subscription_come_from_the_wrapped_assignor() -> None:
    adapter = AiokafkaAssignor("fair")
    assert adapter.name == "fair"
    metadata = adapter.metadata(["b", "a"])
    assert (metadata.version, metadata.subscription, metadata.user_data) == (0, ["a", "b"], b"")
    assert AiokafkaAssignor(StickyAssignor()).name == "sticky"


def test_sticky_state_survives_aiokafkas_encoding_round_trips() -> None:
    cluster = FakeCluster({"t0": 2, "t1": 2, "t2": 2, "t3": 2})
    topics = ["t0", "t1", "t2", "t3"]
    members = {c: AiokafkaAssignor("sticky") for c in ("C0", "C1", "C2")}
    first = rebalance(members, cluster, topics)
    del members["C1"]
    second = rebalance(members, cluster, topics)
    for member in ("C0", "C2"):
        assert set(first[member]) <= set(second[member])  # KIP-54's example 1, over the wire


def test_stream_join_sticky_gets_its_epoch_through_the_assignment_user_data() -> None:
    cluster = FakeCluster({"a": 4, "b": 4})
    members = {c: AiokafkaAssignor("stream-join-sticky") for c in ("x", "y")}
    first = rebalance(members, cluster, ["a", "b"])
    members["z"] = AiokafkaAssignor("stream-join-sticky")
    second = rebalance(members, cluster, ["a", "b"])
    for partitions in second.values():
        numbers = {p for _, p in partitions}
        assert sorted(partitions) == sorted((t, n) for t in ("a", "b") for n in numbers)
    moved = sum(len(set(first[m]) - set(second[m])) for m in first)
    assert moved == 2  # partition number 1 (or 3) in both topics goes to z
    user_data = members["x"].assignor.subscription_user_data(["a", "b"])
    assert decode_stream_join_subscription(user_data).epoch == 1  # epochs 0, then 1


def test_topics_without_metadata_are_skipped() -> None:
    members = {"m": AiokafkaAssignor("range")}
    assert rebalance(members, FakeCluster({"a": 1}), ["a", "unknown"]) == {"m": [("a", 0)]}
