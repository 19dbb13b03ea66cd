"""How many tasks each client should get: capacity-proportional shares rounded stickily.

Balance is decided on counts before any task is placed. A client's share of N tasks is
N x capacity / total capacity, rounded down or up; the clients that get the extra one are those
that already hold more than the rounded-down share, so as few tasks as possible move. The same
rounding is done per subtopology (a "row") together with the per-client totals, so that every
subtopology is spread over the clients as well.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from streamjoin.assignment.tasks.augmenting import augment

__all__ = ("apportion", "row_quotas", "share_ranges")


def share_ranges(
    total: int,
    weights: Mapping[str, int],
    lower: Mapping[str, int] | None = None,
    upper: Mapping[str, int] | None = None,
) -> dict[str, tuple[int, int]]:
    """Each client's share of `total` by weight, kept within [lower, upper], rounded both ways.

    Shares are clamp(level x weight) with the level that makes them add up to `total`
    (water-filling), in exact arithmetic so that an integral share has a single rounding. A
    client of weight 0 gets its lower bound.
    """
    clients = sorted(weights)
    low = {client: (lower or {}).get(client, 0) for client in clients}
    high = {client: (upper or {}).get(client, total) for client in clients}
    if sum(low.values()) > total or sum(high.values()) < total:
        raise ValueError(f"cannot split {total} within the given bounds")
    shares = {client: Fraction(low[client]) for client in clients if not weights[client]}
    free = [client for client in clients if weights[client]]
    while free:
        level = Fraction(total - sum(shares.values()), sum(weights[c] for c in free))
        below = [c for c in free if level * weights[c] < low[c]]
        above = [c for c in free if level * weights[c] > high[c]]
        if not below and not above:
            shares.update((c, level * weights[c]) for c in free)
            break
        short = sum(low[c] - level * weights[c] for c in below)
        over = sum(level * weights[c] - high[c] for c in above)
        if short >= over:
            shares.update((c, Fraction(low[c])) for c in below)
        if over >= short:
            shares.update((c, Fraction(high[c])) for c in above)
        free = [c for c in free if c not in shares]
    return {
        client: (share.numerator // share.denominator, -(-share.numerator // share.denominator))
        for client, share in shares.items()
    }


def apportion(
    total: int,
    weights: Mapping[str, int],
    prefer: Callable[[str, int], Any],
    lower: Mapping[str, int] | None = None,
    upper: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Split `total` by weight within [lower, upper]: shares rounded down, then up for the
    clients with a fractional share that `prefer(client, rounded_down_share)` ranks first."""
    ranges = share_ranges(total, weights, lower, upper)
    counts = {client: low for client, (low, _) in ranges.items()}
    fractional = sorted(
        (c for c, (low, high) in ranges.items() if high > low), key=lambda c: prefer(c, counts[c])
    )
    for client in fractional[: total - sum(counts.values())]:
        counts[client] += 1
    return counts


def row_quotas(
    rows: Mapping[int, int],
    weights: Mapping[str, int],
    bounds: Mapping[str, tuple[int, int]],
    held: Mapping[int, Mapping[str, int]],
    hostable: Mapping[int, Mapping[str, int]],
) -> dict[int, dict[str, int]]:
    """Per row and client, how many of the row's tasks the client gets.

    Every client gets its capacity share of each row rounded down. The rows' remaining tasks
    (the "extras") go one per client to clients whose share of the row is fractional, so that
    each client's cells add up to a total within `bounds` (the bounds must admit the rows' task
    count). Extras go first where `held` says the client already has more than its rounded-down
    share, next where `hostable` (tasks nobody holds that the client could take over at once)
    would fill it beyond, then to the clients furthest below their bounds. When that leaves a
    row or a client short, earlier extras are re-routed along augmenting paths, which always
    succeeds when capacities are equal; only if it fails does a cell leave its rounded range.
    """
    quota = _RowQuota(rows, weights, bounds)
    quota.give_where_claimed(held)
    quota.give_where_claimed(
        {
            row: {c: held.get(row, {}).get(c, 0) + n for c, n in wanted.items()}
            for row, wanted in hostable.items()
        }
    )
    quota.give_by_need()
    quota.complete_rows()
    quota.lift_to_lower_bounds()
    cells = quota.cells
    for row, chosen in quota.picks.items():
        for client in chosen:
            cells[row][client] += 1
    return cells


