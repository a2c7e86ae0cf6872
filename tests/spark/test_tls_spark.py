"""The Spark source and sink over TLS (issue 19 §6): options `tls` and `tlsCaFile` on a real local
SparkSession against a broker that serves TLS only; the pipeline jobs hand them on."""

from __future__ import annotations

import pytest
from broker_process import BrokerProcess
from mqwire import Conn, message
from tls_certs import make_certs

from rockmq.plumbing.channels import Tls
from rockmq.spark import jobs
from rockmq.spark.connection import tls_options
from rockmq.spark.source import SourceError, SourceOptions


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    b = BrokerProcess(tmp_path_factory.mktemp("tls-spark-broker"), *certs.serve_args()).start()
    b.tls = Tls(str(certs.ca))
    yield b
    b.stop()


def test_write_and_read_over_tls(spark, tls_broker, unique):
    topic = unique("spark-tls")
    options = {"endpoint": tls_broker.endpoint, "topic": topic, **tls_options(tls_broker.tls)}
    assert options["tls"] == "true" and options["tlsCaFile"] == tls_broker.tls.ca_file
    conn = Conn(tls_broker.endpoint, tls_broker.tls)
    conn.create_topic(topic, queues=2)
    conn.close()
    spark.createDataFrame([(f"m{i}",) for i in range(20)], "body string").write.format("rockmq").options(**options) \
        .mode("append").save()
    read = spark.read.format("rockmq").options(**options).load()
    assert sorted(r.body.decode() for r in read.select("body").collect()) == sorted(f"m{i}" for i in range(20))


def test_plaintext_options_fail_on_a_tls_broker(spark, tls_broker, unique):
    with pytest.raises(Exception, match="rockmq"):
        spark.read.format("rockmq").option("endpoint", tls_broker.endpoint).option("topic", unique("t")) \
            .option("requestTimeoutMs", "2000").load().collect()


def test_tls_options_are_checked():
    with pytest.raises(SourceError, match="tls"):
        SourceOptions.parse({"endpoint": "127.0.0.1:1", "topic": "t", "tls": "yes please"}, streaming=False)
    opts = SourceOptions.parse({"endpoint": "127.0.0.1:1", "topic": "t", "tlsCaFile": "/ca.pem"}, streaming=False)
    assert opts.tls == Tls("/ca.pem")


def test_pipeline_jobs_over_tls(spark, tls_broker, unique, tmp_path):
    source, target = unique("tls-arch-src"), unique("tls-arch-dst")
    conn = Conn(tls_broker.endpoint, tls_broker.tls)
    for i in range(5):
        conn.send_ok(message(source, f"p{i}".encode()))
    connection = tls_options(tls_broker.tls)
    query = jobs.archive(spark, endpoint=tls_broker.endpoint, topic=source, path=str(tmp_path / "archive"),
                         checkpoint=str(tmp_path / "ckpt"), available_now=True, connection=connection)
    query.awaitTermination(120)
    assert query.exception() is None
    assert jobs.replay(spark, endpoint=tls_broker.endpoint, path=str(tmp_path / "archive"), topic=target,
                       connection=connection) == 5
    replayed = [m.body for q in range(len(conn.query_route(target).message_queues)) for m in conn.pull_all(target, q)]
    conn.close()
    assert sorted(replayed) == [f"p{i}".encode() for i in range(5)]
