"""Hosts without root login: ``become: sudo`` runs what needs root through ``sudo -n``, and a
refusal is a ``permission`` lab fault naming the command and the fix, never "unsupported".

Two users are made for the test (and removed after): one with passwordless sudo for the
network tools only, one without sudo.  The virtual lab's sshd lets any local user in with
the lab's key, so the peer is reached as each of them in turn.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.net_tunables import Mtu, Sysctl
from pytest_pinet.host.tunables import apply_checked
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.virtlab import virtual_lab

from .conftest import PLAIN_USER, SUDO_USER


def _peer(spec, user: str, become: str | None):
    inventory = load_inventory(virtual_lab.up(spec))
    link = inventory.link("eth")
    entry = inventory.hosts[link.peer]
    entry = dataclasses.replace(
        entry, endpoint=dataclasses.replace(entry.endpoint, username=user), become=become
    )
    return entry.connect(), link.peer_interface


def test_become_sudo_applies_and_restores_as_an_ordinary_user(fresh_lab, lab_users):
    host, interface = _peer(fresh_lab, SUDO_USER, "sudo")
    try:
        assert host.check(["id", "-un"]).strip() == SUDO_USER
        mtu = Mtu(interface, 1400)
        saved = apply_checked(mtu, host)
        assert mtu.read(host) == 1400
        mtu.restore(host, saved)
        assert mtu.read(host) == saved
        forward = Sysctl("net.ipv4.conf.all.forwarding", "1")
        saved_forward = apply_checked(forward, host)
        forward.restore(host, saved_forward)
        assert forward.read(host) == saved_forward
    finally:
        host.close()


@pytest.mark.parametrize(
    ("user", "become", "says"),
    [
        (PLAIN_USER, None, "needs root, pinet-plain was refused"),
        (SUDO_USER, None, "set `become: sudo` for pc"),
        (PLAIN_USER, "sudo", "sudo -n refused `ip link set dev"),
    ],
    ids=["no-sudo", "sudo-not-asked-for", "sudo-refused"],
)
def test_a_command_refused_for_want_of_root_is_a_permission_fault(fresh_lab, lab_users, user, become, says):
    host, interface = _peer(fresh_lab, user, become)
    try:
        with pytest.raises(LabFault) as info:
            apply_checked(Mtu(interface, 1400), host)
        assert info.value.category == "permission"
        assert says in str(info.value)
        assert Mtu(interface, 1400).read(host) == 1500  # nothing half-applied
    finally:
        host.close()
