"""Text a person reads is shown, never obeyed: every character a terminal, a pager or an XML parser would act on
instead of showing is written as a visible escape. Pure.

What a CLI prints (its messages, its reason for asking, its errors, its version line) and what a model says reach
runner's own output: ``runner exec``'s summary, ``runner show``, the reports, the listings. Written as they came, an
``ESC [2J`` clears the reader's screen, an OSC 8 sequence turns text into a link to anywhere, a carriage return or a
backspace overwrites what the line said before it, a BEL rings, and a right-to-left override (U+202E) shows a line
in another order than it holds (the "Trojan Source" trick). So each such character becomes its Python escape
(``\\x1b``, ``\\u202e``, ``\\U000e0001``), whether the text goes to a terminal, a pipe or a file: a pipe is read on a
terminal in the end (``less -R``, ``cat report.md``, a CI log), and a file that holds no control character is also
well-formed XML (:func:`runner.matrix.report.junit`).

Made visible (:func:`hidden`): the control characters (Unicode category Cc: C0, DEL and the 8-bit C1 set, whose
U+009B is a CSI of its own) except the tab and the line feed, which only lay text out; the format characters (Cf:
the bidirectional embeddings, overrides, isolates and marks, zero-width spaces, the soft hyphen, the BOM, the tag
characters) except the zero-width joiner and non-joiner, which join the characters of emoji and scripts and move
nothing; the line and paragraph separators (Zl, Zp), which some readers treat as line breaks; the surrogates (Cs: a
lone one cannot even be encoded as UTF-8, so printing it would end the command); and the noncharacters (U+FFFE,
U+FFFF and their like in every plane), which XML forbids. Everything else, non-ASCII letters, symbols and emoji
included, is left as it is, and so is the backslash: the escapes are read, not parsed back.

The result holds no hidden character, so the function is idempotent, and every character it leaves is one XML 1.0
allows. :func:`visible_json` does the same for JSON text, with JSON's own escapes, so the document still parses
to the same values.
"""

from __future__ import annotations

import unicodedata

__all__ = ["hidden", "visible", "visible_json"]

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
KEPT = frozenset({"\t", "\n", "\u200c", "\u200d"})  # lay text out, or join characters: nothing to hide


def hidden(char: str) -> bool:
    """Whether a reader would act on ``char`` (or fail on it) instead of showing it."""
    if char in KEPT:
        return False
    point = ord(char)
    if 0xFDD0 <= point <= 0xFDEF or (point & 0xFFFE) == 0xFFFE:  # the noncharacters
        return True
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def _escape(char: str) -> str:
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def visible(text: str) -> str:
    """``text`` with every :func:`hidden` character written as its escape (``\\x1b``, ``\\u202e``): shown, never
    obeyed. Tabs and line feeds stay, for the printer to lay out."""
    if text.isprintable():  # the common case: no control, format or separator character at all
        return text
    return "".join(_escape(c) if hidden(c) else c for c in text)


def _json_escape(char: str) -> str:
    point = ord(char)
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def visible_json(document: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with every :func:`hidden` character written as a JSON
    escape: the same document for a parser, nothing a terminal acts on for a reader. JSON already escapes the C0
    controls inside strings, and holds a hidden character nowhere else, so only string contents change."""
    if document.isprintable():
        return document
    return "".join(_json_escape(c) if hidden(c) else c for c in document)
