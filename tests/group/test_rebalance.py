"""The member's rebalance decisions (KIP-429 and KIP-726) as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.consumer_protocol import decode_subscription
from streamjoin.assignment.consumer.registry import ASSIGNORS, create_assignor
from streamjoin.assignment.model import NO_GENERATION, RebalanceProtocol, TopicPartition
from streamjoin.group.errors import ErrorCode, FatalGroupError
from streamjoin.group.rebalance import (
    change_after_sync,
    lost_on_selection,
    protocol_of,
    revoke_before_join,
    select_assignor,
    subscription_metadata,
)

EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE

partition_sets = st.frozensets(st.builds(TopicPartition, st.sampled_from("ab"), st.integers(0, 7)))


COOPERATIVE_ASSIGNORS = {"cooperative-sticky", "stream-join-sticky"}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_the_assignor_decides_the_protocol(name: str) -> None:
    expected = COOPERATIVE if name in COOPERATIVE_ASSIGNORS else EAGER
    assert protocol_of(create_assignor(name)) is expected


def test_the_selected_protocol_picks_this_members_assignor_of_that_name() -> None:
    assignors = [create_assignor("cooperative-sticky"), create_assignor("range")]
    assert select_assignor(assignors, "range") is assignors[1]
    with pytest.raises(FatalGroupError, match=r"'roundrobin'.*cooperative-sticky, range") as error:
        select_assignor(assignors, "roundrobin")
    assert error.value.code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


@given(partition_sets)
def test_only_cooperative_holders_keep_partitions_through_the_join(
    owned: frozenset[TopicPartition],
) -> None:
    assert revoke_before_join(owned, COOPERATIVE) == frozenset()
    assert revoke_before_join(owned, EAGER) == owned
    assert revoke_before_join(owned, None) == owned


@given(partition_sets)
def test_eager_selected_after_holding_cooperatively_loses_everything(
    owned: frozenset[TopicPartition],
) -> None:
    assert lost_on_selection(owned, COOPERATIVE, EAGER) == owned
    for held, selected in [
        (COOPERATIVE, COOPERATIVE),
        (EAGER, EAGER),
        (EAGER, COOPERATIVE),
        (None, EAGER),
    ]:
        assert lost_on_selection(owned, held, selected) == frozenset()


@given(partition_sets, partition_sets, st.sampled_from([EAGER, COOPERATIVE]))
def test_the_change_after_sync_splits_ownership_exactly(
    owned: frozenset[TopicPartition],
    assigned: frozenset[TopicPartition],
    protocol: RebalanceProtocol,
) -> None:
    change = change_after_sync(owned, assigned, protocol)
    assert change.revoked | change.kept == owned
    assert change.added | change.kept == assigned
    assert not change.revoked & change.kept and not change.added & change.kept
    assert change.owned == assigned
    assert change.follow_up == (protocol is COOPERATIVE and bool(owned - assigned))


@given(partition_sets, st.integers(NO_GENERATION, 1_000), st.integers(1, 1_000))
def test_a_rejoin_after_a_completed_generation_always_changes_the_metadata(
    owned: frozenset[TopicPartition], generation: int, later: int
) -> None:
    """KAFKA-10455: the broker starts a rebalance for a follower only if its metadata changed.
    The join that led to a generation carried an older one, so any later rejoin differs."""
    for name in ("range", "cooperative-sticky"):
        assignor = create_assignor(name)
        before = subscription_metadata(assignor, ["a", "b"], owned, generation, None)
        after = subscription_metadata(assignor, ["a", "b"], owned, generation + later, None)
        assert before != after
        decoded = decode_subscription(after)
        assert decoded.generation == generation + later
        assert frozenset(decoded.owned_partitions) == owned
        assert decoded.topics == ("a", "b")
