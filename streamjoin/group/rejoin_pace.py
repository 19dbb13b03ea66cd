"""How soon a member may start a rebalance of its own after receiving an assignment, by broker.

Apache Kafka answers every member's SyncGroup the moment the leader's arrives, so a cooperative
follow-up can rejoin at once, as Kafka's own clients do: any wait adds to the pause of every
partition being handed over. Only for the embedded Tansu, which answers SyncGroup by polling
once a second: a rejoin within that second fails the other members' syncs, they miss the
generation and its revocations, and the next round (half the session timeout there) repeats it.
Tansu is recognised by its cluster id, its default, which `streamjoin broker` keeps.
"""

from __future__ import annotations

from typing import Final

__all__ = ("TANSU_CLUSTER_ID", "TANSU_REJOIN_DELAY_MS", "rejoin_delay_ms")

TANSU_CLUSTER_ID: Final = "tansu_cluster"
TANSU_REJOIN_DELAY_MS: Final = 1_500
"""More than Tansu's SyncGroup poll interval (1 s) plus a follower's round trip."""


def rejoin_delay_ms(cluster_id: str | None) -> int:
    """The delay for a cluster (its Metadata cluster id): Tansu's, else none."""
    return TANSU_REJOIN_DELAY_MS if cluster_id == TANSU_CLUSTER_ID else 0
