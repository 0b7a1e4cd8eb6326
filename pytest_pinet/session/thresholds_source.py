"""Which thresholds file a run would judge by, found without pytest: for ``pinet thresholds
explain`` and ``pinet lab check``, which must show what the night will use, not what the
current directory happens to hold.

The order is the plugin's (``plugin/option_sources.py``): the option, ``PINET_THRESHOLDS``,
the ini key ``pinet_thresholds`` of the rootdir's pytest configuration, ``lab/thresholds.yaml``
under the rootdir, the shipped rules; a relative path is anchored at the rootdir.  The rootdir
is what pytest would take from here: the first directory upward holding ``pytest.ini``,
``.pytest.ini``, a ``pyproject.toml`` with ``[tool.pytest.ini_options]``, a ``tox.ini`` with
``[pytest]`` or a ``setup.cfg`` with ``[tool:pytest]``; else the current directory.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..judge.threshold_rules import SHIPPED

INI_KEY = "pinet_thresholds"
ENV = "PINET_THRESHOLDS"


@dataclass(frozen=True)
class IniFile:
    """The pytest configuration a run from here would read, and its pinet_* values."""

    rootdir: Path
    path: Path | None
    values: Mapping[str, str]


def pytest_ini(start: Path) -> IniFile:
    """The rootdir and ini values pytest would find from ``start`` (see the module's text)."""
    for folder in (start, *start.parents):
        for name, read in (
            ("pytest.ini", _ini_section("pytest")),
            (".pytest.ini", _ini_section("pytest")),
            ("pyproject.toml", _pyproject),
            ("tox.ini", _ini_section("pytest")),
            ("setup.cfg", _ini_section("tool:pytest")),
        ):
            path = folder / name
            if path.is_file():
                values = read(path)
                if values is not None:
                    return IniFile(folder, path, values)
    return IniFile(start, None, {})


def _ini_section(section: str) -> Callable[[Path], dict[str, str] | None]:
    """A reader of ``section`` of an ini-style file (None: the file has no such section)."""

    def read(path: Path) -> dict[str, str] | None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise ConfigError(str(path), f"not an ini file pytest can read ({exc})") from None
        if not parser.has_section(section):
            return None if path.name != "pytest.ini" else {}
        return dict(parser.items(section))

    return read


def _pyproject(path: Path) -> dict[str, str] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"not TOML pytest can read ({exc})") from None
    section = data.get("tool", {}).get("pytest", {}).get("ini_options")
    return {str(k): str(v) for k, v in section.items()} if isinstance(section, dict) else None


def thresholds_file(given: str, environ: Mapping[str, str], start: Path) -> tuple[Path, str]:
    """The thresholds file a run from ``start`` would use, and where that choice came from;
    ``given``: a file named on the command line (relative to ``start``, as a shell user means)."""
    if given.strip():
        return start / given.strip(), "--thresholds"
    ini = pytest_ini(start)
    for text, source in (
        (environ.get(ENV, ""), ENV),
        (ini.values.get(INI_KEY, ""), f"ini option {INI_KEY} ({ini.path})"),
    ):
        if text.strip():
            path = Path(text.strip())
            return (path if path.is_absolute() else ini.rootdir / path), source
    own = ini.rootdir / "lab" / "thresholds.yaml"
    if own.is_file():
        return own, f"lab/thresholds.yaml under the rootdir {ini.rootdir}"
    return SHIPPED, "none named: no --thresholds, PINET_THRESHOLDS, ini key or lab/thresholds.yaml"
