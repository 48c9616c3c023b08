"""Downloads against a real HTTP server on 127.0.0.1 serving archives made here."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import tarfile
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import local_http

from orchestrator.core.errors import UserError
from orchestrator.core.events import Event, Transfer
from orchestrator.runs.inputs import fetch_inputs
from orchestrator.runs.recipe import Recipe, ResolvedSystem, load_recipe


@dataclass
class Route:
    body: bytes
    status: int = 200
    #: Announce this many extra bytes, send the body, then close: a dropped connection.
    short_by: int = 0


@dataclass
class Server:
    base: str
    routes: dict[str, Route] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    state = Server(base="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits[self.path] += 1
            route = state.routes.get(self.path, Route(b"not found", status=404))
            self.send_response(route.status)
            self.send_header("Content-Length", str(len(route.body) + route.short_by))
            self.end_headers()
            self.wfile.write(route.body)
            if route.short_by:
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with local_http(Handler) as state.base:
        yield state


def make_zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def make_tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def zip_system(url: str, body: bytes, digest: str | None = None) -> ResolvedSystem:
    return Recipe.model_validate(
        {
            "name": "benchTEST",
            "description": "test",
            "default_steps": 10,
            "inputs": [{"url": url, "sha256": digest or sha(body), "kind": "zip"}],
            "tpr": {"method": "copy", "path": "benchTEST.tpr"},
        }
    ).resolve()


def leftovers(cache: Path) -> list[Path]:
    """Temporary files or directories: what an interrupted operation would leave."""
    return [p for p in cache.rglob("*") if p.name.endswith((".part", ".tmp"))]


def test_download_unpack_and_second_call_uses_cache(server: Server, tmp_path: Path) -> None:
    body = make_zip({"benchTEST/benchTEST.tpr": b"TPR" * 1000, "benchTEST/README": b"hi"})
    server.routes["/benchTEST.zip"] = Route(body)
    system = zip_system(server.url("/benchTEST.zip"), body)

    events: list[Event] = []
    first = fetch_inputs(system, tmp_path, emit=events.append)
    assert first == tmp_path / "systems" / "benchTEST"
    assert (first / "benchTEST.tpr").read_bytes() == b"TPR" * 1000  # single top dir stripped
    archive = tmp_path / "inputs" / f"{sha(body)[:12]}-benchTEST.zip"
    assert archive.read_bytes() == body
    assert archive.with_name(archive.name + ".verified").read_text().split()[0] == sha(body)
    progress = [e for e in events if isinstance(e, Transfer) and e.text == "benchTEST.zip"]
    assert progress and progress[-1].finished and progress[-1].done == len(body)

    second = fetch_inputs(system, tmp_path)
    assert second == first
    assert server.hits["/benchTEST.zip"] == 1
    assert leftovers(tmp_path) == []

    # An unpacked tree that was removed is rebuilt from the cached archive, not re-downloaded.
    import shutil

    shutil.rmtree(first)
    assert fetch_inputs(system, tmp_path) == first
    assert server.hits["/benchTEST.zip"] == 1


def test_tar_member_and_gunzip(server: Server, tmp_path: Path) -> None:
    top = "water-cut1.0_GMX50_bare"
    body = make_tgz(
        {
            f"{top}/0003/conf.gro.gz": gzip.compress(b"conf 3k\n"),
            f"{top}/0003/topol.top": b"top",
            f"{top}/0003/pme.mdp": b"pme",
            f"{top}/0003/rf.mdp": b"rf",
            f"{top}/0006/conf.gro": b"conf 6k\n",
        }
    )
    server.routes["/water.tar.gz"] = Route(body)
    recipe = Recipe.model_validate(
        {
            "name": "wat",
            "description": "test",
            "default_steps": 10,
            "sizes": {"kind": "choice", "choices": ["0003", "0006"], "default": "0003"},
            "variants": ["pme", "rf"],
            "default_variant": "pme",
            "inputs": [
                {
                    "url": server.url("/water.tar.gz"),
                    "sha256": sha(body),
                    "kind": "tar.gz",
                    "member": f"{top}/@size@",
                    "gunzip": True,
                }
            ],
            "tpr": {
                "method": "grompp",
                "mdp": "@variant@.mdp",
                "conf": "conf.gro",
                "top": "topol.top",
            },
        }
    )
    pme = fetch_inputs(recipe.resolve("3k"), tmp_path)
    rf = fetch_inputs(recipe.resolve("0003", "rf"), tmp_path)
    assert pme == rf == tmp_path / "systems" / "wat" / "0003"
    assert (pme / "conf.gro").read_bytes() == b"conf 3k\n"
    assert not (pme / "conf.gro.gz").exists()
    assert sorted(p.name for p in pme.iterdir()) == [
        ".unpacked",
        "conf.gro",
        "pme.mdp",
        "rf.mdp",
        "topol.top",
    ]
    # The other size needs grompp files it lacks: a clear error, nothing left behind.
    with pytest.raises(UserError, match=r"no pme\.mdp, topol\.top"):
        fetch_inputs(recipe.resolve("6k"), tmp_path)
    assert server.hits["/water.tar.gz"] == 1
    assert not (tmp_path / "systems" / "wat" / "0006").exists()
    assert leftovers(tmp_path) == []


def test_wrong_checksum(server: Server, tmp_path: Path) -> None:
    body = make_zip({"benchTEST.tpr": b"x"})
    server.routes["/benchTEST.zip"] = Route(body)
    system = zip_system(server.url("/benchTEST.zip"), body, digest="0" * 64)
    with pytest.raises(UserError) as err:
        fetch_inputs(system, tmp_path)
    assert "0" * 64 in err.value.message and sha(body) in err.value.message
    assert list((tmp_path / "inputs").iterdir()) == []
    assert not (tmp_path / "systems").exists()


def test_truncated_download(server: Server, tmp_path: Path) -> None:
    body = make_zip({"benchTEST.tpr": random.Random(1).randbytes(100_000)})  # incompressible
    assert len(body) > 100_000
    server.routes["/benchTEST.zip"] = Route(body[:5000], short_by=len(body) - 5000)
    system = zip_system(server.url("/benchTEST.zip"), body)
    with pytest.raises(UserError) as err:
        fetch_inputs(system, tmp_path)
    assert "benchTEST.zip" in err.value.message
    assert "nothing was kept" in err.value.message
    assert f"of {len(body)} bytes" in err.value.message
    assert list((tmp_path / "inputs").iterdir()) == []
    assert not (tmp_path / "systems").exists()


def test_corrupt_zip_with_matching_checksum(server: Server, tmp_path: Path) -> None:
    data = random.Random(2).randbytes(20_000)
    body = make_zip({"benchTEST.tpr": data})
    middle = body.index(data[10_000:10_100])
    corrupt = body[:middle] + b"\0" * 100 + body[middle + 100 :]  # bad CRC, directory intact
    server.routes["/benchTEST.zip"] = Route(corrupt)
    system = zip_system(server.url("/benchTEST.zip"), corrupt)
    with pytest.raises(UserError, match=r"cannot be unpacked as zip \(BadZipFile: Bad CRC"):
        fetch_inputs(system, tmp_path)
    assert list((tmp_path / "inputs").iterdir()) == []  # unusable: not kept
    assert list((tmp_path / "systems").iterdir()) == []
    assert leftovers(tmp_path) == []


def test_not_a_zip_at_all(server: Server, tmp_path: Path) -> None:
    body = b"<html>moved</html>"
    server.routes["/benchTEST.zip"] = Route(body)
    with pytest.raises(UserError, match="cannot be unpacked"):
        fetch_inputs(zip_system(server.url("/benchTEST.zip"), body), tmp_path)
    assert leftovers(tmp_path) == []


def test_path_traversal_is_refused(server: Server, tmp_path: Path) -> None:
    body = make_zip({"benchTEST.tpr": b"ok", "../../evil.txt": b"pwned"})
    server.routes["/benchTEST.zip"] = Route(body)
    cache = tmp_path / "cache"
    with pytest.raises(UserError, match="leaves the unpack directory"):
        fetch_inputs(zip_system(server.url("/benchTEST.zip"), body), cache)
    assert not list(tmp_path.rglob("evil.txt"))
    assert leftovers(cache) == []


def test_tar_traversal_and_links(server: Server, tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        link = tarfile.TarInfo("d/link.tpr")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
        data = tarfile.TarInfo("d/benchTEST.tpr")
        data.size = 2
        tf.addfile(data, io.BytesIO(b"ok"))
    safe = buf.getvalue()
    system = Recipe.model_validate(
        {
            "name": "benchTEST",
            "description": "t",
            "default_steps": 1,
            "inputs": [{"url": server.url("/t.tar.gz"), "sha256": sha(safe), "kind": "tar.gz"}],
            "tpr": {"method": "copy", "path": "benchTEST.tpr"},
        }
    ).resolve()
    server.routes["/t.tar.gz"] = Route(safe)
    unpacked = fetch_inputs(system, tmp_path / "a")
    assert unpacked is not None
    assert sorted(p.name for p in unpacked.iterdir()) == [".unpacked", "benchTEST.tpr"]

    evil = make_tgz({"benchTEST.tpr": b"ok", "/abs/evil.txt": b"x"})
    server.routes["/t.tar.gz"] = Route(evil)
    spec = system.inputs[0].model_copy(update={"sha256": sha(evil)})
    with pytest.raises(UserError, match="unsafe to unpack"):
        fetch_inputs(system.model_copy(update={"inputs": [spec]}), tmp_path / "b")
    assert not list(tmp_path.rglob("evil.txt"))
    assert leftovers(tmp_path) == []


def test_stale_temporary_files_are_swept(server: Server, tmp_path: Path) -> None:
    import os

    body = make_zip({"benchTEST.tpr": b"x"})
    server.routes["/benchTEST.zip"] = Route(body)
    system = zip_system(server.url("/benchTEST.zip"), body)
    store = tmp_path / "inputs"
    store.mkdir()
    old = store / f".{system.inputs[0].cache_name}.abc.part"
    fresh = store / f".{system.inputs[0].cache_name}.def.part"
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(old, (1, 1))
    fetch_inputs(system, tmp_path)
    assert not old.exists() and fresh.exists()  # a fresh one may be a concurrent download


def test_http_error(server: Server, tmp_path: Path) -> None:
    system = zip_system(server.url("/missing.zip"), b"whatever")
    with pytest.raises(UserError, match=r"HTTP 404.*--inputs-dir"):
        fetch_inputs(system, tmp_path)
    assert list((tmp_path / "inputs").iterdir()) == []


def test_nothing_listening(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    system = zip_system(f"http://127.0.0.1:{port}/benchTEST.zip", b"x")
    with pytest.raises(UserError, match="ConnectionError"):
        fetch_inputs(system, tmp_path)
    assert list((tmp_path / "inputs").iterdir()) == []


def test_inputs_dir_hit_and_miss(server: Server, tmp_path: Path) -> None:
    body = make_zip({"benchTEST.tpr": b"offline"})
    system = zip_system(server.url("/benchTEST.zip"), body)
    offline = tmp_path / "offline"
    offline.mkdir()

    with pytest.raises(UserError) as err:
        fetch_inputs(system, tmp_path / "cache", inputs_dir=offline)
    assert "benchTEST.zip" in err.value.message and sha(body) in err.value.message
    assert str(offline) in err.value.message

    (offline / "benchTEST.zip").write_bytes(body)
    unpacked = fetch_inputs(system, tmp_path / "cache", inputs_dir=offline)
    assert unpacked is not None
    assert (unpacked / "benchTEST.tpr").read_bytes() == b"offline"
    assert server.hits == Counter()  # never touched the network
    # Cached now: a later call needs neither the directory nor the network.
    assert fetch_inputs(system, tmp_path / "cache") == unpacked
    assert server.hits == Counter()


def test_inputs_dir_wrong_file(tmp_path: Path) -> None:
    body = make_zip({"benchTEST.tpr": b"good"})
    system = zip_system("https://example.invalid/benchTEST.zip", body)
    offline = tmp_path / "offline"
    offline.mkdir()
    (offline / "benchTEST.zip").write_bytes(make_zip({"benchTEST.tpr": b"other"}))
    with pytest.raises(UserError, match="has sha256"):
        fetch_inputs(system, tmp_path / "cache", inputs_dir=offline)
    assert list((tmp_path / "cache" / "inputs").iterdir()) == []


def test_missing_tpr_in_archive(server: Server, tmp_path: Path) -> None:
    body = make_zip({"a/other.tpr": b"x", "b/x": b"y"})
    server.routes["/benchTEST.zip"] = Route(body)
    with pytest.raises(UserError, match=r"no benchTEST\.tpr.*recipes/benchTEST\.toml"):
        fetch_inputs(zip_system(server.url("/benchTEST.zip"), body), tmp_path)
    assert list((tmp_path / "systems").iterdir()) == []


def test_generated_system_needs_no_inputs(tmp_path: Path) -> None:
    assert fetch_inputs(load_recipe("water:3k"), tmp_path) is None
    assert list(tmp_path.iterdir()) == []
