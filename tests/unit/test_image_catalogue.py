"""The image catalogue: validation naming the key, what each board can take, local files."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
import yaml

from pytest_pinet.cli.main import main
from pytest_pinet.errors import ConfigError, LabFault
from pytest_pinet.lab import image_catalogue
from pytest_pinet.lab.image_catalogue import catalogue_from_data, deliveries_of, local_file
from tests.fixture_paths import EXAMPLE_ENV

from ..lab_example import keyed_example

SOURCE = Path("/lab/env.yaml")


def _one(**fields):
    entry = {"name": "a", "os": {"id": "debian", "version": "12"}, "kernel": "6.1.*", "delivery": "sd-card"}
    entry.update(fields)
    return entry


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "a"}, r"pinet.images\[0\] \(a\): missing \['delivery', 'kernel', 'os'\]"),
        (_one(delivery="floppy"), r"pinet.images\[0\] \(a\).delivery is 'floppy'"),
        (_one(os="debian"), r"pinet.images\[0\] \(a\).os must be a mapping"),
        (_one(), r"an sd-card image needs a path or a url"),
        (_one(url="https://images.invalid/x.img"), r"url needs a sha256"),
        (_one(path="x.img", sha256="beef"), r"sha256 is not 64 hex digits"),
        (_one(path="x.img", write="cp"), r"write is 'cp'"),
        (_one(delivery="netboot"), r"a netboot image needs netboot"),
        (_one(path="x.img", colour="red"), r"unknown keys \['colour'\]"),
    ],
)
def test_a_bad_catalogue_entry_is_named_with_its_key(entry, message):
    with pytest.raises(ConfigError, match=message):
        catalogue_from_data([entry], {}, [], SOURCE)


def test_names_are_unique_and_paths_relative_to_the_env_file():
    with pytest.raises(ConfigError, match="image names must be unique"):
        catalogue_from_data([_one(path="x.img"), _one(path="y.img")], {}, [], SOURCE)
    (image,) = catalogue_from_data([_one(path="images/x.img", bmap="/abs/x.bmap")], {}, [], SOURCE).images
    assert image.path == Path("/lab/images/x.img") and image.bmap == Path("/abs/x.bmap")
    assert image.kernel_matches("6.1.0-56-amd64") and not image.kernel_matches("6.12.1")
    assert image.identity == "name:a"


def test_a_board_takes_what_its_target_drivers_deliver():
    mux: dict[str, object] = {"drivers": {"USBSDMuxDriver": {}, "USBStorageDriver": {}}}
    assert deliveries_of(mux) == {"sd-card"}
    assert deliveries_of({"drivers": {"USBSDMuxDriver": {}}}) == set()  # a mux with no writer
    tftp = {"resources": {"TFTPProvider": {}}, "drivers": [{"TFTPProviderDriver": {}}]}
    assert deliveries_of(tftp) == {"netboot"}
    catalogue = catalogue_from_data(
        [_one(path="x.img"), _one(name="b", delivery="netboot", netboot={"kernel": "k"})],
        {"pi4": mux, "pi5": tftp},
        ["pi4", "pi5"],
        SOURCE,
    )
    a, b = catalogue.images
    assert catalogue.can_take("pi4", a) and not catalogue.can_take("pi4", b)
    assert catalogue.can_take("pi5", b) and not catalogue.can_take("pi5", a)
    with pytest.raises(ConfigError, match=r"no image 'c' in the catalogue.*images: a, b"):
        catalogue.get("c", str(SOURCE))


def test_lab_check_lists_the_example_catalogue_and_what_each_board_takes(capsys, tmp_path):
    assert main(["lab", "check", str(keyed_example(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "image rpios-bookworm-6.6" in out and "sd-card" in out
    assert "board pi4" in out and "takes rpios-bookworm-6.6" in out


def test_a_local_image_with_the_wrong_sha256_is_refused(tmp_path):
    path = tmp_path / "x.img"
    path.write_bytes(b"image bytes")
    (good,) = catalogue_from_data(
        [_one(path=str(path), sha256=hashlib.sha256(b"image bytes").hexdigest())], {}, [], SOURCE
    ).images
    assert local_file(good) == path
    (bad,) = catalogue_from_data([_one(path=str(path), sha256="0" * 64)], {}, [], SOURCE).images
    with pytest.raises(LabFault, match=r"has sha256 .* the catalogue says 0000"):
        local_file(bad)


def test_a_url_image_is_downloaded_once_and_checked(tmp_path, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    (served / "x.img").write_bytes(b"downloaded image")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(image_catalogue, "cache_dir", lambda: tmp_path / "cache")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/x.img"
        digest = hashlib.sha256(b"downloaded image").hexdigest()
        (image,) = catalogue_from_data([_one(url=url, sha256=digest)], {}, [], SOURCE).images
        first = local_file(image)
        assert first.read_bytes() == b"downloaded image" and first.parent.name == digest
        (served / "x.img").unlink()
        assert local_file(image) == first  # cached by its hash: not fetched again
        (wrong,) = catalogue_from_data(
            [_one(name="w", url=url + "?", sha256="1" * 64)], {}, [], SOURCE
        ).images
        (served / "x.img").write_bytes(b"other bytes")
        with pytest.raises(LabFault, match="the catalogue says 1111"):
            local_file(wrong)
    finally:
        server.shutdown()


def test_the_example_env_declares_a_valid_catalogue():
    data = yaml.safe_load(EXAMPLE_ENV.read_text())
    assert data["pinet"]["images"], "lab/rpi-lab.yaml shows a catalogue"
