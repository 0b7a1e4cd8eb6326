"""Build the Allure 3 report offline, with history carried across runs.

The Allure 3 CLI (npm package ``allure``) is installed by scripts/setup.sh into ``.allure``;
it generates without network access.  History lives in a JSONL file beside the results, one
line per generate, so the goodput metrics show a trend across nightly runs.  Two quirks are
handled here: Allure does not clean its output directory (a stale report would shadow the
new one), and its page template loads a third-party analytics script, removed after
generation so that opening a lab's report calls nobody.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import PinetError
from .allure_out import CATEGORIES
from .metric_sets import groups_config
from .night_digest import NightDigest

ANALYTICS = re.compile(
    r"<script[^>]*googletagmanager[^>]*>\s*</script>\s*(<script>.*?gtag\(.*?</script>)?", re.S
)


def allure_cli(root: Path) -> list[str]:
    """The command that runs the Allure 3 CLI installed under ``root/.allure``."""
    cli = root / ".allure" / "node_modules" / "allure" / "cli.js"
    node = shutil.which("node")
    if not cli.exists() or node is None:
        raise PinetError(
            f"Allure 3 CLI not found at {cli}: run scripts/setup.sh (needs Node.js and npm), "
            "or `npm install --prefix .allure allure@3`"
        )
    return [node, str(cli)]


# The tree a lab engineer navigates: each board, then what it ran (the image pinet flashed,
# else its kernel), then the adapter or link, then the suite (labels from allure_out).
GROUP_BY = ["board", "system", "link", "suite"]


def config(
    output: Path,
    history: Path,
    name: str,
    morning: NightDigest | None = None,
    attachments: Sequence[str] = (),
) -> dict[str, object]:
    """The Allure 3 configuration pinet uses (written as allurerc.json)."""
    options: dict[str, object] = {
        "reportName": name,
        "singleFile": False,
        "reportLanguage": "en",
        "groupBy": GROUP_BY,
        "charts": [
            {"type": "currentStatus", "title": "Tonight"},
            {"type": "statusDynamics", "title": "Nights", "limit": 30},
            {"type": "statusTransitions", "title": "New failures and fixes"},
        ],
    }
    made: dict[str, object] = {
        "name": name,
        "output": str(output),
        "historyPath": str(history),
        "historyLimit": 100,
        "plugins": {"awesome": {"options": options}},
        # One metric set per kind of figure, one row per context (record/metric_sets.py).
        "performance": {"groups": groups_config()},
        "categories": {
            "rules": [
                {
                    "id": f"pinet-{n}",
                    "name": f"{n}. {c['name']}",
                    "matchers": {"statuses": c["matchedStatuses"], "message": _plain(str(c["messageRegex"]))},
                    "groupBy": [{"label": "board"}],
                    "expand": True,
                }
                for n, c in enumerate(CATEGORIES, 1)
            ]
        },
    }
    if morning is not None:
        made["variables"] = morning.variables()  # the first block of the results page
    if attachments:
        made["globalAttachments"] = list(attachments)
    return made


def _plain(pattern: str) -> str:
    """Our categories use Python's (?s) flag; JavaScript's RegExp has no inline flags."""
    return pattern.replace("(?s)", "").replace(".*", "").strip()


def build_report(
    root: Path,
    results: Path,
    output: Path,
    history: Path,
    name: str = "pytest-pinet",
    morning: NightDigest | None = None,
) -> Path:
    """Generate the report from ``results`` into ``output``; return its index.html.

    ``morning`` (the night's counts and largest drops) opens the report: the Variables block
    of its results page and a "morning" page among its global attachments."""
    if not results.is_dir() or not any(results.glob("*-result.json")):  # checked before resolving
        raise PinetError(f"no Allure results in {results}: run the suite with --alluredir {results}")
    command = allure_cli(root)
    results, output, history = results.resolve(), output.resolve(), history.resolve()
    history.parent.mkdir(parents=True, exist_ok=True)
    attachments = []
    if morning is not None:
        page = results.parent / "morning.md"
        page.write_text(morning.markdown(), encoding="utf-8")
        attachments.append(page.name)
        name = f"{name} {morning.run_id}"  # the night's name in the metrics' history table
    config_file = results.parent / "allurerc.json"
    config_file.write_text(
        json.dumps(config(output, history, name, morning, attachments), indent=2), encoding="utf-8"
    )
    if output.exists():
        shutil.rmtree(output)
    done = subprocess.run(
        [*command, "generate", str(results), "-c", str(config_file)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=results.parent,
    )
    index = output / "index.html"
    if done.returncode != 0 or not index.exists():
        raise PinetError(
            f"allure generate failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}"
        )
    html = index.read_text(encoding="utf-8")
    index.write_text(ANALYTICS.sub("", html), encoding="utf-8")
    return index
