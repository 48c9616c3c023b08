"""Webhooks against a real HTTP server on 127.0.0.1 that records what it receives."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from conftest import local_http
from pydantic import SecretStr

from orchestrator.core.settings import load_settings
from orchestrator.report.notify import DISCORD_LIMIT, Notifier

TOKEN = "s3cr3t-T0KEN-9f8e7d6c"


@dataclass
class Hook:
    base: str
    status: int = 204
    delay: float = 0.0
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.base}/api/webhooks/4242/{TOKEN}"


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hook]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    state = Hook(base="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.received.append((self.path, json.loads(body)))
            time.sleep(state.delay)
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with local_http(Handler) as state.base:
        yield state


def assert_no_secret(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = capsys.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    for text in (out, err, logged):
        assert TOKEN not in text
        assert "/api/webhooks" not in text


def test_discord_payloads(hook: Hook) -> None:
    notifier = Notifier(SecretStr(hook.url), "discord")
    assert notifier.start("run-1", {"system": "water:6k:pme", "build": "stable"})
    assert notifier.done("run-1", 43.7, {"system": "water:6k:pme"})
    log = "\n".join(f"line {i} @everyone" for i in range(2000)) + "\nFatal error: LINCS"
    assert notifier.failed("run-1", log)

    assert [path for path, _ in hook.received] == [f"/api/webhooks/4242/{TOKEN}"] * 3
    start, done, failed = (payload for _, payload in hook.received)
    assert set(start) == {"content", "allowed_mentions"}
    assert start["allowed_mentions"] == {"parse": []}
    assert "run-1" in start["content"] and "system=water:6k:pme" in start["content"]
    assert "43.700 ns/day" in done["content"]
    assert len(failed["content"]) <= DISCORD_LIMIT
    assert failed["content"].startswith("❌ run-1 failed")
    assert "Fatal error: LINCS" in failed["content"]
    assert "line 0 @everyone\n" not in failed["content"]
    assert failed["content"].endswith("```")


def test_discord_truncates_any_text(hook: Hook) -> None:
    assert Notifier(hook.url).post("x" * 5000)
    ((_, payload),) = hook.received
    assert len(payload["content"]) == DISCORD_LIMIT


def test_json_payloads(hook: Hook) -> None:
    notifier = Notifier(hook.url, "json")
    assert notifier.start("run-2", {"system": "benchMEM"})
    assert notifier.done("run-2", 12.5, {"system": "benchMEM"})
    assert notifier.failed("run-2", "a\nb\nsegfault")
    assert notifier.post("hello", {"k": 1})
    payloads = [payload for _, payload in hook.received]
    for payload in payloads:
        assert set(payload) == {"event", "text", "data"}
    assert [p["event"] for p in payloads] == ["start", "done", "failed", "message"]
    assert payloads[0]["data"] == {"run_id": "run-2", "system": "benchMEM"}
    assert payloads[1]["data"]["ns_per_day"] == 12.5
    assert payloads[2]["data"]["log_tail"].endswith("segfault")
    assert payloads[3] == {"event": "message", "text": "hello", "data": {"k": 1}}


def test_a_bench_outcome_is_a_verdict_event_nothing_measured_included(hook: Hook) -> None:
    """Issue 28: a bench that measured nothing (no kernel changed) reaches the webhook like
    one with a verdict: event `verdict`, its headline and its verdict word."""
    line = "dev-x vs stable: no kernel changed: nothing to measure"
    assert Notifier(hook.url, "json").verdict(line, {"verdict": "nothing measured"})
    assert Notifier(hook.url, "json").verdict("LLVM x: 9 ns/day", {"verdict": "slower"}, "long")
    assert Notifier(hook.url, "discord").verdict(line, {"verdict": "nothing measured"})
    nothing, slower, discord = (payload for _, payload in hook.received)
    assert nothing == {
        "event": "verdict", "text": line,
        "data": {"headline": line, "verdict": "nothing measured"},
    }  # fmt: skip
    assert slower["text"] == "long" and slower["data"]["headline"] == "LLVM x: 9 ns/day"
    assert discord["content"] == line


def test_from_settings(hook: Hook) -> None:
    settings = load_settings(webhook_url=hook.url, webhook_format="json")
    notifier = Notifier.from_settings(settings)
    assert notifier.enabled and notifier.format == "json"
    assert TOKEN not in repr(notifier)
    assert notifier.post("x")


def test_server_error_returns_false(
    hook: Hook, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    hook.status = 500
    caplog.set_level(logging.DEBUG)  # even urllib3's debug lines must not name the URL
    assert Notifier(hook.url).done("run-3", 1.0) is False
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "HTTP 500" in warnings[0].getMessage()
    assert_no_secret(caplog, capsys)


def test_client_error_returns_false(hook: Hook, caplog: pytest.LogCaptureFixture) -> None:
    hook.status = 404
    assert Notifier(hook.url, "json").start("run-4") is False
    assert "HTTP 404" in caplog.text


def test_nothing_listening(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    caplog.set_level(logging.DEBUG)
    notifier = Notifier(f"http://127.0.0.1:{port}/api/webhooks/4242/{TOKEN}")
    assert notifier.failed("run-5", "boom") is False
    assert "ConnectionError" in caplog.text
    assert_no_secret(caplog, capsys)


def test_timeout(
    hook: Hook, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    hook.delay = 1.0
    started = time.monotonic()
    assert Notifier(hook.url, timeout=0.2).start("run-6") is False
    assert time.monotonic() - started < 1.0
    assert "Timeout" in caplog.text
    assert_no_secret(caplog, capsys)


def test_bad_url_does_not_leak(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert Notifier(f"htp:/nonsense/api/webhooks/{TOKEN}").post("x") is False
    assert caplog.records
    assert_no_secret(caplog, capsys)


def test_no_url_is_a_noop(hook: Hook) -> None:
    for notifier in (Notifier(None), Notifier(""), Notifier(SecretStr(""))):
        assert not notifier.enabled
        assert notifier.start("r") is False
        assert notifier.done("r", 1.0) is False
        assert notifier.failed("r", "tail") is False
    assert hook.received == []
    assert repr(Notifier(None)) == "Notifier(webhook_url=<unset>)"


def test_console_posts_run_events(hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs only emit events; the CLI's console turns them into start/done/failed posts."""
    import io

    from orchestrator.cli.console import Console
    from orchestrator.runs.hostinfo import HostInfo
    from orchestrator.runs.runner import RunEnded, RunStarted
    from orchestrator.store.records import ImageRef, RunResult

    monkeypatch.setenv("ORCH_WEBHOOK_URL", hook.url)
    monkeypatch.setenv("ORCH_WEBHOOK_FORMAT", "json")
    out = io.StringIO()
    console = Console(load_settings(), out)
    result = RunResult(
        run_id="stable__water__t", build="stable", system="water:3k:pme", tag="t",
        platform="cpu", timestamp="2026-11-23T00:00:00+00:00",
        image=ImageRef(tag="gromacs:stable", id="sha256:0"),
        host=HostInfo(hostname="h", kernel="k"), command=["gmx", "mdrun"],
    )  # fmt: skip
    console(RunStarted("started", result))
    console(RunEnded("ended", result, "Fatal error: LINCS"))
    done = result.model_copy(update={"finished": True, "ns_per_day": 120.5})
    console(RunEnded("ended", done))
    events = [(body["event"], body["data"]) for _, body in hook.received]
    assert [event for event, _ in events] == ["start", "failed", "done"]
    assert events[0][1]["system"] == "water:3k:pme"
    assert events[1][1]["log_tail"] == "Fatal error: LINCS"
    assert events[2][1]["ns_per_day"] == 120.5
    assert out.getvalue() == ""  # run events go to the webhook, not the terminal
