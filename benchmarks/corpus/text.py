"""Text helpers: reading files, cleaning documents, grouping pieces, and HTML to plain text."""

from __future__ import annotations

import gzip
import hashlib
import html.parser
import os
import re
from collections.abc import Callable, Iterable

EOT = "<|endoftext|>"


def read_text(path: str) -> str:
    """A file's text, gunzipped if it is gzip; UTF-8, or Latin-1 when it is not valid UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except Exception:
            pass  # not gzip after all: the bytes as they are
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def clean(doc: str) -> str:
    """No separators, NULs or CRs; no blanks at line ends; at most two blank lines in a row;
    no blank lines around."""
    doc = doc.replace(EOT, "").replace("\x00", "").replace("\r\n", "\n")
    doc = re.sub(r"[ \t]+\n", "\n", doc)
    doc = re.sub(r"\n{4,}", "\n\n\n", doc)
    return doc.strip("\n")


def walk(top: str, keep: Callable[[str], object]) -> list[str]:
    """Paths of the files under `top` that `keep(path)` accepts, sorted folder by folder.
    Symbolic links are neither followed nor listed; a missing `top` has no files."""
    found = []
    for folder, subdirs, names in os.walk(top):
        subdirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not os.path.islink(path) and keep(path):
                found.append(path)
    return found


def group(pieces: Iterable[str], target: int, sep: str) -> list[str]:
    """Consecutive pieces joined by `sep` into documents of at least `target` characters
    (not counting the separators); the last one may be shorter."""
    docs: list[str] = []
    run: list[str] = []
    chars = 0
    for piece in pieces:
        run.append(piece)
        chars += len(piece)
        if chars >= target:
            docs.append(sep.join(run))
            run, chars = [], 0
    if run:
        docs.append(sep.join(run))
    return docs


def unique(docs: Iterable[str], seen: set[bytes] | None = None) -> list[str]:
    """`docs` less those whose MD5 is in `seen` or came earlier; adds the kept ones' to `seen`."""
    seen = set() if seen is None else seen
    kept = []
    for doc in docs:
        digest = hashlib.md5(doc.encode()).digest()
        if digest not in seen:
            seen.add(digest)
            kept.append(doc)
    return kept


# --- HTML -------------------------------------------------------------------------------------

#: Elements whose content is never text.
HIDDEN = {"script", "style", "head", "nav", "noscript", "svg", "form", "button", "select"}
HIDDEN |= {"header", "footer", "template", "iframe"}
#: Page furniture: an element with one of these among the words of its id and class is left out
#: (unless it is one of ALWAYS_SHOWN).
FURNITURE = set(
    """sidebar menu-bar navheader navfooter navigation breadcrumb breadcrumbs search
    search-wrapper searchbox sub-nav top-nav bottom-nav nav-padding footer header headerlink
    mobile-topbar sidebar-elems out-of-band rightside src-link skip-nav lang-menu ribbon
    toc-backref sidebar-scrollbox nav-wrapper nav-chapters mobile-nav-chapters menu-title
    right-buttons left-buttons sphinxsidebar related""".split()
)
ALWAYS_SHOWN = {"html", "body", "main", "article"}
#: Elements that begin and end a line.
BLOCKS = set(
    """p div br li ul ol h1 h2 h3 h4 h5 h6 tr table pre section article dt dd dl blockquote hr
    title main aside figure figcaption details summary td th""".split()
)
#: Elements without content or end tag.
EMPTY = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "param"}
EMPTY |= {"source", "track", "wbr"}


class TextOfHtml(html.parser.HTMLParser):
    """The readable text of a page: blocks on lines of their own, list items as `* `, table
    cells after a space, whitespace outside <pre> collapsed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.open: list[tuple[str, bool]] = []  # (tag, hidden) of each open element
        self.hiding = 0  # how many of them are hidden
        self.in_pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in EMPTY:
            if tag in ("br", "hr") and not self.hiding:
                self.parts.append("\n")
            return
        named = dict(attrs)
        words = f"{named.get('id') or ''} {named.get('class') or ''}".split()
        hidden = tag in HIDDEN or (tag not in ALWAYS_SHOWN and any(w in FURNITURE for w in words))
        self.open.append((tag, hidden))
        self.hiding += hidden
        self.in_pre += tag == "pre"
        if self.hiding:
            return
        if tag in BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("* ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in EMPTY:
            return
        # Close the innermost open element of that name, and whatever sloppy markup left open
        # inside it; an end tag that matches nothing closes nothing.
        for i in reversed(range(len(self.open))):
            if self.open[i][0] == tag:
                for inner, hidden in self.open[i:]:
                    self.hiding -= hidden
                    self.in_pre -= inner == "pre"
                del self.open[i:]
                break
        if not self.hiding and tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hiding:
            self.parts.append(data if self.in_pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        text = "".join(self.parts)
        if not self.in_pre:
            text = re.sub(r"[ \t]*\n[ \t]*(?=\S)", "\n", text)
        text = re.sub(r"\n[ \t\u00a0]+(?=\n)", "\n", text)  # lines of blanks only
        text = re.sub(r"\n{3,}", "\n\n", text)
        return text.strip()


def html_text(markup: str) -> str:
    parser = TextOfHtml()
    parser.feed(markup)
    parser.close()
    return parser.text()


def html_file_text(path: str) -> str:
    """The text of an HTML file; "" for one that cannot be read or parsed."""
    try:
        return html_text(read_text(path))
    except Exception:
        return ""
