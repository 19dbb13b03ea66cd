"""`streamjoin status` without a broker: the group's metadata decoded with streamjoin's own codecs
and joined with what the workers answered; its text view; and the one /status of a host's
processes (`--processes N`)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from streamjoin.assignment.consumer.consumer_protocol import encode_assignment, encode_subscription
from streamjoin.assignment.model import Assignment, Subscription, TopicPartition
from streamjoin.assignment.task_metadata import (
    AssignmentInfo,
    SubscriptionInfo,
    encode_assignment_info,
    encode_subscription_info,
)
from streamjoin.assignment.tasks.model import TaskId
from streamjoin.cli.status.render import render
from streamjoin.cli.status.snapshot import decode_members, group_snapshot
from streamjoin.kafka.groups import GroupDescription
from streamjoin.runtime.process.status_files import forget_status, host_status, write_status

OLD, NEW = "a" * 32, "b" * 32
OLD_URL, NEW_URL = "http://old:9100", "http://new:9100"


def member(member_id: str, process: str, url: str, told: AssignmentInfo) -> Any:
    info = SubscriptionInfo(process, capacity=2, status_url=url)
    metadata = encode_subscription(Subscription(("in",), encode_subscription_info(info)))
    partitions = tuple(TopicPartition("in", t.partition) for t in told.active)
    assignment = encode_assignment(Assignment(partitions, encode_assignment_info(told)))
    return (member_id, "streamjoin", f"/{process[:3]}", metadata, assignment)


def group() -> GroupDescription:
    zero, one = TaskId(0, 0), TaskId(0, 1)
    return GroupDescription(
        "Stable",
        "consumer",
        "streamjoin-tasks",
        [
            member("m-old", OLD, OLD_URL, AssignmentInfo(active=(zero, one))),
            member("m-new", NEW, NEW_URL, AssignmentInfo(learner=(one,), next_probe_ms=5_000)),
        ],
        {"in": 2},
    )


def live_new() -> dict[str, Any]:
    return {
        "process_id": NEW,
        "members": [
            {
                "member_id": "m-new",
                "process_id": NEW,
                "generation": 7,
                "leader": True,
                "protocol": "cooperative",
                "pid": 42,
                "index": None,
                "joined_at_ms": 1_000,
                "last_commit_ms": 2_000,
                "followup_on_catch_up": True,
                "tasks": {
                    "0_1": {
                        "name": "attr_1",
                        "role": "learner",
                        "state": "tailing",
                        "changelog_lag": 1_500,
                        "restore_rate": 500.0,
                        "eta_s": 3.0,
                    }
                },
                "rebalances": [
                    {
                        "generation": 7,
                        "at_ms": 1_000,
                        "reasons": ["member-joined"],
                        "moved": {"0_1": [None, "learner"]},
                        "pauses_s": {},
                        "took_s": 0.4,
                    },
                    {
                        "generation": 6,
                        "at_ms": 500,
                        "reasons": ["group"],
                        "moved": {},
                        "pauses_s": {},
                        "took_s": 0.1,
                    },
                ],
            }
        ],
    }


def snapshot() -> dict[str, Any]:
    described = group()
    answers: dict[str, dict[str, Any] | str] = {
        NEW_URL: live_new(),
        OLD_URL: "cannot connect (Connection refused)",
    }
    return group_snapshot("g", described, decode_members(described), answers, 3_000)


def test_the_group_alone_gives_every_task_and_its_roles() -> None:
    shot = snapshot()
    assert (shot["state"], shot["protocol"], shot["generation"]) == (
        "Stable",
        "streamjoin-tasks",
        7,
    )
    assert shot["rebalance_protocol"] == "cooperative" and shot["leader"] == "m-new"
    old, new = shot["members"]
    assert (old["worker"], old["answered"], old["capacity"], old["active"]) == (
        "aaaaaaaa",
        False,
        2,
        ["0_0", "0_1"],
    )
    assert (new["worker"], new["pid"], new["learner"], new["status_url"]) == (
        "bbbbbbbb",
        42,
        ["0_1"],
        NEW_URL,
    )
    zero, one = shot["tasks"]
    assert zero == {
        "task": "0_0",
        "name": None,
        "active": [{"member_id": "m-old", "worker": "aaaaaaaa"}],
        "standbys": [],
        "learners": [],
    }
    [learner] = one["learners"]
    assert one["name"] == "attr_1"
    assert (learner["changelog_lag"], learner["restore_rate"], learner["eta_s"]) == (
        1_500,
        500.0,
        3,
    )
    assert learner["followup"] == {"on_catch_up": True, "probing_at_ms": 5_000}
    assert shot["unanswered"] == [
        {"worker": "aaaaaaaa", "url": OLD_URL, "reason": "cannot connect (Connection refused)"}
    ]


def test_rebalances_keep_what_any_worker_knows_of_their_cause() -> None:
    first, second = snapshot()["rebalances"]
    assert (first["generation"], first["reasons"], first["took_s"]) == (7, ["member-joined"], 0.4)
    assert first["moves"] == [
        {
            "task": "0_1",
            "name": "attr_1",
            "worker": "bbbbbbbb",
            "from": None,
            "to": "learner",
            "pause_s": None,
        }
    ]
    assert second["reasons"] == ["group"]


def test_the_view_names_the_learner_its_follow_up_and_who_did_not_answer() -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render(snapshot()))
    text = console.export_text()
    assert "group g  Stable  generation 7  protocol streamjoin-tasks (cooperative)" in text
    assert "learner bbbbbbbb lag 1,500 at 500/s, ETA 3.0 s; follow-up on catch-up" in text
    assert "0_1 learner +bbbbbbbb" in text
    assert "did not answer: aaaaaaaa (http://old:9100: cannot connect (Connection refused))" in text


def test_a_broker_without_group_metadata_leaves_the_roles_to_the_workers() -> None:
    described = GroupDescription(
        "Stable", "consumer", "streamjoin-tasks", [("m-new", "c", "/h", b"", b"")], {}
    )
    shot = group_snapshot("g", described, decode_members(described), {NEW_URL: live_new()}, 0)
    [row] = shot["members"]
    assert (row["worker"], row["learner"]) == ("bbbbbbbb", ["0_1"])
    assert any("without their subscriptions" in note for note in shot["notes"])


def test_a_hosts_processes_answer_in_one_document(tmp_path: Path) -> None:
    for index in (1, 0):
        write_status(tmp_path, index, {"process_id": OLD, "members": [{"index": index}]})
    assert host_status(tmp_path) == {"process_id": OLD, "members": [{"index": 0}, {"index": 1}]}
    forget_status(tmp_path, 0)
    assert host_status(tmp_path)["members"] == [{"index": 1}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status-1.json"]
