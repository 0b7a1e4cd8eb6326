"""What every ``pinet lab`` command shares: which lab (``--lab``, ``--state-root``) and its plan,
and the store the commands read (``$PINET_DB`` or the default)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ...errors import PinetError
from ...record.data_home import store_url
from ...virtlab import twin, virtual_lab
from ...virtlab.topology import LabSpec, lab_spec


def add_lab_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lab", default="pinet", help="lab name: pinet, pinet1, ... (default pinet)")
    parser.add_argument(
        "--state-root",
        default=None,
        help="where lab state lives (default $PINET_STATE_DIR or /run/pinet)",
    )


def spec_of(args: argparse.Namespace) -> LabSpec:
    """The lab plan: as asked (``lab up --board``), else as the running lab was built."""
    try:
        state_root = Path(args.state_root) if args.state_root else None
        board = getattr(args, "board", None)
        if board is None:
            plain = (
                LabSpec(name=args.lab)
                if state_root is None
                else LabSpec(name=args.lab, state_root=state_root)
            )
            built = virtual_lab.built_as(plain)
            if built.get("twin"):
                return twin.plan(Path(built["twin"]), args.lab, plain.state_root)
            return lab_spec(
                args.lab,
                board=built.get("board") or "netns",
                image=built.get("image", ""),
                accel=built.get("accel") or "tcg",
                state_root=state_root,
            )
        return lab_spec(args.lab, board=board, image=args.image, accel=args.accel, state_root=state_root)
    except ValueError as exc:
        raise PinetError(str(exc)) from None


def db_url() -> str:
    """The store the main job and the report use: ``$PINET_DB``, else the default store."""
    return store_url(os.environ.get("PINET_DB", ""))
