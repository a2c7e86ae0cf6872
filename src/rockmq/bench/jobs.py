"""What one worker process runs (Job) and what it counts (Tally)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rockmq.bench.options import Options

MAX_ERROR_SAMPLES = 5


@dataclass(frozen=True)
class Job:
    """A load kind plus its share of the load."""

    kind: str  # a key of rockmq.bench.workers.RUNNERS
    opts: Options
    batch: int
    concurrency: int
    quota: int | None = None  # messages to send or consume; None = run for opts.duration
    rate: float = 0.0
    probe_pid: int | None = None  # broker pid whose CPU this worker samples (one worker only)


@dataclass
class Tally:
    """Counters of one worker; merged across workers by `absorb`."""

    ok: int = 0
    requests: int = 0
    errors: int = 0
    samples: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    started: float = math.inf  # time.monotonic() is system-wide on Linux, so comparable
    finished: float = 0.0
    client_cpu_pct: float = 0.0
    broker_cpu_pct: float | None = None  # of one core, over the load's wall time
    broker_cpu_s: float | None = None  # user + system seconds over the same span
    consumed: int = 0  # soak: messages received and acked while producing
    rss_mib: list[float] = field(default_factory=list)  # soak: broker RSS every SOAK_SAMPLE_S

    def fail(self, what: str, count: int = 1) -> None:
        """Count `count` failed messages and keep the reason."""
        self.errors += count
        self.note(what)

    def note(self, what: str) -> None:
        """Keep the first few distinct error reasons: enough to act on, bounded in size."""
        if len(self.samples) < MAX_ERROR_SAMPLES and what not in self.samples:
            self.samples.append(what)

    def absorb(self, other: Tally) -> None:
        """Add another worker's counters; the run spans the earliest start to the last end."""
        self.ok += other.ok
        self.requests += other.requests
        self.latencies_ms.extend(other.latencies_ms)
        for sample in other.samples:
            self.note(sample)
        self.errors += other.errors
        self.started = min(self.started, other.started)
        self.finished = max(self.finished, other.finished)
        self.client_cpu_pct += other.client_cpu_pct
        self.consumed += other.consumed
        self.rss_mib.extend(other.rss_mib)
        if other.broker_cpu_s is not None:  # one worker samples the broker
            self.broker_cpu_pct, self.broker_cpu_s = other.broker_cpu_pct, other.broker_cpu_s

    @property
    def seconds(self) -> float:
        """Wall time of the run (never zero, so rates stay finite when nothing ran)."""
        return max(self.finished - self.started, 1e-9)
