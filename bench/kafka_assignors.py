"""Apache Kafka's own sticky assignors in one JVM, for benches and differential tests.

`KafkaAssignors` compiles bench/java/KafkaAssignors.java with `javac` against the kafka-clients
jar that `make kafka-jars` fetched (the pinned broker release's, ~/.cache/streamjoin/kafka-V/),
starts one JVM and sends it assignment requests over a pipe (the line format is in the Java
file). Every request runs its warm-up calls before the timed ones, and the JVM lives as long
as the object, so its figures are a warm JVM's.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker.kafka_jars import find_java, kafka_classpath, kafka_version

__all__ = ("JavaMember", "JavaResult", "KafkaAssignors")

SOURCE = Path(__file__).resolve().parent / "java" / "KafkaAssignors.java"


@dataclass(frozen=True)
class JavaMember:
    """A member as its Java consumer would join: topics, what it owns, and of which generation
    (-1: it owns nothing it can vouch for, a new member)."""

    topics: Sequence[str]
    owned: Sequence[TopicPartition] = ()
    generation: int = -1


@dataclass(frozen=True)
class JavaResult:
    times_ms: list[tuple[float, float, float, float]]
    """Per timed call, in ms: wall and CPU of the JVM for the assignment, then the same for
    encoding every member's assignment for SyncGroup (ConsumerProtocol.serializeAssignment)."""
    assignment: dict[str, tuple[TopicPartition, ...]]
    """Per member, what it ends with (cooperative-sticky: after the follow-up rebalance)."""


class KafkaAssignors:
    """One JVM running Kafka's StickyAssignor and CooperativeStickyAssignor on request."""

    def __init__(self, heap: str = "2g") -> None:
        javac = shutil.which("javac")
        if javac is None:
            raise RuntimeError(
                "Kafka's assignors need a JDK 17+ (javac): apt-get install openjdk-17-jdk"
            )
        self._classes = tempfile.TemporaryDirectory(prefix="kafka-assignors-")
        subprocess.run(
            [javac, "-d", self._classes.name, "-cp", kafka_classpath(), str(SOURCE)],
            check=True,
            timeout=600,
        )
        self.version = kafka_version()
        self._jvm = subprocess.Popen(
            [
                find_java(),
                f"-Xmx{heap}",
                "-cp",
                f"{self._classes.name}:{kafka_classpath()}",
                "KafkaAssignors",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1 << 20,
        )

    def assign(
        self,
        assignor: str,
        partitions_per_topic: Mapping[str, int],
        members: Mapping[str, JavaMember],
        *,
        warm_ups: int = 0,
        timed: int = 1,
    ) -> JavaResult:
        """Run Java's `assignor` (`sticky` or `cooperative-sticky`) on this group.

        Topics missing from `partitions_per_topic` do not exist (members may still subscribe to
        them or own their partitions)."""
        named = {*partitions_per_topic}
        for member in members.values():
            named.update(member.topics)
            named.update(tp.topic for tp in member.owned)
        topics = sorted(named)
        index = {topic: i for i, topic in enumerate(topics)}
        lines = [
            f"assign {assignor} {warm_ups} {timed}",
            " ".join(
                ["topics", str(len(topics))]
                + [f"{t} {partitions_per_topic.get(t, 0)}" for t in topics]
            ),
        ]
        for member_id, member in members.items():
            if not member_id or " " in member_id:
                raise ValueError(f"member id {member_id!r}: must be one word")
            owned = [f"{index[tp.topic]} {tp.partition}" for tp in member.owned]
            subscribed = [str(index[t]) for t in member.topics]
            lines.append(
                " ".join(
                    [
                        "member",
                        member_id,
                        str(member.generation),
                        str(len(subscribed)),
                        *subscribed,
                        str(len(owned)),
                        *owned,
                    ]
                )
            )
        lines.append("end\n")
        stdin, stdout = self._jvm.stdin, self._jvm.stdout
        assert stdin is not None and stdout is not None
        stdin.write("\n".join(lines))
        stdin.flush()
        times: list[tuple[float, float, float, float]] = []
        assignment: dict[str, tuple[TopicPartition, ...]] = {}
        while (line := stdout.readline()) != "end\n":
            if not line:
                raise RuntimeError(f"the Kafka assignors' JVM ended (exit {self._jvm.wait()})")
            words = line.split()
            if words[0] == "error":
                raise RuntimeError(f"Kafka's {assignor}: {line[6:].strip()}")
            if words[0] == "times":
                values = [int(w) / 1e6 for w in words[2:]]
                times = list(zip(*(values[i::4] for i in range(4)), strict=True))
            elif words[0] == "member":
                pairs = words[3:]
                assignment[words[1]] = tuple(
                    TopicPartition(topics[int(t)], int(p))
                    for t, p in zip(pairs[::2], pairs[1::2], strict=True)
                )
        return JavaResult(times, assignment)

    def close(self) -> None:
        if self._jvm.stdin is not None:
            self._jvm.stdin.close()
        try:
            self._jvm.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._jvm.kill()
            self._jvm.wait()
        if self._jvm.stdout is not None:
            self._jvm.stdout.close()
        self._classes.cleanup()

    def __enter__(self) -> KafkaAssignors:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
