"""After any interleaving of updates and deletes on both tables, the latest output per key of a
table-table join equals the join recomputed from the final tables (a tombstone or no output
where no result exists)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamjoin import App
from streamjoin.runtime.joins.table_table import result_exists
from streamjoin.testing import TestDriver

KEYS = ("a", "b", "c")
update = st.tuples(
    st.sampled_from(("users", "accounts")),
    st.sampled_from(KEYS),
    st.one_of(st.none(), st.integers(0, 9)),
    st.integers(0, 1_000),
)


def build(how: Any) -> App:
    app = App("props")
    users, accounts = app.table("users", partitions=2), app.table("accounts", partitions=2)

    @app.join(users, accounts, how=how, into="out")
    def pair(user: dict[str, int] | None, account: dict[str, int] | None) -> Any:
        return [user and user["v"], account and account["v"]]

    return app


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    how=st.sampled_from(("inner", "left", "outer")),
    updates=st.lists(update, max_size=30),
    commit_every=st.integers(1, 10),
)
def test_latest_output_per_key_is_the_join_of_the_final_tables(
    how: str, updates: list[tuple[str, str, int | None, int]], commit_every: int
) -> None:
    tables: dict[str, dict[str, int]] = {"users": {}, "accounts": {}}
    with TestDriver(build(how)) as driver:
        for index, (topic, key, value, timestamp) in enumerate(updates):
            driver.pipe(
                topic, None if value is None else {"v": value}, key=key, timestamp=timestamp
            )
            if value is None:
                tables[topic].pop(key, None)
            else:
                tables[topic][key] = value
            if index % commit_every == 0:
                driver.commit()
        latest = {r.key: r.value for r in driver.read_output("out")}
    for key in KEYS:
        user, account = tables["users"].get(key), tables["accounts"].get(key)
        if result_exists(how, user is not None, account is not None):
            assert latest.get(key) == [user, account]
        else:
            assert latest.get(key) is None  # never emitted, or retracted by a tombstone
