"""A worker on Apache Kafka, as a user starts it with a client.properties file: it joins over
mutual TLS (metrics on loopback), and after its state directory is wiped it restores from the
changelog over SASL_SSL SCRAM; `plan --from-group` reads a group over SASL_SSL SCRAM."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.broker import KafkaBroker
from streamjoin.broker.base import free_port
from streamjoin.cli import app
from streamjoin.group import CooperativeConsumer
from streamjoin.kafka.client_properties import client_properties, properties_text

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(300)]

runner = CliRunner()

APP = """
import streamjoin
from streamjoin import JoinWindows

shop = streamjoin.App("{app_id}")
orders = shop.topic("orders-{suffix}", partitions=2)
payments = shop.topic("payments-{suffix}", partitions=2)


@shop.join(orders, payments, window=JoinWindows(before=0, after=600_000), into="paid-{suffix}")
def paid(order, payment):
    return {{"order": order, "payment": payment}}
"""


def cli(*args: str, stdin: str | None = None) -> str:
    if args[0] == "consume":
        args = (*args, "--timeout", "60")
    done = runner.invoke(app, list(args), input=stdin)
    assert done.exit_code == 0, done.output
    return done.output


def start_worker(
    directory: Path, bootstrap: str, config: Path, *options: str
) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "streamjoin", "worker", "app:shop", *options]
    command += ["--app-dir", str(directory), "--state-dir", str(directory / "state")]
    command += ["--bootstrap", bootstrap, "--kafka-config", str(config)]
    command += ["--session-timeout", "3", "--commit-interval", "0.5"]
    log = (directory / "worker.log").open("a")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)


def stop(worker: subprocess.Popen[str]) -> None:
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0


def test_a_worker_joins_over_mutual_tls_and_restores_over_scram(
    secured_kafka: KafkaBroker, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    (tmp_path / "app.py").write_text(APP.format(app_id=f"tls-{suffix}", suffix=suffix))
    config = tmp_path / "client.properties"
    config.write_text(properties_text(client_properties(secured_kafka.client_security("MTLS"))))
    secured = ("--bootstrap", secured_kafka.address("MTLS"), "--kafka-config", str(config))
    topics = (f"orders-{suffix}", f"payments-{suffix}", f"paid-{suffix}")
    cli("topics", "create", *topics, "--partitions", "2", *secured)
    port = free_port("127.0.0.1")
    metrics = ("--metrics-port", str(port), "--metrics-host", "127.0.0.1")
    worker = start_worker(tmp_path, secured_kafka.address("MTLS"), config, *metrics)
    try:
        orders = '{"id": "o-1"}\n{"id": "o-2"}\n'
        cli("produce", f"orders-{suffix}", "--key-field", "id", *secured, stdin=orders)
        cli("produce", f"payments-{suffix}", *secured, stdin='o-1\t{"method": "card"}\n')
        joined = cli("consume", f"paid-{suffix}", "--from-beginning", "--max", "1", *secured)
        assert "key=o-1" in joined
        # Both orders are in the changelog once the worker has committed them.
        changelog = f"tls-{suffix}-paid-left-changelog"
        cli("consume", changelog, "--from-beginning", "--max", "2", *secured)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as served:
            assert b"streamjoin_records_in_total" in served.read()
    finally:
        stop(worker)
    shutil.rmtree(tmp_path / "state")
    scram = tmp_path / "scram.properties"
    security = secured_kafka.client_security("SASL_SSL", mechanism="SCRAM-SHA-256")
    scram.write_text(properties_text(client_properties(security)))
    worker = start_worker(tmp_path, secured_kafka.address("SASL_SSL"), scram)
    try:
        cli("produce", f"payments-{suffix}", *secured, stdin='o-2\t{"method": "voucher"}\n')
        joined = cli("consume", f"paid-{suffix}", "--from-beginning", "--max", "2", *secured)
        assert "key=o-2" in joined  # o-2's order came back from the changelog
    finally:
        stop(worker)
    log = (tmp_path / "worker.log").read_text()
    assert "Traceback" not in log
    assert re.search(r"task paid_\d restored [1-9]\d* records", log), log
    assert "alice-secret" not in log


def test_plan_reads_a_group_over_sasl_scram(secured_kafka: KafkaBroker, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    security = secured_kafka.client_security("SASL_SSL", mechanism="SCRAM-SHA-256")
    config = tmp_path / "client.properties"
    config.write_text(properties_text(client_properties(security)))
    secured = ("--bootstrap", secured_kafka.address("SASL_SSL"), "--kafka-config", str(config))
    cli("topics", "create", f"plan-{suffix}", "--partitions", "4", *secured)

    async def member_and_plan() -> str:
        async with CooperativeConsumer(
            f"plan-{suffix}",
            bootstrap_servers=secured_kafka.address("SASL_SSL"),
            security=security,
            group_id=f"plan-{suffix}",
            session_timeout_ms=3_000,
            heartbeat_interval_ms=500,
        ) as consumer:
            while len(consumer.assignment()) < 4:
                await consumer.getmany(timeout_ms=100)
            args = ["plan", "--from-group", f"plan-{suffix}", *secured, "--json"]
            return await asyncio.to_thread(cli, *args)

    planned = json.loads(asyncio.run(member_and_plan()))
    assert planned["summary"]["partitions"] == 4, planned
