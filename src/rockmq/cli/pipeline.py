"""`rockmq pipeline archive|replay`: Spark jobs (the spark extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rockmq.cli.common import EXIT_USAGE, CliError, credentials, subcommands, tls, with_endpoint

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    pipeline = subcommands(sub, "pipeline", "Spark pipeline jobs (needs the spark extra)", run)
    archive = with_endpoint(pipeline.add_parser("archive", help="archive a topic to Parquet by date (until stopped)"))
    archive.add_argument("--topic", required=True)
    archive.add_argument("--path", required=True, help="where the Parquet files go")
    archive.add_argument("--checkpoint", help="the job's checkpoint (default: PATH/_checkpoint)")
    archive.add_argument("--available-now", action="store_true", help="archive what is there now, then stop")
    archive.add_argument("--interval", type=float, default=10.0, help="seconds between micro-batches")
    replay = with_endpoint(pipeline.add_parser("replay", help="send archived messages into a topic (duplicate-safe)"))
    replay.add_argument("--path", required=True, help="an archive written by `pipeline archive`")
    replay.add_argument("--topic", required=True, help="the topic to send them to")
    replay.add_argument("--from", dest="start", help="only messages stored at or after this ISO 8601 time")
    replay.add_argument("--to", dest="end", help="only messages stored before this ISO 8601 time")
    for job in (archive, replay):
        job.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")


def run(args: argparse.Namespace) -> int:
    from rockmq.when import parse_instant_ms

    try:
        from rockmq.spark import jobs
        from rockmq.spark.connection import credentials_options, tls_options
    except ImportError as e:
        raise CliError(f"the pipeline needs Spark: pip install 'rockmq[spark]' ({e})", EXIT_USAGE) from None
    try:
        start = parse_instant_ms(args.start) if getattr(args, "start", None) else None
        end = parse_instant_ms(args.end) if getattr(args, "end", None) else None
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    connection = {**tls_options(tls(args)), **credentials_options(credentials(args))}
    spark = jobs.session(args.master, f"rockmq pipeline {args.action}")
    try:
        if args.action == "replay":
            count = jobs.replay(spark, endpoint=args.endpoint, path=args.path, topic=args.topic, start_ms=start, end_ms=end,
                                connection=connection)
            print(f"replayed {count} messages into {args.topic}")
            return 0
        checkpoint = args.checkpoint or str(Path(args.path) / "_checkpoint")
        query = jobs.archive(spark, endpoint=args.endpoint, topic=args.topic, path=args.path, checkpoint=checkpoint,
                             available_now=args.available_now, interval_s=args.interval, connection=connection)
        query.awaitTermination()
        if query.exception() is not None:
            raise CliError(f"the archive job failed: {query.exception()}")
        return 0
    finally:
        spark.stop()
