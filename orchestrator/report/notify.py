"""Webhook notifications on run start, completion and failure.

Two payload formats (setting `webhook_format`):

* `discord` (default; also what Slack-/Mattermost-compatible "Discord" endpoints take):
  `{"content": "<text, at most 2000 characters>", "allowed_mentions": {"parse": []}}`
  (log text can contain `@everyone`; no mention is ever resolved).
* `json`: `{"event": "start"|"done"|"failed"|"verdict"|"message", "text": "...", "data":
  {...}}`; a bench's `verdict` data has its `headline` and `verdict` (`faster`, `slower`,
  `no change`, `too busy` when the host was too busy to judge, or `nothing measured` when
  no kernel changed).

A notification never breaks a run: a webhook that refuses, answers 4xx/5xx or times out
(5 s) gives one warning line in the log and `post` returns False. The webhook URL is a
secret (it embeds the token): it appears in no log line, exception, result or image. Only
the exception's type name is logged (requests' messages contain the URL), and urllib3's
own debug lines that would name the URL are scrubbed while this module posts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

import requests
from pydantic import SecretStr

from orchestrator.core.settings import Settings

log = logging.getLogger(__name__)

TIMEOUT = 5.0
DISCORD_LIMIT = 2000
#: Characters of log tail kept in a generic JSON payload.
JSON_TAIL_LIMIT = 8000
Format = Literal["discord", "json"]


class _Scrub(logging.Filter):
    """Replace registered secrets in records of the HTTP libraries' loggers."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        text = record.getMessage()
        if any(secret in text for secret in self.secrets):
            for secret in self.secrets:
                text = text.replace(secret, "<webhook>")
            record.msg, record.args = text, None
        return True


_SCRUB = _Scrub()
for _name in (
    "requests",
    "urllib3",
    "urllib3.connectionpool",
    "urllib3.poolmanager",
    "urllib3.response",
    "urllib3.util.retry",
):
    logging.getLogger(_name).addFilter(_SCRUB)


def _secret_parts(url: str) -> set[str]:
    """The URL and the pieces of it that a library might log on their own."""
    parts = {url}
    scheme_rest = url.split("://", 1)[-1]
    path = scheme_rest.partition("/")[2]
    if path:
        parts.add("/" + path)
        parts.add("/" + path.partition("?")[0])
    return {part for part in parts if len(part) > 1}


class Notifier:
    """Posts run events to one webhook; without a URL every method is a no-op."""

    def __init__(
        self,
        webhook_url: SecretStr | str | None = None,
        webhook_format: Format = "discord",
        timeout: float = TIMEOUT,
    ) -> None:
        if isinstance(webhook_url, str):
            webhook_url = SecretStr(webhook_url)
        self._url = webhook_url if webhook_url and webhook_url.get_secret_value() else None
        self.format: Format = webhook_format
        self.timeout = timeout
        if self._url is not None:
            _SCRUB.secrets |= _secret_parts(self._url.get_secret_value())

    @classmethod
    def from_settings(cls, settings: Settings) -> Notifier:
        """From `orchestrator.settings.Settings` (`webhook_url`, `webhook_format`)."""
        return cls(settings.webhook_url, settings.webhook_format)

    @property
    def enabled(self) -> bool:
        return self._url is not None

    def __repr__(self) -> str:
        state = f"set, {self.format}" if self._url else "unset"
        return f"Notifier(webhook_url=<{state}>)"

    # Events.

    def start(self, run_id: str, details: Mapping[str, Any] | None = None) -> bool:
        details = dict(details or {})
        text = f"▶️ {run_id} started" + _summary(details)
        return self.post(text, {"run_id": run_id, **details}, event="start")

    def done(
        self, run_id: str, ns_per_day: float | None, details: Mapping[str, Any] | None = None
    ) -> bool:
        details = dict(details or {})
        speed = f"{ns_per_day:.3f} ns/day" if ns_per_day is not None else "no ns/day reported"
        text = f"✅ {run_id} finished: {speed}" + _summary(details)
        data = {"run_id": run_id, "ns_per_day": ns_per_day, **details}
        return self.post(text, data, event="done")

    def failed(
        self, run_id: str, log_tail: str = "", details: Mapping[str, Any] | None = None
    ) -> bool:
        details = dict(details or {})
        head = f"❌ {run_id} failed" + _summary(details)
        tail = log_tail.rstrip()
        if self.format == "discord" and tail:
            room = max(DISCORD_LIMIT - len(head) - len("\n```\n\n```") - 4, 200)
            fenced = _tail(tail.replace("```", "'''"), room)
            text = f"{head}\n```\n{fenced}\n```"
        else:
            text = head
        data = {"run_id": run_id, "log_tail": _tail(tail, JSON_TAIL_LIMIT), **details}
        return self.post(text, data, event="failed")

    def verdict(
        self, headline: str, details: Mapping[str, Any] | None = None, text: str | None = None
    ) -> bool:
        """A bench's outcome: its verdict, or `nothing measured` when no kernel changed."""
        data = {"headline": headline, **dict(details or {})}
        return self.post(text or headline, data, event="verdict")

    # Transport.

    def payload(
        self, text: str, data: Mapping[str, Any] | None = None, event: str = "message"
    ) -> dict[str, Any]:
        """The JSON body `post` sends for this notifier's format."""
        if self.format == "discord":
            if len(text) > DISCORD_LIMIT:
                text = text[: DISCORD_LIMIT - 1] + "…"
            return {"content": text, "allowed_mentions": {"parse": []}}
        return {"event": event, "text": text, "data": dict(data or {})}

    def post(
        self, text: str, data: Mapping[str, Any] | None = None, event: str = "message"
    ) -> bool:
        """Send one notification; True when the webhook accepted it (2xx). Never raises."""
        if self._url is None:
            return False
        try:
            body = json.dumps(self.payload(text, data, event), default=str).encode()
            resp = requests.post(
                self._url.get_secret_value(),
                data=body,
                headers={"Content-Type": "application/json"},
                timeout=self.timeout,
                allow_redirects=False,
            )
            resp.close()
        except Exception as exc:  # a notification must never break a run
            log.warning("Webhook notification (%s) not sent: %s.", event, type(exc).__name__)
            return False
        if not 200 <= resp.status_code < 300:
            log.warning("Webhook notification (%s) refused: HTTP %s.", event, resp.status_code)
            return False
        return True


def _summary(details: Mapping[str, Any]) -> str:
    shown = [f"{key}={value}" for key, value in details.items() if value not in (None, "")]
    return f" ({', '.join(shown)})" if shown else ""


def _tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, cut at a line start, marked when cut."""
    if len(text) <= limit:
        return text
    cut = text[len(text) - limit + 2 :]
    newline = cut.find("\n")
    if 0 <= newline < len(cut) // 2:
        cut = cut[newline + 1 :]
    return "…\n" + cut
