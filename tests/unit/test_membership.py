"""A coordinated member's pure decisions (broker/coordination/membership.py): who campaigns first,
when an election has heard everyone, and the settings a role runs with."""

from __future__ import annotations

from rockmq.broker.coordination.coordinator import InSync, Member, Primary
from rockmq.broker.coordination.membership import all_announced, broker_settings, eligible, first_candidate
from rockmq.config import Settings


def test_the_member_holding_the_most_of_the_log_campaigns_first():
    members = {"a": Member("a", 1, 90), "b": Member("b", 1, 120), "c": Member("c", 0, 500), "d": Member("d")}
    assert first_candidate(members) == "b"  # the latest epoch first: c's longer history is an older primary's
    assert first_candidate({"b": Member("b", 2, 7), "a": Member("a", 2, 7)}) == "a"  # a tie: the lowest name
    assert first_candidate({"d": Member("d")}) is None  # nobody announced


def test_an_election_waits_for_every_registered_member():
    assert all_announced({"a": Member("a", 1, 0), "b": Member("b", 0, 3)})
    assert not all_announced({"a": Member("a", 1, 0), "b": Member("b")})


def test_a_replica_follows_the_primary_and_neither_role_keeps_the_coordinators_settings():
    s = Settings(broker_name="g", replication="sync", coordinator="etcd://127.0.0.1:2379", coordinator_lease_s=5,
                 coordinator_user="u", coordinator_password="p")
    primary = Primary("127.0.0.1:1", "127.0.0.1:1", 3)
    mine, theirs = broker_settings(s, primary, "127.0.0.1:1"), broker_settings(s, primary, "127.0.0.1:2")
    assert (mine.replica_of, theirs.replica_of) == ("", "127.0.0.1:1")
    assert not any((mine.coordinator, mine.coordinator_user, theirs.coordinator, theirs.coordinator_password))
    assert theirs.coordinator_lease_s == Settings().coordinator_lease_s and theirs.replication == "sync"


def test_only_members_of_the_in_sync_set_are_elected_but_in_the_groups_first_election():
    members = {"a": Member("a", 1, 90), "b": Member("b", 1, 120)}
    assert eligible(members, InSync(frozenset({"a"}), 4)) == {"a": Member("a", 1, 90)}
    assert first_candidate(eligible(members, InSync(frozenset({"a"}), 4))) == "a"  # b holds more, but not in sync
    assert eligible(members, InSync(frozenset(), 3)) == {}  # nobody in sync: nobody elected
    assert eligible(members, InSync(frozenset(), 0)) == members  # never written: the group's first election
