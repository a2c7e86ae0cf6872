"""Scrape a server's HTTP port as Prometheus would, and read the samples (prometheus-client's parser)."""

from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


@dataclass(frozen=True)
class Reply:
    status: int
    body: str
    headers: dict[str, str]


def get(url: str, user: str = "", secret: str = "", ca: Path | None = None, method: str = "GET") -> Reply:
    """One request; an HTTP error status is a Reply too."""
    request = urllib.request.Request(url, method=method)
    if user:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode())
    context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return Reply(r.status, r.read().decode(), dict(r.headers))
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.read().decode(), dict(e.headers))


def samples(url: str, **options) -> list[Sample]:
    """Every sample of a /metrics scrape (its status must be 200)."""
    reply = get(url, **options)
    assert reply.status == 200, reply
    return [s for family in text_string_to_metric_families(reply.body) for s in family.samples]


def value(scraped: list[Sample], name: str, **labels: str) -> float | None:
    """The sample `name` whose labels include `labels` (None: no such sample); several: their sum."""
    found = [s.value for s in scraped if s.name == name and labels.items() <= s.labels.items()]
    return sum(found) if found else None
