"""A package index on 127.0.0.1, as a lab keeps its own: PEP 503 pages served from a directory.

A lab's nightly installs pytest-pinet from the lab's own index (a devpi, a mirror), never from
a public one.  The recipe tests take that path: the wheel built from the checkout and what pip
needs beside it (its dependencies, pip itself, downloaded once from the index this machine
uses) are laid out one folder per project, and ``http.server`` serves each folder's listing,
which is the simple page pip reads.  A second index holds a planted ``pytest-pinet`` of a
higher version, built here, which a runner's own pip configuration might name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from .report_browser import serve

PLANTED_VERSION = "99.0"


def project_of(filename: str) -> str:
    """The normalized project name of a wheel or sdist file (PEP 503)."""
    stem = filename[: -len(".whl")] if filename.endswith(".whl") else filename
    if filename.endswith(".whl"):
        name = stem.split("-")[0]
    else:
        name = re.sub(r"\.(tar\.gz|zip|tar\.bz2)$", "", stem).rsplit("-", 1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def lay_out(files: Sequence[Path], root: Path) -> Path:
    """``files`` copied into ``root``, one folder per project: the index's tree."""
    for file in files:
        folder = root / project_of(file.name)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, folder / file.name)
    return root


def download(python: str, requirements: Sequence[str], into: Path, env: dict[str, str]) -> list[Path]:
    """Everything ``requirements`` need, as ``python``'s pip fetches it for its own platform."""
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [python, "-m", "pip", "download", "-q", "-d", str(into), *requirements],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    return sorted(into.iterdir())


def planted_wheel(into: Path) -> Path:
    """A ``pytest-pinet`` of version 99.0 that anyone could publish: installing it would show."""
    into.mkdir(parents=True, exist_ok=True)
    info = f"pytest_pinet-{PLANTED_VERSION}.dist-info"
    wheel = into / f"pytest_pinet-{PLANTED_VERSION}-py3-none-any.whl"
    files = {
        "pytest_pinet/__init__.py": f'__version__ = "{PLANTED_VERSION}"  # planted\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: pytest-pinet\nVersion: {PLANTED_VERSION}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: planted\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"]))
    return wheel


def served(root: Path) -> AbstractContextManager[str]:
    """``root`` as a package index on 127.0.0.1 (the report's loopback server: a folder's
    listing is the simple page pip reads); yields its URL, pip's ``--index-url``."""
    return serve(root)
