"""The pure parts behind /metrics (issue 28 §1, §2): the broker's tallies, the latency histogram, the
`Cluster` ACL resource, HTTP Basic parsing, and how a `--workers` port labels and merges its shards'."""

from __future__ import annotations

import base64

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rockmq.auth.acl import AclError, Action, Entry, Kind, Resource, allowed, cluster_check
from rockmq.auth.scrape import basic_credentials
from rockmq.broker.tally import SIZE_BUCKETS, Tally
from rockmq.plumbing.rpc_latency import BUCKETS_MS, RpcLatency
from rockmq.workers.metrics import labelled, merged


def test_a_batch_is_counted_and_bucketed_by_size():
    tally = Tally()
    tally.stored(7, "NORMAL", [5000, 100, 1024, 1025, 5 * 1024 * 1024])
    tally.stored(7, "NORMAL", [10])
    assert tally.messages_in == {(7, "NORMAL"): 6}
    assert tally.bytes_in[(7, "NORMAL")] == tally.size_sum == 5000 + 100 + 1024 + 1025 + 5 * 1024 * 1024 + 10
    assert tally.sizes == [3, 1, 1, 0, 0, 0, 1]  # <= 1 KiB (1024 included), <= 4 KiB, <= 512 KiB, ..., past 4 MiB
    assert len(tally.sizes) == len(SIZE_BUCKETS) + 1


def test_a_deleted_topic_leaves_no_series():
    tally = Tally()
    tally.stored(1, "FIFO", [1])
    tally.handed_out(1, "g", 3, 30)
    tally.dead_lettered(1, "g")
    tally.ended(1, committed=True)
    tally.handed_out(2, "g", 1, 10)
    tally.forget_topic(1)
    assert (tally.messages_in, tally.messages_out, tally.dead_letters, tally.commits) == ({}, {(2, "g"): 1}, {}, {})


def test_latency_buckets_are_cumulative_by_method_and_code():
    latency = RpcLatency()
    for ms in (0.5, 3, 3000, 10_000):
        latency.record("apache.rocketmq.v2.MessagingService/SendMessage", "OK", ms)
    [sample_family] = [latency.family()]
    buckets = {s.labels["le"]: s.value for s in sample_family.samples if s.name.endswith("_bucket")}
    assert buckets["1.0"] == 1 and buckets["5.0"] == 2 and buckets[f"{float(BUCKETS_MS[-1])}"] == 3 and buckets["+Inf"] == 4
    [count] = [s for s in sample_family.samples if s.name.endswith("_count")]
    assert count.labels == {"protocol_type": "grpc", "request_code": "MessagingService/SendMessage", "response_code": "OK"}


def test_the_cluster_resource():
    cluster = Resource.parse("Cluster")
    assert cluster == Resource.parse(" cluster ") and str(cluster) == "Cluster" and cluster.kind is Kind.CLUSTER
    get = cluster_check(Action.GET)
    assert str(get) == "Get on Cluster"
    assert allowed([Entry(cluster, frozenset({Action.GET}))], get, None)
    assert allowed([Entry(Resource.parse("*"), frozenset({Action.ALL}))], get, None)
    assert not allowed([Entry(Resource.parse("Topic:*"), frozenset({Action.ALL}))], get, None)
    with pytest.raises(AclError, match="or Cluster"):
        Resource.parse("Cluster:x")


@pytest.mark.parametrize(("header", "expected"), [
    ("Basic " + base64.b64encode(b"alice:s:e:cret").decode(), ("alice", "s:e:cret")),
    ("basic " + base64.b64encode(b"bob:").decode(), ("bob", "")),
    ("Basic " + base64.b64encode(b"no-colon").decode(), None),
    ("Basic not*base64", None),
    ("Bearer abc", None),
    ("", None),
])
def test_basic_credentials(header, expected):
    assert basic_credentials(header) == expected


SHARD = """# HELP rocketmq_messages_in_total Messages stored
# TYPE rocketmq_messages_in_total counter
rocketmq_messages_in_total{topic="t"} 3.0
# HELP rockmq_replica_lag_seconds lag
# TYPE rockmq_replica_lag_seconds gauge
"""


def test_shards_series_are_labelled_and_merged_into_one_family_each():
    families = merged([labelled(SHARD, "b-0"), labelled(SHARD.replace("3.0", "4.0"), "b-1")])
    assert [f.name for f in families] == ["rocketmq_messages_in", "rockmq_replica_lag_seconds"]
    assert [(s.labels, s.value) for s in families[0].samples] == [({"topic": "t", "broker": "b-0"}, 3.0),
                                                                  ({"topic": "t", "broker": "b-1"}, 4.0)]
    assert families[1].samples == []  # an empty family is still served (its HELP and TYPE)
    assert list(text_string_to_metric_families(SHARD))  # the fixture is valid exposition text
