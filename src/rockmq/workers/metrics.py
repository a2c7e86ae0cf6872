"""The HTTP port of `rockmq serve --workers N` (docs/operations.md "Metrics"): one /metrics with every
shard's series, each labelled `broker` with the shard's name, and one /readyz that is ready when every
shard is.

How: each shard serves its own HTTP port (any free port of --host, picked by the supervisor and kept
across the shard's restarts), and the supervisor's port asks every shard's when it is asked itself,
all at once, each within `SHARD_TIMEOUT_S`. It hands the scraper's Authorization header on: with
authentication on, each shard decides and audits as a broker does (auth/scrape.py), and a refusal is
the answer; with TLS, it verifies the shards against --tls-ca. A shard that does not answer is
`rockmq_shard_up 0` in /metrics and a reason in /readyz. The supervisor's own series (its embedded
name server's, its process's) carry `broker="supervisor"`."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import aiohttp
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

SHARD_TIMEOUT_S = 5.0
SUPERVISOR = "supervisor"


@dataclass(frozen=True)
class Source:
    """A shard's HTTP port (`url`: scheme://host:port), by its broker name."""

    broker: str
    url: str


class _Families(Collector):
    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = families

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterable[Metric]:
        return self.families


def labelled(text: str, broker: str) -> Iterator[Metric]:
    """A scrape's families with every sample labelled `broker`."""
    for family in text_string_to_metric_families(text):
        family.samples = [s._replace(labels={**s.labels, "broker": broker}) for s in family.samples]
        yield family


def merged(scrapes: Iterable[Iterable[Metric]]) -> list[Metric]:
    """Families of the same name from several scrapes as one family each (its first help and type)."""
    by_name: dict[str, Metric] = {}
    for families in scrapes:
        for family in families:
            known = by_name.get(family.name)
            if known is None:
                by_name[family.name] = family
            else:
                known.samples.extend(family.samples)
    return list(by_name.values())


class ShardScrapes:
    """The supervisor's /metrics and /readyz over its shards' (`sources`: asked when scraped)."""

    def __init__(self, sources: Callable[[], Sequence[Source]], own: CollectorRegistry, auth: bool,
                 tls_ca: str | None = None) -> None:
        """`auth`: the shards authenticate scrapes; `tls_ca`: None, the shards serve plain HTTP; else
        HTTPS verified against it ("": the system's roots)."""
        self.sources = sources
        self.own = own
        self.auth = auth
        self.ssl: ssl.SSLContext | bool = True
        if tls_ca is not None:
            context = ssl.create_default_context(cafile=tls_ca or None)
            context.check_hostname = False  # its own children, reached at --host whatever the certificate names
            self.ssl = context

    async def _get(self, session: aiohttp.ClientSession, url: str, authorization: str) -> tuple[int, str] | None:
        headers = {"Authorization": authorization} if authorization else {}
        try:
            async with session.get(url, headers=headers, ssl=self.ssl) as reply:
                return reply.status, await reply.text()
        except (aiohttp.ClientError, TimeoutError, OSError):
            return None

    async def _ask(self, path: str, authorization: str = "") -> list[tuple[Source, tuple[int, str] | None]]:
        sources = list(self.sources())
        timeout = aiohttp.ClientTimeout(total=SHARD_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            replies: list[Awaitable[tuple[int, str] | None]] = [self._get(session, s.url + path, authorization)
                                                                for s in sources]
            return list(zip(sources, await asyncio.gather(*replies), strict=True))

    async def render(self, authorization: str) -> bytes | tuple[int, str]:
        """Every shard's series and the supervisor's; a shard's refusal (401, 403) refuses the scrape."""
        answers = await self._ask("/metrics", authorization)
        refused = next((reply for _, reply in answers if reply is not None and reply[0] in (401, 403)), None)
        if refused is not None:
            return refused
        up = GaugeMetricFamily("rockmq_shard_up", "1 if the shard answered this scrape", labels=["broker"])
        scrapes: list[Iterable[Metric]] = [labelled(generate_latest(self.own).decode(), SUPERVISOR)]
        for source, reply in answers:
            answered = reply is not None and reply[0] == 200
            up.add_metric([source.broker], int(answered))
            if reply is not None and answered:
                scrapes.append(labelled(reply[1], source.broker))
        if len(scrapes) == 1 and self.auth:  # no shard admitted it: the supervisor's series are not for anyone
            return 503, "no shard answered the scrape"
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families([*merged(scrapes), up]))
        return generate_latest(registry)

    async def reasons(self) -> list[str]:
        """Why the server is not ready: each shard's reasons, named by the shard."""
        out = []
        for source, reply in await self._ask("/readyz"):
            if reply is None:
                out.append(f"{source.broker}: not answering")
            elif reply[0] != 200:
                out += [f"{source.broker}: {line}" for line in reply[1].splitlines() if line] or [
                    f"{source.broker}: not ready ({reply[0]})"]
        return out
