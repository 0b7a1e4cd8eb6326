"""The public API a lab's own tests build on: every exported name resolves to the real thing."""

from __future__ import annotations

import pytest

import pytest_pinet


@pytest.mark.parametrize("name", [n for n in pytest_pinet.__all__ if n != "__version__"])
def test_every_public_name_resolves(name):
    value = getattr(pytest_pinet, name)
    assert getattr(value, "__name__", name) == name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = pytest_pinet.nope
