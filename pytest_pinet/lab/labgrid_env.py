"""Open a labgrid Environment for one place without touching the process environment.

labgrid fills ``!template $LG_*`` only from ``os.environ`` while it reads an env file, and its
``RemotePlace`` finds the coordinator through ``LG_COORDINATOR`` unless the file's options name
it.  Writing those into ``os.environ`` would make one place's name leak into everything the
process does later (another place's env, a subprocess, a second session in the same
interpreter).  Instead the env file is resolved here with the place's own substitutions into a
private copy, and labgrid reads that copy; paths stay relative to the original file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def substitutions_for(extra: Mapping[str, str]) -> dict[str, str]:
    """What ``!template`` may name, as labgrid allows it: ``LG_*`` of the environment, then the
    place's own values (which win)."""
    values = {name: value for name, value in os.environ.items() if name.startswith("LG_")}
    values.update(extra)
    return values


def resolved_env_data(env_file: Path, extra: Mapping[str, str]) -> dict[str, Any]:
    """The env file's data with templates filled, imports absolute, and the coordinator named."""
    from labgrid.util.yaml import load, resolve_templates

    base = str(env_file.resolve().parent)
    try:
        with env_file.open(encoding="utf-8") as stream:
            data = load(stream)
    except OSError as exc:
        where = str(env_file)
        raise ConfigError(where, f"cannot read lab env file: {exc.strerror}", "check --pinet-lab") from None
    if not isinstance(data, dict):
        raise ConfigError(str(env_file), "expected a mapping with 'targets'")
    try:
        resolve_templates(data, {"BASE": base, **substitutions_for(extra)})
    except KeyError as exc:
        raise ConfigError(
            str(env_file),
            f"!template names ${exc.args[0]}, which neither the place nor the environment sets",
            "use $LG_PLACE or $LG_COORDINATOR, or export the variable",
        ) from None
    imports = data.get("imports")
    if isinstance(imports, list):
        data["imports"] = [
            item
            if not isinstance(item, str) or not item.endswith(".py") or os.path.isabs(item)
            else os.path.join(base, item)
            for item in imports
        ]
    coordinator = extra.get("LG_COORDINATOR")
    if coordinator:
        options = data.setdefault("options", {})
        if isinstance(options, dict):
            options.setdefault("coordinator_address", coordinator)
    return data


def open_environment(env_file: Path, extra: Mapping[str, str] | None = None) -> Any:
    """A labgrid ``Environment`` of ``env_file`` with the place's substitutions applied.

    Without substitutions labgrid reads the file itself, exactly as ``labgrid-client`` would.
    """
    from labgrid import Environment

    if not extra:
        return Environment(config_file=str(env_file))
    from labgrid.util.yaml import dump

    data = resolved_env_data(env_file, extra)
    handle, name = tempfile.mkstemp(prefix="pinet-env-", suffix=".yaml")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            dump(data, stream)
        env = Environment(config_file=name)
    finally:
        os.unlink(name)
    env.config.base = str(env_file.resolve().parent)  # relative images and tools: beside the original
    env.config.filename = str(env_file)
    return env
