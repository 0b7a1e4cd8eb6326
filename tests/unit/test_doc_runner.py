"""The doc runner of the rehearsal: it finds a page's blocks by kind, runs them as one
terminal does, and names the page and line of a command that drifted from the code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.integration.doc_runner import DocFailure, DocRunner, blocks

REPO = Path(__file__).resolve().parents[2]
PINET = [str(Path(sys.executable).with_name("pinet"))]


def _runner(tmp_path: Path) -> DocRunner:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return DocRunner(cwd=tmp_path, env=env, substitute=lambda text: text)


def test_the_pages_mark_every_shell_block():
    kinds = {
        block.kind for page in ("hardware-lab.md", "nightly.md") for block in blocks(REPO / "docs" / page)
    }
    assert {"sh", "sh hardware", "sh on-each-host", "sh packages", "nft", "sudoers", "ini"} <= kinds
    hardware = [b for b in blocks(REPO / "docs" / "hardware-lab.md") if b.kind == "sh hardware"]
    assert len(hardware) == 1 and "ssh-copy-id" in hardware[0].text  # few, and said why


def test_a_stale_option_in_a_block_fails_naming_the_page_and_its_line(tmp_path):
    page = (REPO / "docs" / "hardware-lab.md").read_text(encoding="utf-8")
    stale = page.replace(
        'pinet thresholds explain --context "model=Pi 3B+',
        'pinet thresholds explain --contexts "model=Pi 3B+',
    )
    copy = tmp_path / "hardware-lab.md"
    copy.write_text(stale, encoding="utf-8")
    (block,) = [b for b in blocks(copy) if "--contexts" in b.text]
    line = stale.splitlines().index(next(x for x in stale.splitlines() if "--contexts" in x)) + 1
    with pytest.raises(
        DocFailure, match=rf"^hardware-lab.md:{line}: exit 2: pinet thresholds explain --contexts"
    ):
        _runner(tmp_path).run_block(block)


def _ran_page(tmp_path: Path, text: str) -> DocRunner:
    """A page of ``text`` in ``tmp_path``, run through; the runner, for what it ran and skipped."""
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    runner = _runner(tmp_path)
    runner.run_page(page)
    return runner


def test_blocks_share_one_shells_exports_and_directory(tmp_path):
    runner = _ran_page(
        tmp_path,
        "```sh\nexport GREETING=hello\nmkdir -p sub && cd sub\n```\n\n"
        '```sh\ntest "$GREETING" = hello && test "$(basename "$PWD")" = sub\n```\n',
    )
    assert len(runner.ran) == 2


def test_a_hardware_block_is_skipped_by_name_and_exits_n_is_a_pass(tmp_path):
    runner = _ran_page(
        tmp_path,
        "```sh hardware\nflash-the-card /dev/sdz\n```\n\n"
        "```sh\nsh -c 'exit 1'     # exits 1 while any is pending\n```\n",
    )
    assert runner.skipped == ["page.md:2: flash-the-card /dev/sdz"] and len(runner.ran) == 1
