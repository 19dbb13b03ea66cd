"""`streamjoin backfill` on secured topics (SASL_SSL with SCRAM-SHA-512 on Apache Kafka): the
settings travel to Spark's Python workers, which read the inputs and write the output topic."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.broker import KafkaBroker
from streamjoin.cli import app
from streamjoin.kafka.client_properties import client_properties, properties_text

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(300)]

runner = CliRunner()

APP = """
import streamjoin
from streamjoin import JoinWindows

shop = streamjoin.App("backfill-{suffix}")
orders = shop.topic("orders-{suffix}")
payments = shop.topic("payments-{suffix}")


@shop.join(orders, payments, window=JoinWindows(before=0, after=600_000), into="paid-{suffix}")
def paid(order, payment):
    return {{"order": order["id"], "method": payment["method"]}}
"""


def cli(*args: str, stdin: str | None = None) -> str:
    done = runner.invoke(app, list(args), input=stdin)
    assert done.exit_code == 0, done.output
    return done.output


def test_backfill_reads_and_writes_secured_topics(
    spark_session: object, secured_kafka: KafkaBroker, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    (tmp_path / "shop.py").write_text(APP.format(suffix=suffix))
    config = tmp_path / "client.properties"
    security = secured_kafka.client_security("SASL_SSL", mechanism="SCRAM-SHA-512")
    config.write_text(properties_text(client_properties(security)))
    secured = ("--bootstrap", secured_kafka.address("SASL_SSL"), "--kafka-config", str(config))
    topics = (f"orders-{suffix}", f"payments-{suffix}", f"backfilled-{suffix}")
    cli("topics", "create", *topics, "--partitions", "2", *secured)
    orders = '{"id": "o-1"}\n{"id": "o-2"}\n'
    cli("produce", f"orders-{suffix}", "--key-field", "id", *secured, stdin=orders)
    payments = 'o-1\t{"method": "card"}\no-2\t{"method": "voucher"}\n'
    cli("produce", f"payments-{suffix}", *secured, stdin=payments)
    done = cli(
        *("backfill", "shop:shop", "--app-dir", str(tmp_path), "--join", "paid", *secured),
        *("--output-topic", f"backfilled-{suffix}", "--master", "local[1]"),
    )
    assert "2 records" in done
    read = cli(
        *("consume", f"backfilled-{suffix}", "--from-beginning", "--max", "2"),
        *("--timeout", "30", *secured),
    )
    assert sorted(line.rsplit(" value=", 1)[1] for line in read.splitlines()) == [
        '{"order":"o-1","method":"card"}',
        '{"order":"o-2","method":"voucher"}',
    ]
