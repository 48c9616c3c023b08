"""A git repository served over HTTP with basic auth: `git http-backend` (git's own CGI
program, as a real git server runs it) behind a small threaded HTTP server, reachable
from containers on the engine's bridge. Tests fetch from it with a token in the URL."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Served:
    """Where the repository is (`url` holds the credentials) and what the server saw."""

    url: str
    authorized: list[tuple[str, str]] = field(default_factory=list)  # (client, path)
    refused: list[str] = field(default_factory=list)


@contextlib.contextmanager
def serve_git(root: Path, name: str, host: str, user: str, token: str) -> Iterator[Served]:
    """Serve the bare repository `root/name` at http://user:token@host:port/name."""
    expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
    served = Served("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            if self.headers.get("Authorization") != expected:
                served.refused.append(self.path)
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="llvm"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            served.authorized.append((self.client_address[0], self.path))
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                "REQUEST_METHOD": self.command, "REMOTE_USER": user,
                "REMOTE_ADDR": self.client_address[0],
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                # A shallow fetch names its commit: allowed, as forges allow it.
                "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "uploadpack.allowAnySHA1InWant",
                "GIT_CONFIG_VALUE_0": "true",
            }  # fmt: skip
            done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if ": " in line]
            status = next((int(v.split()[0]) for k, v in headers if k == "Status"), 200)
            self.send_response(status)
            for key, value in headers:
                if key != "Status":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    served.url = f"http://{user}:{token}@{host}:{httpd.server_address[1]}/{name}"
    try:
        yield served
    finally:
        httpd.shutdown()
        httpd.server_close()
