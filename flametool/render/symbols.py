"""The ASCII spelling of the symbols flametool prints ('+-' for '±', 'x' for '×'), for an output that cannot take
UTF-8 (PYTHONIOENCODING=ascii, a C locale): the terminal's tables spell them so before they are laid out
(terminal.AsciiSymbols), and standard output's error handler for whatever else is written (commands/streams.py).
No imports: the command line loads it before --help."""

from __future__ import annotations

ASCII = {"×": "x", "µ": "u", "−": "-", "–": "-", "—": "-", "±": "+-", "→": "->", "←": "<-", "…": "...",
         "≈": "~", "≤": "<=", "≥": ">=", "·": ".", "Δ": "delta ", "✓": "ok", "✗": "x", "‖": "||", "\u00a0": " "}


def in_ascii(text: str) -> str:
    """`text` with each of flametool's symbols spelled in ASCII; any other character as it is."""
    return "".join(ASCII.get(c, c) for c in text) if any(c in ASCII for c in text) else text
