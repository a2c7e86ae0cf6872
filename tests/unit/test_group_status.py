"""A coordinated group as operators see it (broker/coordination/status.py, cli/coordinated.py): the
primary's report, what it remembers and how much, when a member was made primary by an unclean
election, and what `rockmq broker elect` refuses."""

from __future__ import annotations

import argparse

from rockmq.broker.coordination import status
from rockmq.broker.coordination.coordinator import InSync, Lag, Member, Primary, Status, Unclean
from rockmq.broker.coordination.status import StatusReporter, made_by, status_of
from rockmq.cli.coordinated import Group, _refusal, loss_line


def test_a_report_says_each_known_members_lag_and_lists_those_it_cannot_measure():
    def lag(applied: int, now: float) -> tuple[int, float]:
        return (10 - applied, 0.25 if applied < 10 else 0.0)

    report = status_of("p", 3, 10, {"p": None, "a": 10, "b": 7, "gone": None}, lag, 1000.0)
    assert report.lags == {"a": Lag(10, 0, 0), "b": Lag(7, 3, 250)}
    assert report.known == {"a", "b", "gone"} and (report.head, report.at_ms, report.epoch) == (10, 1_000_000, 3)
    assert Status.decode(report.encode()) == report


def test_the_reporter_keeps_a_member_that_stopped_following_with_its_last_batch_and_is_bounded(monkeypatch):
    reporter = StatusReporter(None, "g", "p", 1)  # type: ignore[arg-type]
    assert reporter.remember(["a"], {"a": 5}) == {"a": 5}
    assert reporter.remember(["b"], {}) == {"a": 5, "b": None}  # a stopped: its lag still grows from 5
    monkeypatch.setattr(status, "MAX_KNOWN", 2)
    assert reporter.remember(["c"], {}) == {"b": None, "c": None}  # the longest unseen out first


def test_an_unclean_election_is_said_by_the_first_primary_it_made_only():
    choice = Unclean("l", frozenset({"a"}), 4, Lag(9, 20, 1500))
    assert Unclean.decode(choice.encode()) == choice
    before = Status("a", 4, 100, 0, {})
    assert made_by(choice, before, "l", 5) and made_by(choice, None, "l", 7)  # an epoch floor may skip some
    assert not made_by(choice, before, "m", 5)  # another member
    assert not made_by(choice, Status("l", 5, 9, 0, {}), "l", 8)  # a later election of it: a primary reported since
    line = status.unclean_line("g", choice, 5)
    assert "made l primary at epoch 5" in line and "['a']" in line and "20 messages (1500 ms)" in line


def _group(members: dict[str, Member], in_sync: InSync, primary: Primary | None = None, report: Status | None = None):
    return Group("g", members, primary, 4, in_sync, report, 2000)


def test_elect_refuses_with_a_primary_a_live_in_sync_member_or_without_unclean():
    live = {"l": Member("l", 4, 9)}
    assert "has a primary (a at epoch 4)" in _refusal(_group(live, InSync(frozenset({"a"}), 3), Primary("a", "a", 4)), True)
    assert "was never elected" in _refusal(_group(live, InSync(frozenset(), 0)), True)
    assert "in-sync member l" in _refusal(_group(live, InSync(frozenset({"l"}), 3)), True)
    nobody = _group(live, InSync(frozenset({"a"}), 3))
    assert "`--unclean`" in _refusal(nobody, False)
    assert _refusal(nobody, True) is None


def test_what_an_unclean_election_loses_comes_from_the_last_report():
    report = Status("a", 4, 30, 1500, {"l": Lag(9, 21, 700)}, frozenset({"l"}))
    group = _group({"l": Member("l", 4, 9)}, InSync(frozenset({"a"}), 3), report=report)
    assert loss_line(group, "l").startswith("l lacks 21 messages (700 ms of writes, batches after 9) of the log of a "
                                            "(epoch 4) as it reported 0.5 s ago")
    assert "not known" in loss_line(_group({"l": Member("l")}, InSync(frozenset({"a"}), 3)), "l")
    rows = {r["member"]: r for r in group.rows()}
    assert rows["a"] == {"member": "a", "endpoint": None, "up": False, "role": None, "in_sync": True, "applied": 30,
                         "behind_messages": 0, "behind_ms": 0}
    assert rows["l"]["up"] and rows["l"]["role"] == "replica" and rows["l"]["behind_messages"] == 21


def test_the_commands_take_serves_coordinator_options_and_no_lease():
    from rockmq.cli import parser

    args: argparse.Namespace = parser().parse_args(["broker", "elect", "g", "--unclean", "--yes", "--coordinator",
                                                    "etcd://127.0.0.1:2379", "--coordinator-user", "u"])
    assert (args.name, args.unclean, args.yes, args.coordinator, args.coordinator_user) == \
        ("g", True, True, "etcd://127.0.0.1:2379", "u")
    assert not hasattr(args, "coordinator_lease_s")

