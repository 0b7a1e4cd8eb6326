"""Look at a built Allure 3 report the way a person does: served over http, in Chromium.

The report is a single-page app that fetches its data, so it is served on 127.0.0.1 and
opened by headless Chromium, which writes a screenshot and the rendered DOM of one page in
one start.  Pages are reached by the app's hash routes: ``""`` (the results page, its
Variables block and tree), ``#metrics``, ``#categories``, ``#globalAttachments`` and
``#<test-result id>`` (the id of ``data/test-results/<id>.json``).  ``--virtual-time-budget``
lets the app's fetches finish before the capture; without it the DOM is an empty shell.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


def chromium() -> str | None:
    """Chromium's path, or None (scripts/setup.sh --tests installs it)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(report: Path) -> Iterator[str]:
    """The report on a free loopback port; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(report.resolve()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def visible_text(dom: str) -> str:
    """What the page shows: the DOM without styles and scripts, unescaped, one line."""
    text = re.sub(r"<(script|style|svg)\b[^>]*>.*?</\1>", " ", dom, flags=re.S | re.I)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def shoot(url: str, png: Path, height: int = 1000, expect: str = "") -> str:
    """Screenshot ``url`` into ``png`` and return the page's visible text; a longer virtual
    time is tried when ``expect`` is not on the page yet."""
    browser = chromium()
    if browser is None:
        raise FileNotFoundError("chromium")
    png = png.resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    text = ""
    for budget in (5000, 15000):
        profile = tempfile.mkdtemp(prefix="pinet-chromium-")
        command = [
            browser,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size=1440,{height}",
            f"--virtual-time-budget={budget}",
            f"--screenshot={png}",
            "--dump-dom",
            url,
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out, _ = process.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its own process group only
            process.communicate()
            out = b""
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        text = visible_text(out.decode("utf-8", errors="replace"))
        if "Powered by" in text and expect in text:
            break
    return text


def result_id_of(report: Path, name_part: str) -> str:
    """The id of the first test result whose name holds ``name_part``."""
    for path in sorted((report / "data" / "test-results").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if name_part in str(data.get("name", "")):
            return str(data.get("id", path.stem))
    raise KeyError(f"no test result named like {name_part!r} in {report}")


def tree_paths(report: Path) -> list[tuple[str, ...]]:
    """Each test of the results tree as the path a person unfolds to it: group names, then
    the test's title (from the tree widget the page draws)."""
    tree = json.loads((report / "widgets" / "default" / "tree.json").read_text(encoding="utf-8"))
    groups, leaves = tree["groupsById"], tree["leavesById"]
    paths: list[tuple[str, ...]] = []

    def walk(node: dict[str, list[str]], path: tuple[str, ...]) -> None:
        for leaf in node.get("leaves", []):
            paths.append((*path, str(leaves[leaf].get("name", ""))))
        for group in node.get("groups", []):
            walk(groups[group], (*path, str(groups[group]["name"])))

    walk(tree["root"], ())
    return paths
