"""A coordinated member's pure decisions (broker/coordination/membership.py): who campaigns first,
when an election has heard everyone, and the settings a role runs with."""

from __future__ import annotations

from rockmq.broker.coordination.coordinator import InSync, Member, Primary
from rockmq.broker.coordination.in_sync import behind, taken_over
from rockmq.broker.coordination.membership import (
    all_announced,
    broker_settings,
    eligible,
    epoch_floor,
    first_candidate,
)
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


def test_a_campaign_takes_an_epoch_above_every_one_a_member_holds():
    members = {"a": Member("a", 4, 90), "b": Member("b", 7, 3), "c": Member("c")}
    assert epoch_floor(members, 2) == 7  # b's store is at epoch 7: the next is 8 even if etcd's key says less
    assert epoch_floor(members, 9) == 9  # this member's own store
    assert epoch_floor({}, 0) == 0


def test_a_new_primary_keeps_itself_and_the_registered_members_of_the_set_it_inherits():
    assert taken_over(frozenset({"old", "b", "c"}), {"b", "new"}, "new") == frozenset({"b", "new"})
    assert taken_over(frozenset(), {"a", "b"}, "a") == frozenset({"a"})  # a fresh group: the primary alone


def test_members_are_behind_by_the_age_of_the_first_batch_they_lack_or_their_absence():
    ages = {10: 0.2, 4: 1.5}  # a batch applied -> the age of the first one after it
    late = behind(frozenset({"p", "near", "far", "gone", "back"}), "p", {"near": 10, "far": 4, "p": 0},
                  ages.__getitem__, {"gone": 3.0, "back": 0.3}.__getitem__, 1.0)
    assert late == frozenset({"far", "gone"})  # the primary is never behind itself


def test_a_primary_read_from_the_coordinator_carries_its_lease_apart_from_its_value():
    held = Primary("m", "127.0.0.1:1", 3, lease=42)
    assert Primary.decode(held.encode()) == held and Primary.decode(held.encode()).lease == 0
    assert b"lease" not in held.encode()
    assert Member.decode(Member("e", 2, 5).encode()) == Member("e", 2, 5)
