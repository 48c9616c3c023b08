"""Plain text where the output cannot show every character (`PYTHONIOENCODING=ascii`, an
old `LANG=C`, a Windows code page).

Reports speak in markers (🚀 🐢 ⚠ •) and typography (Δ, –, …, ±, µ). Where stdout or
stderr cannot encode one, a codec error handler writes a stand-in instead of raising
`UnicodeEncodeError` mid-report: markers as words (`[slower]` says what 🐢 said), other
characters by their compatibility decomposition (`²` → `2`, `é` → `e`), else `?`.
Streams that can encode them (UTF-8) are left alone.
"""

from __future__ import annotations

import codecs
import io
import unicodedata

#: What each character the tool prints becomes where it cannot be shown.
PLAIN = {
    "🚀": "[faster]", "🐢": "[slower]", "⚠": "[!]", "•": "-", "✅": "[ok]", "❌": "[x]",
    "Δ": "d", "Σ": "sum", "µ": "u", "±": "+/-", "×": "x", "·": ".", "§": "S",
    "–": "-", "—": "--", "−": "-", "…": "...", "→": "->", "↔": "<->",
    "≥": ">=", "≤": "<=", "≈": "~", "▲": "^", "▼": "v", "▶": ">", "\ufe0f": "",
}  # fmt: skip
HANDLER = "gmxbench-plain"
#: A stream that cannot encode these gets the handler.
PROBE = "🚀🐢⚠•Δ–…"


def _stand_in(char: str) -> str:
    if char in PLAIN:
        return PLAIN[char]
    folded = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    return folded or "?"


def _plain(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(map(_stand_in, exc.object[exc.start : exc.end])), exc.end


codecs.register_error(HANDLER, _plain)


def plain_where_needed(*streams: object) -> None:
    """Give each text stream that cannot encode the markers the plain stand-ins."""
    for stream in streams:
        if not isinstance(stream, io.TextIOWrapper):
            continue
        try:
            PROBE.encode(stream.encoding)
        except UnicodeEncodeError:
            stream.reconfigure(errors=HANDLER)
