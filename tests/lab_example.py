"""The example hardware lab (lab/rpi-lab.yaml) as a lab has it once copied: with a key of
its own and the hosts' keys in known_hosts. The example's placeholders are refused by
``pinet lab check`` (a copied example must not pass), so a test of anything else takes this."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.fixture_paths import LAB


def _openssh_key() -> tuple[str, str]:
    """A fresh ed25519 key: (private key file text, public key line)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode()


def keyed_example(folder: Path, text: str | None = None) -> Path:
    """``lab/rpi-lab.yaml`` (or ``text``) in ``folder`` with a real key and known_hosts
    beside it under the example's own file names; returns the env file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for example in LAB.glob("*.example"):
        shutil.copy(example, folder)
    env = folder / "rpi-lab.yaml"
    env.write_text(text if text is not None else (LAB / "rpi-lab.yaml").read_text())
    private, _ = _openssh_key()
    (folder / "id_ed25519.example").write_text(private)
    data = yaml.safe_load(env.read_text())
    addresses = [t["resources"]["NetworkService"]["address"] for t in data["targets"].values()]
    (folder / "known_hosts.example").write_text("".join(f"{a} {_openssh_key()[1]}\n" for a in addresses))
    return env
