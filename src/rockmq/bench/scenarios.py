"""Each scenario as jobs for the workers, and its figures. A scenario runs the same way against
the broker and against a ceiling server (rockmq.bench.ceiling); only a null broker needs no prefill."""

from __future__ import annotations

import threading
from dataclasses import replace

from rockmq.bench.jobs import Job, Tally
from rockmq.bench.options import DEFAULT_CONCURRENCY, OWN_BATCH, SEND_BATCH, Options
from rockmq.bench.probe import broker_sample, mib
from rockmq.bench.report import Figures, figures_of, ratio, with_percentiles
from rockmq.bench.workers import run_workers

RSS_SAMPLE_S = 0.5
CONSUMERS = ("consume", "consume-batch", "consume-own", "stream")  # each is its own job kind


def base_job(opts: Options, kind: str, scenario: str, batch: int) -> Job:
    """A job with the scenario's default in-flight count unless `--concurrency` overrides it."""
    return Job(kind=kind, opts=opts, batch=batch, concurrency=opts.concurrency or DEFAULT_CONCURRENCY.get(scenario, 1),
               probe_pid=opts.broker_pid)


def consume_count(opts: Options) -> int:
    return opts.messages or opts.consume_messages


def prefill(opts: Options, count: int, fill: bool) -> Figures:
    """Send `count` messages with produce-batch's load first (not measured, but reported); none
    when `fill` is False (a null broker has its messages already)."""
    if not fill:
        return {"error_samples": []}
    tally = run_workers(replace(base_job(opts, "produce", "produce-batch", opts.batch), quota=count, probe_pid=None),
                        opts.processes)
    return {"prefill_messages_per_s": round(tally.ok / tally.seconds, 1), "prefill_errors": tally.errors,
            "error_samples": tally.samples}


def after_prefill(figures: Figures, filled: Figures) -> Figures:
    """A consumer's figures with its prefill's, error samples of both."""
    return figures | filled | {"error_samples": filled["error_samples"] + figures["error_samples"]}


def produce(opts: Options, scenario: str) -> Figures:
    """produce-batch / produce-single: the same loop, `--batch` or 1 message per request."""
    batch = opts.batch if scenario == "produce-batch" else 1
    return figures_of(run_workers(replace(base_job(opts, "produce", scenario, batch), quota=opts.messages), opts.processes))


def consume(opts: Options, scenario: str, fill: bool) -> Figures:
    """Prefill N (so the topic holds at least N more), then POP N messages: consume (v2 stream),
    consume-batch (BatchMessaging), consume-own (rockmq's client), stream (receive, never ack).

    The group resumes where it left off, so with a fixed `--group` it may read messages of earlier
    runs first; the figure counts messages received and acked, whichever they are.
    """
    count = consume_count(opts)
    batch = OWN_BATCH if scenario == "consume-own" else opts.batch
    load = "consume" if scenario == "stream" else scenario  # stream: consume's load, without the acks
    job = replace(base_job(opts, scenario, load, batch), quota=count)
    filled = prefill(opts, count, fill)
    return after_prefill(figures_of(run_workers(job, opts.processes)), filled)


def pull_own(opts: Options, fill: bool) -> Figures:
    """AsyncPullConsumer: move the pull group to the end of the topic, prefill N, pull them back."""
    count = consume_count(opts)
    mark = run_workers(base_job(opts, "pull-mark", "pull-own", OWN_BATCH), 1)
    job = replace(base_job(opts, "pull-own", "pull-own", OWN_BATCH), quota=count)
    filled = prefill(opts, count, fill)
    figures = figures_of(run_workers(job, 1))  # one process: the queues' loops share the group's offsets
    figures["errors"] += mark.errors
    figures["error_samples"] = mark.samples + figures["error_samples"]
    return after_prefill(figures, filled)


def producer_own(opts: Options) -> Figures:
    """`await producer.send(msg)` with many in flight, then `send_batch` of SEND_BATCH with as
    many messages in flight; the ratio shows what the client's batching of single sends achieves."""
    single = replace(base_job(opts, "send-own", "producer-own", 1), quota=opts.messages)
    figures = figures_of(run_workers(single, opts.processes))
    batches = replace(single, batch=SEND_BATCH, concurrency=max(1, single.concurrency // SEND_BATCH))
    figures["send_batch"] = figures_of(run_workers(batches, opts.processes)) | {"batch": SEND_BATCH,
                                                                                  "concurrency": batches.concurrency}
    figures["send_vs_send_batch"] = ratio(figures["messages_per_s"], figures["send_batch"]["messages_per_s"])
    figures["errors"] += figures["send_batch"]["errors"]
    return figures


def latency(opts: Options) -> Figures:
    """Percentiles over every successful send at `--rate`; the achieved rate shows whether the schedule held."""
    tally = run_workers(replace(base_job(opts, "latency", "latency", 1), rate=opts.rate), opts.processes)
    figures = with_percentiles(figures_of(tally), tally.latencies_ms)
    return figures | {"messages_per_s": round(tally.ok / opts.duration, 1), "target_rate": opts.rate}


def send_sync(opts: Options) -> Figures:
    """The synchronous Producer.send, one at a time: its round trip is what a script waits."""
    tally: Tally = run_workers(replace(base_job(opts, "send-sync", "send-sync", 1), quota=opts.messages), 1)
    return with_percentiles(figures_of(tally), tally.latencies_ms)


def soak(opts: Options) -> Figures:
    tally = run_workers(base_job(opts, "soak", "soak", opts.batch), 1)
    return figures_of(tally) | {"consumed_per_s": round(tally.consumed / tally.seconds, 1), "rss_mib_samples": tally.rss_mib}


class PeakRss:
    """The broker's highest RSS while a scenario runs, sampled by a thread every RSS_SAMPLE_S."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while True:
            sample = broker_sample(self.pid)
            if sample is not None:
                self.peak_kib = max(self.peak_kib, sample.rss_kib)
            if self._stop.wait(RSS_SAMPLE_S):
                return

    def stop(self) -> float:
        """Stop sampling -> the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return mib(self.peak_kib)


def run_scenario(opts: Options, scenario: str, fill: bool = True) -> Figures:
    """Run one scenario, its broker's RSS sampled before, after and at its peak; `fill` False:
    the target needs no prefill."""
    before = broker_sample(opts.broker_pid) if opts.broker_pid else None
    peak = PeakRss(opts.broker_pid) if opts.broker_pid else None
    try:
        figures = _run(opts, scenario, fill)
    finally:
        peak_mib = peak.stop() if peak else None
    after = broker_sample(opts.broker_pid) if opts.broker_pid else None
    if before and after:
        figures["broker_rss_mib"] = [before.rss_mib, after.rss_mib]
        figures["broker_rss_peak_mib"] = max(peak_mib or 0.0, *figures["broker_rss_mib"])
    return figures


def _run(opts: Options, scenario: str, fill: bool) -> Figures:
    if scenario in CONSUMERS:
        return consume(opts, scenario, fill)
    if scenario == "pull-own":
        return pull_own(opts, fill)
    if scenario == "producer-own":
        return producer_own(opts)
    if scenario == "latency":
        return latency(opts)
    if scenario == "send-sync":
        return send_sync(opts)
    if scenario == "soak":
        return soak(opts)
    return produce(opts, scenario)
