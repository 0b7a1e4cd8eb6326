"""A BSD command's output with a line before it (a login banner, an echoed command, a prompt)
is read as without it: uname, the temperature and the clock levels were lost that way."""

from __future__ import annotations

import re

import pytest

from pytest_pinet.host.platform.bsd_parse import freq_levels, os_of_uname, sysctl_temperature, uname_line
from tests.fixture_paths import BSD_OUTPUTS

LEADING = (
    "Last login: Sat Nov 28 06:01:12 2026 from 10.0.0.5",
    "$ sysctl -n dev.cpu.0.temperature",
    "FreeBSD 14.1-RELEASE (GENERIC) releng/14.1-n267679-10e31f0946d8",  # a MOTD's first line
)


def _line_of(name: str, key: str) -> str:
    """The ``key: value`` line of a real sysctl output, as ``sysctl KEY`` prints it."""
    for line in (BSD_OUTPUTS / name).read_text(encoding="utf-8").splitlines():
        if re.match(rf"^\s*{re.escape(key)}(?::| =) ", line):
            return line.strip()
    raise AssertionError(f"{key} not in {name}")


@pytest.mark.parametrize("before", LEADING)
@pytest.mark.parametrize(
    ("name", "expected"),
    [("freebsd12-uname-a.txt", "freebsd"), ("netbsd-9.1-aarch64-rpi3bplus-uname-ap.txt", "netbsd")],
)
def test_uname_after_a_leading_line(before, name, expected):
    text = (BSD_OUTPUTS / name).read_text(encoding="utf-8")
    assert os_of_uname(f"{before}\n{text}") == expected
    assert uname_line(f"{before}\n{text}") == uname_line(text)


@pytest.mark.parametrize("before", LEADING)
def test_temperature_and_clock_levels_after_a_leading_line(before):
    pfsense = "freebsd-pfsense232-sysctl-dev.cpu.0-temperature-freq_levels.txt"
    temperature = _line_of(pfsense, "dev.cpu.0.temperature")
    levels = _line_of(pfsense, "dev.cpu.0.freq_levels")
    assert sysctl_temperature(f"{before}\n{temperature}\n") == 57.0
    assert freq_levels(f"{before}\n{levels}\n") == [1000, 875, 750, 625, 500, 375, 250, 125]
    bare = temperature.split(": ", 1)[1]  # what sysctl -n prints
    assert sysctl_temperature(f"{before}\n{bare}\n") == 57.0
    turbo = _line_of("freebsd-sysctl-dev.cpu.0-freq_levels-turbo.txt", "dev.cpu.0.freq_levels")
    assert freq_levels(f"{before}\n{turbo}")[:2] == freq_levels(turbo)[:2] != []
