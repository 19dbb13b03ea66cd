"""Keyed records go where Kafka's own default partitioner (and aiokafka's) would put them."""

from __future__ import annotations

import random

import pytest
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.kafka.partitioning import murmur2, partition_for_key

# Java's signed `Utils.murmur2` results, from apache/kafka
# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
# (commit f55581dc73953c3509a4702433aeeeddc2970779).
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

# Every length up to 200 is equally likely, so every tail length and long keys are exercised,
# not just the short keys hypothesis favours.
keys = st.integers(0, 200).flatmap(lambda n: st.binary(min_size=n, max_size=n))


@pytest.mark.parametrize("key", list(JAVA_MURMUR2))
def test_murmur2_matches_kafkas_java_results(key: bytes) -> None:
    assert murmur2(key) == JAVA_MURMUR2[key] & 0xFFFFFFFF


@pytest.mark.parametrize("partitions", [1, 3, 7, 64])
@pytest.mark.parametrize("key", list(JAVA_MURMUR2))
def test_partition_for_key_follows_kafkas_built_in_partitioner(key: bytes, partitions: int) -> None:
    # BuiltInPartitioner.partitionForKey: Utils.toPositive(Utils.murmur2(key)) % numPartitions
    # (apache/kafka clients/.../producer/internals/BuiltInPartitioner.java).
    assert partition_for_key(key, partitions) == (JAVA_MURMUR2[key] & 0x7FFFFFFF) % partitions


@settings(max_examples=1000)
@given(keys)
def test_murmur2_matches_aiokafka(key: bytes) -> None:
    assert murmur2(key) == aiokafka_murmur2(key)


@pytest.mark.parametrize("length", [256, 1001, 4099])
def test_murmur2_matches_aiokafka_on_long_keys(length: int) -> None:
    key = random.Random(length).randbytes(length)
    assert murmur2(key) == aiokafka_murmur2(key)


@given(keys, st.integers(1, 1000))
def test_partition_for_key_matches_aiokafkas_default_partitioner(
    key: bytes, partitions: int
) -> None:
    ids = list(range(partitions))
    assert partition_for_key(key, partitions) == DefaultPartitioner()(key, ids, ids)
