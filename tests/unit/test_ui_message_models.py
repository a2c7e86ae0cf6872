"""The Messages pages' models (rockmq/ui/messages.py): a GET query in, the search it asks (or why it
cannot run) out; the Messages service's replies in, tables, body views and a trace timeline out; no broker."""

from __future__ import annotations

import pytest

from rockmq.protocol import messages, pb
from rockmq.ui import messages as m

T0 = 1_764_453_600_250  # 2025-11-29T22:00:00.250Z


def stored(body: bytes = b'{"a": [1, 2]}') -> messages.StoredMessage:
    s = messages.StoredMessage(broker="b-0")
    s.message.topic.name = "orders"
    s.message.body = body
    s.message.user_properties["region"] = "eu"
    sp = s.message.system_properties
    sp.message_id, sp.queue_id, sp.queue_offset, sp.tag, sp.message_type = "ID1", 2, 7, "paid", pb.NORMAL
    sp.keys.extend(["k1", "k2"])
    sp.store_timestamp.FromMilliseconds(T0)
    sp.born_timestamp.FromMilliseconds(T0 - 5)
    return s


def test_a_query_names_the_search_by_the_fields_given():
    assert m.search({}) == m.Search()
    assert m.search({"topic": "t", "id": " ID1 "}) == m.Search("id", "t", id="ID1")
    key = m.search({"topic": "t", "key": "k", "from": "2025-11-29T23:00:00.250+01:00", "to": ""})
    assert (key.kind, key.key, key.from_ms, key.to_ms) == ("key", "k", T0, 0)
    assert key.from_text == "2025-11-29T23:00:00.250+01:00"  # shown again in the form as written
    assert m.search({"topic": "t", "from": "2025-11-29T22:00:00.250Z"}).kind == "time"


@pytest.mark.parametrize(("query", "says"), [
    ({"topic": "t", "key": "k", "from": "2025-11-29T22:00:00"}, "from: time '2025-11-29T22:00:00' has no zone"),
    ({"key": "k"}, "Give a topic."),
    ({"topic": "t"}, "Give a message id, a key, or a from time"),
    ({"topic": "t", "key": "k", "from": "2025-11-29T22:00:00Z", "to": "2025-11-29T21:00:00Z"}, "to is before from."),
    ({"topic": "t", "to": "soon"}, "to: invalid time 'soon'"),
])
def test_a_bad_query_says_why(query, says):
    with pytest.raises(m.BadSearch, match="^" + says.replace(".", r"\.").replace("(", r"\(")):
        m.search(query)


def test_found_rows_link_each_id_and_show_units_and_zones():
    reply = messages.MessagesResponse(messages=[stored()], more=True)
    table = m.found(reply)
    assert [c.text for c in table.rows[0]] == ["ID1", "orders", "b-0:2", "7", "k1, k2", "paid",
                                               "2025-11-29 22:00:00.250 UTC", "13 B"]
    assert table.rows[0][0].href == "/ui/messages/ID1?topic=orders"
    assert m.more_note(reply) == "More matched: showing the first 1; narrow from/to."
    assert m.message_href("%RETRY%g", "a/b") == "/ui/messages/a%2Fb?topic=%25RETRY%25g"


def test_headers_leave_out_what_is_not_set_and_properties_are_sorted():
    h = dict((r[0].text, r[1].text) for r in m.headers(stored()).rows)
    assert h["Keys"] == "k1, k2" and h["Type"] == "NORMAL" and h["Born"] == "2025-11-29 22:00:00.245 UTC"
    assert "Message group" not in h and "Priority" not in h
    assert [[c.text for c in r] for r in m.properties(stored()).rows] == [["region", "eu"]]


def test_body_views():
    assert m.body(b'{"a": [1]}', "json") == ('{\n  "a": [\n    1\n  ]\n}', "")
    assert m.body(b"not json", "json") == ("not json", "Not JSON: shown as text.")
    assert m.body(bytes(range(18)), "hex")[0] == "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n10 11"
    assert m.body(b"caf\xc3\xa9 \xff", "text") == ("café \ufffd", "")
    assert m.view_of({"view": "hex"}) == "hex" and m.view_of({"view": "<script>"}) == "text"


def test_the_timeline_words_each_event_with_its_group_and_zone():
    trace = messages.TraceMessageResponse(events=[
        messages.TraceEvent(at_ms=T0, kind="stored", broker="b-0", queue_id=2, offset=7),
        messages.TraceEvent(at_ms=T0 + 1000, kind="delivered", group="billing", client_id="c1", attempt=1,
                            broker="b-0", queue_id=2, offset=7),
        messages.TraceEvent(at_ms=T0 + 2000, kind="acked", group="billing", client_id="c1", broker="b-0"),
        messages.TraceEvent(at_ms=T0 + 3000, kind="something-new", queue_id=-1, offset=-1)])
    assert m.timeline(trace) == [
        ("2025-11-29 22:00:00.250 UTC", "stored", "stored on b-0:2 at offset 7"),
        ("2025-11-29 22:00:01.250 UTC", "delivered", "delivered to group billing (client c1, attempt 1)"),
        ("2025-11-29 22:00:02.250 UTC", "acked", "acknowledged by billing (client c1)"),
        ("2025-11-29 22:00:03.250 UTC", "something-new", "something-new")]