class _RowQuota:
    """Rounded-down cells, the extras still to hand out, and who got which so far."""

    def __init__(
        self,
        rows: Mapping[int, int],
        weights: Mapping[str, int],
        bounds: Mapping[str, tuple[int, int]],
    ) -> None:
        self.clients = sorted(weights)
        self.weights = weights
        capacity = sum(weights.values())
        self.order = sorted(rows)
        self.cells: dict[int, dict[str, int]] = {}
        self.eligible: dict[int, set[str]] = {}
        base_total = dict.fromkeys(self.clients, 0)
        for row in self.order:
            self.cells[row] = {}
            self.eligible[row] = set()
            for client in self.clients:
                base, rest = divmod(rows[row] * weights[client], capacity)
                self.cells[row][client] = base
                base_total[client] += base
                if rest:
                    self.eligible[row].add(client)
        self.low = {c: bounds[c][0] - base_total[c] for c in self.clients}
        self.room = {c: bounds[c][1] - base_total[c] for c in self.clients}
        """Extras each client may still take before reaching its upper bound."""
        for client in self.clients:
            self._give_back(client)
        self.extras = {row: rows[row] - sum(self.cells[row].values()) for row in self.order}
        self.picks: dict[int, list[str]] = {row: [] for row in self.order}
        self.holders: dict[str, list[int]] = {client: [] for client in self.clients}

    def _give_back(self, client: str) -> None:
        """Lower a client's cells while their rounded-down shares exceed its upper bound.

        Only heterogeneous capacities under totals constrained from outside can cause this.
        """
        rows = [row for row in self.order if self.cells[row][client] > 0]
        while self.room[client] < 0:
            for row in rows:
                if self.room[client] < 0 and self.cells[row][client] > 0:
                    self.cells[row][client] -= 1
                    self.eligible[row].discard(client)
                    self.room[client] += 1
                    self.low[client] += 1

    def pick(self, row: int, client: str) -> None:
        self.picks[row].append(client)
        self.holders[client].append(row)
        self.room[client] -= 1
        self.low[client] -= 1
        self.extras[row] -= 1

    def give_where_claimed(self, claims: Mapping[int, Mapping[str, int]]) -> None:
        """Extras to clients that claim more of the row than their rounded-down share."""
        for row in self.order:
            claimed = claims.get(row, {})
            ranked = sorted(
                (
                    c
                    for c, n in claimed.items()
                    if c in self.eligible[row]
                    and c not in self.picks[row]
                    and n > self.cells[row][c]
                ),
                key=lambda c: (self.cells[row][c] - claimed[c], c),
            )
            for client in ranked:
                if self.extras[row] and self.room[client] > 0:
                    self.pick(row, client)

    def give_by_need(self) -> None:
        """Remaining extras to the clients furthest below their lower, then upper, bound."""
        for row in self.order:
            if self.extras[row]:
                ranked = sorted(
                    (
                        c
                        for c in self.eligible[row]
                        if self.room[c] > 0 and c not in self.picks[row]
                    ),
                    key=lambda c: (-self.low[c], -self.room[c], c),
                )
                for client in ranked[: self.extras[row]]:
                    self.pick(row, client)

    def complete_rows(self) -> None:
        """Hand out the extras no eligible client with room could take."""
        for row in self.order:
            while self.extras[row]:
                gained = augment(
                    row,
                    self.clients,
                    picks=self.picks,
                    holders=self.holders,
                    spare=self.room,
                    allowed=lambda r, c: c in self.eligible[r],
                )
                if gained is None:
                    self.pick(row, min(self.clients, key=lambda c: (-self.room[c], c)))
                else:
                    self.low[gained] -= 1
                    self.extras[row] -= 1

    def lift_to_lower_bounds(self) -> None:
        """Move extras to clients below their lower bound from clients above theirs."""
        for client in self.clients:
            while self.low[client] > 0:
                if self._lift(client):
                    continue
                donors = [c for c in self.clients if self.low[c] < 0 and self.holders[c]]
                if donors:
                    donor = min(donors, key=lambda c: (self.low[c], c))
                    self._move(self.holders[donor][-1], donor, client)
                elif not self._move_cell(client):
                    break

    def _move_cell(self, needy: str) -> bool:
        """Give `needy` one of a rounded-down cell's tasks from a client above its lower bound.

        The last resort, when no extra can reach `needy`: say capacities 2, 2, 2, 1, 1 and
        shares of a 4-task row 1, 1, 1, 0.5, 0.5 with one extra, while both capacity-1 clients
        are short of their totals. Totals come first (Kafka's B1); the row's spread then ends
        at most one task per unit of capacity wider. The cell taken from is the one where the
        donor is fullest for its capacity against `needy`.
        """
        options = [
            (row, donor)
            for donor in self.clients
            if self.low[donor] < 0
            for row in self.order
            if self.cells[row][donor] > 0
        ]
        if not options:
            return False

        def gap(option: tuple[int, str]) -> tuple[Fraction, int, str]:
            row, donor = option
            cells = self.cells[row]
            fuller = Fraction(cells[donor], self.weights[donor]) - Fraction(
                cells[needy] + 1, self.weights[needy]
            )
            return (-fuller, row, donor)

        row, donor = min(options, key=gap)
        self.cells[row][donor] -= 1
        self.cells[row][needy] += 1
        for client, step in ((donor, 1), (needy, -1)):
            self.room[client] += step
            self.low[client] += step
        return True

    def _lift(self, needy: str) -> bool:
        """Give `needy` one more extra along a path that ends at a client above its bound."""
        parent: dict[str, tuple[int, str]] = {}
        queue = deque([needy])
        seen = {needy}
        while queue:
            taker = queue.popleft()
            for row in self.order:
                if taker not in self.eligible[row] or taker in self.picks[row]:
                    continue
                for giver in self.picks[row]:
                    if giver in seen:
                        continue
                    parent[giver] = (row, taker)
                    if self.low[giver] < 0:
                        self._shift(parent, giver, needy)
                        return True
                    seen.add(giver)
                    queue.append(giver)
        return False

    def _shift(self, parent: Mapping[str, tuple[int, str]], donor: str, needy: str) -> None:
        """Apply a lifting path: each client on it passes one extra toward `needy`."""
        giver = donor
        while giver != needy:
            row, taker = parent[giver]
            self._move(row, giver, taker)
            giver = taker

    def _move(self, row: int, giver: str, taker: str) -> None:
        self.picks[row].remove(giver)
        self.holders[giver].remove(row)
        self.picks[row].append(taker)
        self.holders[taker].append(row)
        for client, step in ((giver, 1), (taker, -1)):
            self.room[client] += step
            self.low[client] += step
