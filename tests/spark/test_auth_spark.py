"""The Spark source and sink against `rockmq serve --auth` (issue 19 §6): options `accessKey` and
`secretKey` on a real local SparkSession; without them (or with a wrong secret) every read and
write is refused; the pipeline jobs hand them on."""

from __future__ import annotations

import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_SECRET as SECRET

from rockmq.client import Credentials, Message, Producer
from rockmq.spark import jobs
from rockmq.spark.connection import credentials_options
from rockmq.spark.sink import SinkError, SinkOptions
from rockmq.spark.source import SourceError, SourceOptions

CREDS = Credentials(ADMIN, SECRET)



def _read(spark, endpoint: str, topic: str, **extra: str) -> list[bytes]:
    rows = spark.read.format("rockmq").option("endpoint", endpoint).option("topic", topic).options(**extra).load()
    return sorted(r.body for r in rows.select("body").collect())


def test_write_and_read_with_credentials(spark, auth_broker, unique):
    topic = unique("spark-auth")
    options = {"endpoint": auth_broker.endpoint, "topic": topic, **credentials_options(CREDS)}
    assert options["accessKey"] == ADMIN
    spark.createDataFrame([(f"m{i}",) for i in range(20)], "body string").write.format("rockmq").options(**options) \
        .mode("append").save()
    assert _read(spark, auth_broker.endpoint, topic, **credentials_options(CREDS)) == sorted(f"m{i}".encode() for i in range(20))


@pytest.mark.parametrize("extra", [{}, {"accessKey": ADMIN, "secretKey": "wrong"}], ids=["none", "wrong-secret"])
def test_refused_without_the_right_credentials(spark, auth_broker, unique, extra):
    with pytest.raises(Exception, match="UNAUTHENTICATED|no credentials|does not match"):
        _read(spark, auth_broker.endpoint, unique("t"), requestTimeoutMs="5000", **extra)
    with pytest.raises(Exception, match="UNAUTHENTICATED|no credentials|does not match"):
        spark.createDataFrame([("x",)], "body string").write.format("rockmq").option("endpoint", auth_broker.endpoint) \
            .option("topic", unique("t")).options(**extra).mode("append").save()


def test_credentials_options_are_checked():
    with pytest.raises(SourceError, match="go together"):
        SourceOptions.parse({"endpoint": "127.0.0.1:1", "topic": "t", "accessKey": "a"}, streaming=False)
    with pytest.raises(SinkError, match="go together"):
        SinkOptions.parse({"endpoint": "127.0.0.1:1", "secretKey": "s"})
    opts = SourceOptions.parse({"endpoint": "127.0.0.1:1", "topic": "t", **credentials_options(CREDS)}, streaming=False)
    assert opts.credentials == CREDS and SECRET not in repr(opts)


def test_pipeline_jobs_with_credentials(spark, auth_broker, unique, tmp_path):
    source, target = unique("auth-arch-src"), unique("auth-arch-dst")
    with Producer(auth_broker.endpoint, credentials=CREDS) as producer:
        for i in range(5):
            producer.send(Message(source, f"p{i}".encode()))
    connection = credentials_options(CREDS)
    query = jobs.archive(spark, endpoint=auth_broker.endpoint, topic=source, path=str(tmp_path / "archive"),
                         checkpoint=str(tmp_path / "ckpt"), available_now=True, connection=connection)
    query.awaitTermination(120)
    assert query.exception() is None
    assert jobs.replay(spark, endpoint=auth_broker.endpoint, path=str(tmp_path / "archive"), topic=target,
                       connection=connection) == 5
    assert _read(spark, auth_broker.endpoint, target, **connection) == [f"p{i}".encode() for i in range(5)]
