"""What a name server knows: the latest registration of each broker, dropped after a timeout.

Pure logic with an injected clock. Nothing here outlives the process or needs to: brokers
re-register every few seconds, so a restarted name server is complete again within one interval.

Why 30 s by default: a dead broker stays in routes until the name server drops it, and clients
keep choosing its queues meanwhile. RocketMQ waits 120 s, which is why its clients need their
fault-latency avoidance to get anything done in between; a shorter timeout keeps that window
small while tolerating a broker paused by a long fsync or a GC.

Of two live registrations under one broker name, the one with the higher primary epoch holds the
name: a primary superseded by a promoted replica (broker/cluster/fencing.py) is not taken back,
and the reply to its registration tells it the epoch that superseded it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rockmq.protocol import namesrv


@dataclass
class Entry:
    info: namesrv.BrokerInfo
    last_seen_ms: int


class Registry:
    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._brokers: dict[str, Entry] = {}

    def register(self, info: namesrv.BrokerInfo, now_ms: int) -> int:
        """Take a registration unless a live one of a higher epoch holds its name; -> the epoch that does."""
        if not info.name or not info.endpoint:
            raise ValueError("a registration needs the broker's name and endpoint")
        held = self._brokers.get(info.name)
        if held is not None and held.info.epoch > info.epoch and now_ms - held.last_seen_ms <= self.timeout_ms:
            return held.info.epoch
        self._brokers[info.name] = Entry(info, now_ms)
        return info.epoch

    def expire(self, now_ms: int) -> list[str]:
        """Drop brokers not heard from within the timeout; -> their names."""
        gone = [n for n, e in self._brokers.items() if now_ms - e.last_seen_ms > self.timeout_ms]
        for name in gone:
            del self._brokers[name]
        return gone

    def brokers(self, topic: str = "") -> list[namesrv.BrokerInfo]:
        """Live brokers by name; with `topic`, only those holding it, with only that topic."""
        out = []
        for name in sorted(self._brokers):
            entry = self._brokers[name]
            info = namesrv.BrokerInfo(name=name, endpoint=entry.info.endpoint, last_seen_ms=entry.last_seen_ms,
                                      tls=entry.info.tls, plaintext_endpoint=entry.info.plaintext_endpoint,
                                      epoch=entry.info.epoch)
            topics = [t for t in entry.info.topics if not topic or t.topic == topic]
            if topic and not topics:
                continue
            info.topics.extend(topics)
            out.append(info)
        return out
