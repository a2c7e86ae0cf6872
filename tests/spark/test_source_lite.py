"""The `rockmq` source reads a LITE topic as its lite topics, each one queue, with the lite
topic's name in the `lite_topic` column (null for the other topics), in a real local Spark
against a real broker."""

from __future__ import annotations

from mqwire import Conn, message

from rockmq.client import Message, Producer


def test_a_lite_topic_is_read_with_its_name_and_a_plain_topic_with_none(spark, broker, unique):
    lite, plain = unique("slite"), unique("splain")
    conn = Conn(broker.endpoint)
    conn.create_topic(lite, queues=1, types=("LITE",))
    conn.create_topic(plain, queues=1)
    conn.send_ok(message(plain, b"p0"))
    conn.close()
    with Producer(broker.endpoint) as producer:
        for i in range(3):
            for name in ("s1", "s2"):
                producer.send(Message(lite, f"{name}-{i}".encode(), lite_topic=name))

    rows = (spark.read.format("rockmq").option("endpoint", broker.endpoint).option("topic", f"{lite},{plain}").load()
            .select("topic", "queue_id", "queue_offset", "body", "lite_topic").collect())
    got = sorted((r["topic"], r["lite_topic"], r["queue_offset"], bytes(r["body"])) for r in rows)
    assert got == sorted([(lite, n, i, f"{n}-{i}".encode()) for n in ("s1", "s2") for i in range(3)]
                         + [(plain, None, 0, b"p0")])
    lite_queues = {r["lite_topic"]: r["queue_id"] for r in rows if r["topic"] == lite}
    assert len(set(lite_queues.values())) == 2 and min(lite_queues.values()) >= 65_536


def test_a_stream_reads_lite_topics_created_after_it_started_exactly_once(spark, broker, unique, tmp_path):
    topic = unique("sslite")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=1, types=("LITE",))
    conn.close()
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run() -> None:
        query = (spark.readStream.format("rockmq").option("endpoint", broker.endpoint).option("topic", topic)
                 .option("startingOffsets", "earliest").load()
                 .writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None

    with Producer(broker.endpoint) as producer:
        producer.send(Message(topic, b"a-0", lite_topic="a"))
        run()
        producer.send(Message(topic, b"a-1", lite_topic="a"))
        producer.send(Message(topic, b"b-0", lite_topic="b"))  # a lite topic born after the query started
        run()
    got = sorted((r["lite_topic"], bytes(r["body"])) for r in spark.read.parquet(out).collect())
    assert got == [("a", b"a-0"), ("a", b"a-1"), ("b", b"b-0")]
