"""URLs as they may be shown or stored: no user-info, no password in the query string.

A URL's `user:token@` and a database URL's `?password=` are secrets; what is printed,
logged, labelled or written to a job script is the URL without them.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: `scheme://user-info@` at the start of a URL.
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.IGNORECASE)
#: Query parameters that carry a secret (libpq's `password`, `sslpassword`, tokens).
_SECRET_KEYS = re.compile(r"pass|secret|token|key", re.IGNORECASE)


def without_userinfo(url: str) -> str:
    """`url` without credentials (`https://user:token@host/...` → `https://host/...`)."""
    return _USERINFO.sub(r"\1", url)


def has_userinfo(url: str) -> bool:
    return without_userinfo(url) != url


def hide_query_secrets(url: str) -> str:
    """`url` with the values of password-like query parameters shown as `***`."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    shown = [(k, "***" if _SECRET_KEYS.search(k) else v) for k, v in pairs]
    return urlunsplit(parts._replace(query=urlencode(shown, safe="*/:")))
