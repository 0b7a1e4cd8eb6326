"""The line-rate model: known points from the seeds and properties that physics demands."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.judge.linerate import LinkModel, tcp_goodput_limit

mtus = st.integers(min_value=1280, max_value=9216)
speeds = st.sampled_from([10.0, 100.0, 1000.0, 2500.0, 10000.0])


def test_gbe_mtu1500_known_points():
    assert tcp_goodput_limit(1000, 1500, timestamps=False) == pytest.approx(949.284, abs=1e-3)
    assert tcp_goodput_limit(1000, 1500) == pytest.approx(941.482, abs=1e-3)
    model = LinkModel()
    assert model.full_frame_wire_bytes == 1538
    assert round(model.frames_per_second()) == 81274
    assert model.udp_payload_per_frame == 1472


def test_minimum_frame_rate_is_1_488_095_per_second():
    # 46-byte IP packet -> 64-byte frame -> 84 bytes of wire time.
    assert round(LinkModel().frames_per_second(46)) == 1488095
    # Shorter packets are padded: the frame rate cannot rise further.
    assert LinkModel().frames_per_second(20) == LinkModel().frames_per_second(46)


def test_vlan_tag_and_ipv6_cost_payload():
    plain = tcp_goodput_limit(1000, 1500)
    assert tcp_goodput_limit(1000, 1500, vlan_tags=1) < plain
    assert tcp_goodput_limit(1000, 1500, ip_version=6) == pytest.approx(1000 * 1428 / 1538)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"speed_mbps": 0}, "speed"),
        ({"mtu": 60}, "MTU"),
        ({"ip_version": 5}, "IP version"),
        ({"tcp_options": 3}, "TCP options"),
        ({"vlan_tags": 3}, "VLAN"),
        ({"ip_version": 6, "mtu": 1000}, "MTU"),
    ],
)
def test_invalid_links_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LinkModel(**kwargs)


@given(speed=speeds, mtu=mtus, ts=st.booleans(), tags=st.integers(0, 2), v6=st.booleans())
def test_goodput_never_exceeds_link_speed(speed, mtu, ts, tags, v6):
    goodput = tcp_goodput_limit(speed, mtu, timestamps=ts, vlan_tags=tags, ip_version=6 if v6 else 4)
    assert 0 < goodput < speed
    model = LinkModel(speed, mtu, 6 if v6 else 4, 12 if ts else 0, tags)
    assert model.udp_goodput_mbps < speed
    # frames * wire bits can never exceed the link's bit rate
    assert model.frames_per_second() * model.full_frame_wire_bytes * 8 == pytest.approx(speed * 1e6)


@given(speed=speeds, low=mtus, high=mtus, ts=st.booleans())
def test_goodput_is_monotonic_in_mtu(speed, low, high, ts):
    low, high = sorted((low, high))
    assert tcp_goodput_limit(speed, low, timestamps=ts) <= tcp_goodput_limit(speed, high, timestamps=ts)


@given(speed=speeds, mtu=mtus)
def test_timestamps_always_cost_twelve_bytes_per_frame(speed, mtu):
    without = tcp_goodput_limit(speed, mtu, timestamps=False)
    with_ts = tcp_goodput_limit(speed, mtu, timestamps=True)
    assert without - with_ts == pytest.approx(speed * 12 / LinkModel(speed, mtu).full_frame_wire_bytes)


def test_full_duplex_ack_cost():
    model = LinkModel()
    assert model.ack_wire_bytes == 90  # 66-byte ACK frame + FCS, preamble, gap
    assert model.tcp_goodput_full_duplex_mbps(2) == pytest.approx(914.72, abs=0.01)
    assert model.tcp_goodput_full_duplex_mbps(33) == pytest.approx(939.81, abs=0.01)
    assert (
        model.tcp_goodput_full_duplex_mbps(2)
        < model.tcp_goodput_full_duplex_mbps(33)
        < model.tcp_goodput_mbps
    )
    with pytest.raises(ValueError, match="segments_per_ack"):
        model.tcp_goodput_full_duplex_mbps(0)
