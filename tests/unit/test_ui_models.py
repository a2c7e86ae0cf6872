"""The dashboard's page models, counters and sessions (rockmq/ui/models.py, counters.py, sessions.py):
admin replies and /metrics text in, what the pages show out, with no broker."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, namesrv
from rockmq.ui import models, render
from rockmq.ui.counters import RateMeter, Reading, families, read
from rockmq.ui.sessions import Sessions

SCRAPE = """# TYPE rocketmq_messages_in counter
rocketmq_messages_in_total{broker="b-0",topic="orders",message_type="normal",is_system="false"} 100.0
rocketmq_messages_in_total{broker="b-1",topic="orders",message_type="normal",is_system="false"} 20.0
rocketmq_messages_in_total{broker="b-0",topic="%RETRY%g",message_type="normal",is_system="true"} 7.0
# TYPE rocketmq_storage_size gauge
rocketmq_storage_size{broker="b-0"} 2048.0
rocketmq_storage_size{broker="b-1"} 3145728.0
"""


def test_read_sums_user_topics_and_keeps_storage_per_broker():
    r = read(families(SCRAPE.encode()), at=5.0)
    assert (r.messages_in, r.by_topic) == (120.0, {"orders": 120.0})
    assert r.storage == {"b-0": 2048.0, "b-1": 3145728.0}


def test_families_collected_in_the_process_read_as_their_text_does():
    registry = CollectorRegistry(auto_describe=False)
    sent = Counter("rocketmq_messages_in", "in", ["topic", "is_system"], registry=registry)
    sent.labels("orders", "false").inc(3)
    sent.labels("%RETRY%g", "true").inc(2)
    lag = Gauge("rocketmq_consumer_lag_messages", "lag", ["topic", "consumer_group"], registry=registry)
    lag.labels("orders", "g").set(4)
    collected, parsed = read(registry.collect(), 1.0), read(families(generate_latest(registry)), 1.0)
    assert collected == parsed and (collected.messages_in, collected.lag, collected.positions) == (3.0, 4.0, {"orders": {"g"}})


def test_rates_over_the_window_and_a_restarted_counter_counts_from_zero():
    meter = RateMeter()
    assert meter.rates().messages_in == 0.0  # one reading or none: no rate yet
    meter.add(Reading(0.0, 100.0, {"t": 100.0}))
    meter.add(Reading(2.0, 140.0, {"t": 140.0}))
    assert (meter.rates().messages_in, meter.rates().by_topic) == (20.0, {"t": 20.0})
    meter.add(Reading(4.0, 10.0, {"t": 10.0}))  # the broker restarted: 10 since
    assert meter.rates().messages_in == 10.0 / 4.0


def test_overview_marks_a_broker_silent_too_long_down_and_shows_disk_and_rate():
    now = 1_800_000_000_000
    cluster = admin.ClusterInfo(broker="b-0", brokers=[
        admin.ClusterBroker(name="b-1", epoch=2, last_seen_ms=now - models.DOWN_AFTER_MS - 1, endpoint="h:2"),
        admin.ClusterBroker(name="b-0", epoch=1, last_seen_ms=now - 1000, endpoint="h:1")])
    o = models.overview(cluster, 12.345, {"": 2048.0}, now)
    assert [[c.text for c in r] for r in o.brokers.rows] == [["b-0", "primary", "0 of b", "up", "2.0 KiB", "1", "h:1"],
                                                             ["b-1", "primary", "1 of b", "down", "-", "2", "h:2"]]
    assert o.rate_in == "12.3 msg/s" and o.as_of.endswith(" UTC")


def test_overview_lists_each_primarys_replicas_under_it_with_their_lag():
    replicas = [namesrv.ReplicaInfo(endpoint="h:3", lag_messages=1200, lag_seconds=2.5)]
    cluster = admin.ClusterInfo(broker="a", brokers=[admin.ClusterBroker(name="a", epoch=3, endpoint="h:1",
                                                                         replicas=replicas)])
    o = models.overview(cluster, 0.0, {}, 1_800_000_000_000)
    assert [[c.text for c in r] for r in o.brokers.rows] == [
        ["a", "primary", "-", "up", "-", "3", "h:1"], ["a", "replica", "-", "up, 1,200 msg (2.5 s) behind", "-", "3", "h:3"]]


def test_page_of_filters_and_keeps_the_page_within_range():
    names = [f"t{i:03}" for i in range(120)]
    assert models.page_of(names, "", 3) == models.Page(names[100:], 3, 3, 120)
    assert models.page_of(names, "", 99) == models.Page(names[100:], 3, 3, 120)
    assert models.page_of(names, "t00", 0) == models.Page(names[:10], 1, 1, 10)
    assert models.page_of([], "x", 1) == models.Page([], 1, 1, 0)


def test_topics_rows_link_and_count_messages_with_units():
    info = admin.TopicInfo(name="%RETRY%g", queue_count=2, queues=[admin.QueueInfo(min_offset=3, max_offset=10),
                                                                    admin.QueueInfo(min_offset=0, max_offset=1500)])
    listed = models.topics([info], {"%RETRY%g": 2.5}, "", models.Page([info.name], 1, 1, 1))
    assert [(c.text, c.href) for c in listed.table.rows[0]] == [
        ("%RETRY%g", "/ui/topics/%25RETRY%25g"), ("2", ""), ("1,507 msg", ""), ("2.5 msg/s", "")]


def test_topic_groups_keep_the_groups_on_the_topic_with_their_lag():
    on = admin.GroupInfo(name="g1", queues=[
        admin.GroupQueueInfo(topic="t", lag=4, lag_ms=1500, inflight=1),
        admin.GroupQueueInfo(topic="t", lag=6, lag_ms=500),
        admin.GroupQueueInfo(topic="other", lag=99)])
    off = admin.GroupInfo(name="g2", queues=[admin.GroupQueueInfo(topic="other", lag=1)])
    table = models.topic_groups("t", [off, on])
    assert [[c.text for c in r] for r in table.rows] == [["g1", "10 msg", "1.5 s", "1 msg"]]


def test_lag_shows_a_never_committed_offset_as_a_dash():
    g = admin.GroupInfo(name="g", queues=[admin.GroupQueueInfo(topic="t", broker="b", queue_id=1, committed_offset=-1,
                                                               pop_offset=5, max_offset=9, lag=4, lag_ms=2000)])
    assert [c.text for c in models.lag(g).rows[0]] == ["t", "b", "1", "5", "-", "9", "4 msg", "2.0 s", "0 msg"]


def test_rendering_escapes_names_and_pages_link_with_the_filter():
    listed = models.Listing(models.Table(("Topic",), [[models.Cell("<b>", "/ui/topics/%3Cb%3E")]]), "a&b", 2, 3, 120)
    html = render.listing("Topics", "topics", "/ui/topics", listed)
    assert "<title>rockmq · Topics</title>" in html and "&lt;b&gt;" in html and "<b>" not in html
    assert 'href="/ui/topics?filter=a%26b&amp;page=1"' in html and 'href="/ui/topics?filter=a%26b&amp;page=3"' in html


def test_sessions_refuse_a_forged_or_expired_cookie_and_keep_at_most_the_limit():
    sessions = Sessions(ttl_s=60, limit=2)
    cookie, session = sessions.open(Credentials("ann", "ann-secret"))
    assert sessions.get(cookie) == session and session.csrf
    token = cookie.partition(".")[0]
    assert sessions.get(token) is None and sessions.get(token + ".00") is None  # unsigned, forged
    second, _ = sessions.open(Credentials("bob", "bob-secret"))
    sessions.open(Credentials("cid", "cid-secret"))
    assert sessions.get(cookie) is None and sessions.get(second) is not None  # the oldest dropped past the limit
    sessions.close(second)
    assert sessions.get(second) is None
    expired = Sessions(ttl_s=0)
    assert expired.get(expired.open(Credentials("ann", "ann-secret"))[0]) is None
