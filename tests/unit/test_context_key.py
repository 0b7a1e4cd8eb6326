"""The context key built and read back in one place (pytest_pinet/model/context_key.py)."""

from __future__ import annotations

from pytest_pinet.model.context_key import FIELDS, ContextKey, context_key

CONTEXT = {"lab": "pinet", "board": "pi", "link": "eth0", "direction": "upload", "mtu": 1500, "qdisc": ""}
# The text a store of an earlier version holds for the same context: keys must never change.
STORED = (
    "lab=pinet|board=pi|peer=|link=eth0|adapter=|scenario=|direction=upload|duplex=|profile=|"
    "protocol=|streams=|mtu=1500|link_speed_mbps=|qdisc="
)


def test_the_key_text_is_what_stores_already_hold_and_reads_back_to_itself():
    assert context_key(CONTEXT) == STORED
    assert str(ContextKey.parse(STORED)) == STORED
    assert [name for name, _ in ContextKey.parse(STORED).pairs] == list(FIELDS)


def test_later_fields_appear_only_when_set_and_survive_a_round_trip():
    key = context_key({**CONTEXT, "image": "debian12-k6.1", "filesystem": ""})
    assert key == STORED + "|image=debian12-k6.1"
    parsed = ContextKey.parse(key)
    assert parsed.get("image") == "debian12-k6.1" and parsed.get("filesystem") == ""
    assert str(parsed.without(["image"])) == STORED


def test_the_readable_part_skips_empty_fields():
    parsed = ContextKey.parse(STORED)
    assert parsed.values() == ["pi", "eth0", "upload"]
    assert parsed.shown() == ["board=pi", "link=eth0", "direction=upload"]
    assert ContextKey.parse("nonsense").pairs == ()
