"""What a name server knows: the latest registration of each broker, dropped after a timeout.

Pure logic with an injected clock. Nothing here outlives the process or needs to: brokers
re-register every few seconds, so a restarted name server is complete again within one interval.

Why 30 s by default: a dead broker stays in routes until the name server drops it, and clients
keep choosing its queues meanwhile. RocketMQ waits 120 s, which is why its clients need their
fault-latency avoidance to get anything done in between; a shorter timeout keeps that window
small while tolerating a broker paused by a long fsync or a GC.

Of two live registrations under one broker name, the one with the higher primary epoch holds the
name: a primary superseded by a promoted replica (broker/cluster/fencing.py) is not taken back,
and the reply to its registration tells it the epoch that superseded it, with the epoch's proof.

The proof is an HMAC under the group's secret, which a name server does not hold: it cannot check a
proof, only compare hashes. So each registration also carries `successor`, the hash of the proof of
the next epoch, and a higher registration takes a live holder's name only if its proof hashes to
the holder's `successor` — what a replica promoted from that holder sends, and a stranger cannot.
The commitment is the first holder's of an epoch: a stranger re-registering the name at the same
epoch (which an open name server allows) moves its routes until the holder's next registration,
but cannot plant a commitment of its own. A higher registration that does not check is kept out
(logged once) and changes nothing; a name nobody holds is taken by any registration (the primary
then checks the proof it hears, fencing.py, so a stranger's epoch fences nothing); a promotion to
an epoch other than the next is routed once the old holder, fenced by its replica, went silent.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass

from rockmq.protocol import namesrv

log = logging.getLogger(__name__)
_LOGGED_MAX = 1_024  # names whose refused claim was logged (then forgotten, so bounded)


def commitment(proof: bytes) -> bytes:
    """What a registration at epoch E sends as `successor`: the hash of the proof of epoch E + 1."""
    return hashlib.sha256(proof).digest()


def succeeds(claim: namesrv.BrokerInfo, holder: namesrv.BrokerInfo) -> bool:
    """Whether `claim` is the promotion `holder` committed to: one epoch above, its proof hashing to the holder's successor."""
    return (claim.epoch == holder.epoch + 1 and bool(holder.successor)
            and hmac.compare_digest(commitment(claim.epoch_proof), holder.successor))


@dataclass
class Entry:
    info: namesrv.BrokerInfo
    last_seen_ms: int


class Registry:
    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._brokers: dict[str, Entry] = {}
        self._refused: dict[str, int] = {}  # name -> the last unproven epoch logged for it

    def register(self, info: namesrv.BrokerInfo, now_ms: int) -> namesrv.BrokerInfo:
        """Take a registration unless a live holder of its name keeps it (`_keeps`); -> the entry
        that holds the name (its epoch and proof go back in the reply)."""
        if not info.name or not info.endpoint:
            raise ValueError("a registration needs the broker's name and endpoint")
        held = self._brokers.get(info.name)
        if held is not None and now_ms - held.last_seen_ms <= self.timeout_ms:
            if self._keeps(held.info, info):
                return held.info
            if info.epoch == held.info.epoch:  # the epoch's first commitment stays (see the module's docstring)
                info.successor = held.info.successor
        self._brokers[info.name] = Entry(info, now_ms)
        return info

    def _keeps(self, held: namesrv.BrokerInfo, info: namesrv.BrokerInfo) -> bool:
        """Whether the live holder `held` keeps its name from `info`: a lower epoch (a superseded
        primary), or a higher one it did not commit to (logged once per name and epoch)."""
        if info.epoch < held.epoch:
            return True
        if info.epoch == held.epoch or succeeds(info, held):
            return False
        if self._refused.get(info.name) != info.epoch:
            if len(self._refused) >= _LOGGED_MAX:
                self._refused.clear()
            self._refused[info.name] = info.epoch
            log.warning("registration of broker %.100r at %.100r claims primary epoch %d above the live holder's %d "
                        "without the proof its replicas give: ignored", info.name, info.endpoint, info.epoch, held.epoch)
        return True

    def unregister(self, info: namesrv.BrokerInfo) -> bool:
        """Drop a draining broker's registration at once -> whether it was dropped: only its own
        (the same name, endpoint and epoch), never the one that holds the name now."""
        held = self._brokers.get(info.name)
        if held is None or held.info.endpoint != info.endpoint or held.info.epoch != info.epoch:
            return False
        del self._brokers[info.name]
        return True

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
                                      epoch=entry.info.epoch, replicas=entry.info.replicas)
            topics = [t for t in entry.info.topics if not topic or t.topic == topic]
            if topic and not topics:
                continue
            info.topics.extend(topics)
            out.append(info)
        return out
