"""`streamjoin describe`: the topology as text and as JSON, and a clear error for a bad app."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.broker import Broker
from streamjoin.cli import app
from streamjoin.kafka.topics import TopicSpec, ensure_topics

runner = CliRunner()

APP = """
import streamjoin
from streamjoin import JoinWindows

joins = streamjoin.App("shop")
orders = joins.topic("orders", partitions=4)
payments = joins.topic("payments")
shipments = joins.topic("shipments", partitions=4)
paid = joins.topic("paid")

@joins.join(orders, payments.filter(lambda p: p["ok"]).key_by("order_id"),
            window=JoinWindows.of(60_000), how="left", into=paid)
def pay(order, payment):
    return order

@joins.join(paid, shipments, window=JoinWindows.of(60_000), into="shipped")
def ship(order, shipment):
    return order
"""

CYCLE = """
import streamjoin
from streamjoin import JoinWindows

joins = streamjoin.App("loop")
a, b = joins.topic("a"), joins.topic("b")
joins.join(a, b, window=JoinWindows.of(1), into="c", name="one")(lambda l, r: l)
joins.join(joins.topic("c"), joins.topic("d"), window=JoinWindows.of(1), into=a, name="two")(
    lambda l, r: l
)
"""


def write(tmp_path: Path, source: str, module: str = "shop_app") -> str:
    (tmp_path / f"{module}.py").write_text(source)
    return str(tmp_path)


def test_text_names_sub_topologies_steps_stores_and_internal_topics(tmp_path: Path) -> None:
    result = runner.invoke(app, ["describe", "shop_app:joins", "--app-dir", write(tmp_path, APP)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Sub-topology 0: pay (4 tasks)" in out
    assert "Source: shop-pay-right-repartition (4 partitions) [right]" in out
    assert "Processor: left windowed stream-stream join, window before=60000ms" in out
    assert "store: pay-pending (kv), changelog shop-pay-pending-changelog" in out
    assert "Sub-topology 2: pay-right-repartition (? tasks, stateless)" in out
    assert "Processor: filter(<lambda>)\n    Processor: key_by('order_id')" in out
    assert "Sink: shop-pay-right-repartition (4 partitions) --> Sub-topology 0" in out
    assert "Sink: paid (4 partitions) --> Sub-topology 1" in out
    assert "Source: paid (4 partitions) [left]" in out  # the chained join
    assert "shop-pay-right-repartition: repartition of key_by 'pay-right', 4 partitions" in out
    assert "shop-dlq: dead-letter" in out


def test_a_join_with_no_grace_behind_a_key_by_is_warned_about(tmp_path: Path) -> None:
    """`pay` reads payments through a key_by with no grace: its late records have nothing to
    absorb them (issue 35). `ship` reads no repartition topic; a grace silences the warning."""
    result = runner.invoke(app, ["describe", "shop_app:joins", "--app-dir", write(tmp_path, APP)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1, result.output
    assert "join 'pay' has no grace and reads payments through a key_by" in warnings[0]
    assert "JoinWindows(grace=...)" in warnings[0]
    graced = APP.replace("JoinWindows.of(60_000), how", "JoinWindows.of(60_000, grace=5_000), how")
    result = runner.invoke(
        app, ["describe", "graced_app:joins", "--app-dir", write(tmp_path, graced, "graced_app")]
    )
    assert result.exit_code == 0, result.output
    assert "Warning:" not in result.output, result.output


def test_json_for_tools(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["describe", "shop_app:joins", "--app-dir", write(tmp_path, APP), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    assert described["join_order"] == ["pay", "ship"]
    kinds = [(s["id"], s["name"], s["kind"]) for s in described["subtopologies"]]
    assert kinds == [
        (0, "pay", "join"),
        (1, "ship", "join"),
        (2, "pay-right-repartition", "repartition"),
    ]
    internal = {t["topic"]: (t["kind"], t["partitions"]) for t in described["internal_topics"]}
    assert internal["shop-pay-right-repartition"] == ("repartition", 4)
    assert internal["shop-ship-left-changelog"] == ("changelog", 4)


def test_a_cycle_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    app_dir = write(tmp_path, CYCLE, "cycle_app")
    result = runner.invoke(app, ["describe", "cycle_app:joins", "--app-dir", app_dir])
    assert result.exit_code == 2
    assert "error: the joins form a cycle ('one' <- 'two' <- 'one')" in " ".join(
        result.output.split()
    )
    assert "Traceback" not in result.output
    bad = runner.invoke(app, ["describe", "shop_app:joins", "--format", "yaml"])
    assert bad.exit_code == 2 and "use text or json" in bad.output


BROKER_APP = """
import streamjoin
from streamjoin import JoinWindows

joins = streamjoin.App("described")
clicks = joins.topic("clicks-{suffix}")
joins.join(joins.topic("views-{suffix}"), clicks.key_by("view"), window=JoinWindows.of(1),
           into="out-{suffix}", name="j")(lambda v, c: v)
"""


@pytest.mark.broker
async def test_partition_counts_from_the_broker(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await ensure_topics(
        broker.bootstrap, [TopicSpec(f"views-{unique}", 5), TopicSpec(f"clicks-{unique}", 2)]
    )
    app_dir = write(tmp_path, BROKER_APP.format(suffix=unique), f"broker_app_{unique}")
    arguments = ["describe", f"broker_app_{unique}:joins", "--app-dir", app_dir]
    arguments += ["--bootstrap", broker.bootstrap, "--format", "json"]
    result = await asyncio.to_thread(runner.invoke, app, arguments)
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    tasks = {s["name"]: s["tasks"] for s in described["subtopologies"]}
    assert tasks == {"j": 5, "j-right-repartition": 2}
    internal = {t["topic"]: t["partitions"] for t in described["internal_topics"]}
    assert internal["described-j-right-repartition"] == 5


GLOBAL = """
import streamjoin

joins = streamjoin.App("geo")
visits = joins.topic("visits", partitions=4)
countries = joins.global_table("countries", partitions=3)

@joins.join(visits, countries, key="country", how="left", into="visits-geo")
def locate(visit, country):
    return visit
"""


def test_a_global_table_shows_its_store_and_source_topic(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["describe", "geo_app:joins", "--app-dir", write(tmp_path, GLOBAL, "geo_app")]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Sub-topology 0: locate (4 tasks)" in out
    assert "Source: visits (4 partitions) [left]" in out
    assert "Source: countries" not in out  # read by every worker, not by the tasks
    assert "Processor: left stream-global-table join" in out
    assert "global store: global/countries, looked up by key('country')" in out
    assert "global/countries: source countries (3 partitions), read by locate" in out


TABLES = """
import streamjoin

joins = streamjoin.App("bank")
users, accounts = joins.table("users", partitions=2), joins.table("accounts", partitions=2)

@joins.join(users, accounts, how="outer", into="user-accounts")
def user_account(user, account):
    return [user, account]
"""


def test_table_stores_restore_from_the_tables_own_topics(tmp_path: Path) -> None:
    app_dir = write(tmp_path, TABLES, "bank_app")
    result = runner.invoke(app, ["describe", "bank_app:joins", "--app-dir", app_dir])
    assert result.exit_code == 0, result.output
    assert "Processor: outer table-table join" in result.output
    assert "store: user_account-left (kv), changelog users (the table's own topic)" in result.output
    assert "store: user_account-right (kv), changelog accounts (the table's own topic)" in (
        result.output
    )
    assert "-changelog" not in result.output  # no changelog of their own
