"""One TopicPartition type in streamjoin: aiokafka's, named in assignment/model.py only.

aiokafka's consumer refuses any other type (isinstance checks in seek, pause, position), so a
second, look-alike type means conversions at every call into it and two kinds of keys in one
dict; this fails when a module brings one back."""

from __future__ import annotations

import ast
from pathlib import Path

import aiokafka

import streamjoin
from streamjoin.assignment.model import TopicPartition

PACKAGE = Path(streamjoin.__file__).parent
BOUNDARY = PACKAGE / "assignment" / "model.py"


def test_the_model_s_type_is_aiokafkas() -> None:
    assert TopicPartition is aiokafka.TopicPartition
    tp = TopicPartition("t", 3)
    assert (tp.topic, tp.partition) == ("t", 3) and tp == ("t", 3)


def other_topic_partitions(path: Path) -> list[str]:
    """Where `path` defines or imports a TopicPartition other than the model's."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ClassDef) and node.name == "TopicPartition":
            found.append(f"{path}:{node.lineno}: class TopicPartition")
        elif (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("aiokafka")
            and any(alias.name == "TopicPartition" for alias in node.names)
        ):
            found.append(f"{path}:{node.lineno}: from {node.module} import TopicPartition")
        elif isinstance(node, ast.Attribute) and node.attr == "TopicPartition":
            found.append(f"{path}:{node.lineno}: ...TopicPartition")
    return found


def test_no_module_but_the_model_names_another_type() -> None:
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != BOUNDARY
        for line in other_topic_partitions(path)
    ]
    assert found == [], "import TopicPartition from streamjoin.assignment.model instead"
    assert other_topic_partitions(BOUNDARY)  # the check sees the one it allows
