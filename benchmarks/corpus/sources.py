"""What the corpora are made of: the Debian packages and the sources read from them.

Both tables are data. Their order matters: packages are unpacked in PACKAGES order, and
sources are read in SOURCES order, which decides which copy of a repeated document is kept
and where each source's documents stand before the shuffle.
"""

from __future__ import annotations

from typing import NamedTuple


def _names(pattern: str, words: str) -> list[str]:
    return [pattern.format(word) for word in words.split()]


#: The text packages: downloaded and unpacked (`dpkg-deb -x`), never installed.
PACKAGES = [
    # dictionaries, dictd format
    *_names("dict-{}", "gcide wn foldoc jargon devil vera elements"),
    *_names(
        "dict-freedict-{}",
        "deu-eng eng-deu jpn-eng eng-jpn eng-ara eng-hin eng-fin eng-hun eng-tur eng-bul eng-ces "
        "fra-eng spa-eng ita-eng eng-rus eng-ell eng-pol eng-por",
    ),
    # fortune cookies in many languages (fortunes-zh: Tang and Song poetry)
    "fortunes",
    *_names("fortunes-{}", "min zh de es it ru pl cs br bg eo ga mario bofh-excuses debian-hints"),
    # SWORD bibles, commentaries and lexicons
    *_names("sword-text-{}", "kjv web sparv"),
    *_names("sword-comm-{}", "mhcc scofield tdavid"),
    *_names("sword-dict-{}", "naves strongs-greek strongs-hebrew"),
    # man pages
    "manpages",
    *_names("manpages-{}", "dev ja de fr es it ru pl zh pt-br nl uk tr vi"),
    # documentation
    "linux-doc-6.1",
    "python3.11-doc",
    "debian-handbook",
    *_names("debian-reference-{}", "en de fr ja zh-cn zh-tw es it pt"),
    *"perl-doc git-doc postgresql-doc-15 python-django-doc sqlite3-doc".split(),
    *_names("libreoffice-help-{}", "en-us de fr es ja zh-cn ru pt-br ko"),
    *"gimp-help-en openjdk-17-doc rust-doc".split(),
    # emoji test data
    "unicode-data",
]

#: Installed: the programs extraction runs (man and groff, col, SWORD's mod2imp).
TOOLS = ["man-db", "groff-base", "bsdextrautils", "libsword-utils"]


class Files(NamedTuple):
    """The files under `dirs` (relative to the unpacked tree) ending in `suffix`, in sorted
    order, less those where the regular expression `skip` matches the path."""

    dirs: tuple[str, ...]
    suffix: str
    skip: str = ""


class Source(NamedTuple):
    """One entry of the manifest. `kind` names the extractor (`extract.extract`), `arg` is what
    it reads; `cap_mb` (MiB) thins a bigger source out; `lang` is a note for the manifest."""

    name: str
    kind: str
    arg: object
    cap_mb: int | None
    lang: str


_DOC = "usr/share/doc/"
_LO = "usr/share/libreoffice/help/"


def _under(prefix: str, words: str) -> tuple[str, ...]:
    return tuple(prefix + word for word in words.split())


_FREEDICT = [("deu-eng", 8), ("eng-deu", 8), ("jpn-eng", 8), ("eng-fin", 4), ("eng-hun", 4)]
_FREEDICT += [
    (pair, None)
    for pair in "eng-tur eng-bul eng-ara eng-ces eng-hin eng-jpn eng-pol eng-ell eng-por "
    "fra-eng spa-eng ita-eng eng-rus".split()
]
#: SWORD modules, and whether their documents start with a `Book N` title (commentaries' verse
#: numbering is shifted, so theirs would be wrong).
_SWORD = [("engKJV2006eb", True), ("engWEB2015eb", True), ("MHCC", False), ("Scofield", False)]
_SWORD += [("TDavid", False), ("Nave", True), ("StrongsGreek", True), ("StrongsHebrew", True)]

# fmt: off
SOURCES = [
    *(Source(f"dict-{n}", "dictd", n, None, "en")
      for n in "gcide wn foldoc jargon devil vera elements".split()),
    *(Source(f"freedict-{p}", "dictd", f"freedict-{p}", cap, "bilingual") for p, cap in _FREEDICT),
    Source("fortunes", "fortunes", None, None, "en+de,es,it,ru,pl,cs,zh,..."),
    *(Source(f"sword-{m}", "sword", (m, titles), None, "en") for m, titles in _SWORD),
    Source("sword-spaRV1909eb", "sword", ("spaRV1909eb", True), None, "es"),
    Source("man-en", "man", ("en",), None, "en"),
    Source("man-intl", "man", tuple("de es fr it ja nl pl pt_BR ru tr uk vi zh_CN zh_TW".split()),
           None, "de,es,fr,it,ja,nl,pl,pt,ru,tr,uk,vi,zh"),
    Source("linux-doc-rst", "plain", Files((_DOC + "linux-doc-6.1/html/_sources",), ".txt"),
           None, "en (+zh,ja,ko,it,es translations)"),
    Source("python-doc-rst", "plain", Files((_DOC + "python3.11/html/_sources",), ".txt"),
           None, "en"),
    Source("git-doc-txt", "plain", Files((_DOC + "git-doc",), ".txt"), None, "en"),
    Source("perl-pod", "plain", Files(("usr/share/perl",), ".pod"), None, "en"),
    Source("debian-handbook", "html", Files((_DOC + "debian-handbook/html",), ".html"),
           None, "26 languages"),
    Source("debian-reference", "html", Files(("usr/share/debian-reference",), ".html"),
           None, "en,de,es,fr,it,ja,pt,zh-cn,zh-tw"),
    Source("libreoffice-help-en", "html", Files((_LO + "en-US",), ".html"), None, "en"),
    Source("libreoffice-help-intl", "html",
           Files(_under(_LO, "de es fr ja ko pt-BR ru zh-CN"), ".html"),
           30, "de,es,fr,ja,ko,pt,ru,zh"),
    Source("gimp-help-en", "html", Files(("usr/share/gimp/2.0/help/en",), ".html"), None, "en"),
    Source("postgresql-doc", "html", Files((_DOC + "postgresql-doc-15/html",), ".html"),
           None, "en"),
    Source("sqlite-doc", "html", Files((_DOC + "sqlite3",), ".html"), None, "en"),
    Source("django-doc", "html",
           Files((_DOC + "python-django-doc/html",), ".html", "/_modules/|genindex"), None, "en"),
    Source("rust-books", "html",
           Files(_under(_DOC + "rust-doc/html/", "book reference nomicon rust-by-example rustc "
                        "embedded-book edition-guide rustdoc unstable-book"),
                 ".html", r"print\.html$"),  # print.html: a whole book on one page
           None, "en"),
    Source("rust-std-api", "html", Files((_DOC + "rust-doc/html/std",), ".html"), 25, "en"),
    Source("openjdk-api", "html",
           Files((_DOC + "openjdk-17-jre-headless/api",), ".html",
                 "/class-use/|/index-files/|-summary|-tree"),  # generated lists and indexes
           40, "en"),
    Source("debian-changelogs", "changelogs", None, None, "en"),
    Source("unicode-emoji", "emoji", None, None, "emoji"),
]
# fmt: on
