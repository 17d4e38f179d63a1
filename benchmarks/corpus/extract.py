"""The extractors: each turns one kind of source in the unpacked tree into a list of documents.

`extract(source, root, jobs)` picks the one for a `Source`. Man pages and HTML pages are
converted by `jobs` processes; the results keep the order of the files all the same.
"""

from __future__ import annotations

import gzip
import html
import os
import re
import shlex
import subprocess
from concurrent.futures import ProcessPoolExecutor

from .sources import Files, Source
from .text import group, html_file_text, read_text, unique, walk

DICT_PAGE = 6000  # characters of consecutive dictionary entries per document
MAN_TIMEOUT = 20  # seconds: a few pages keep troff busy for minutes; those are left out

# --- dictionaries, fortunes, plain files ------------------------------------------------------

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")}
_B64 |= {c: 52 + i for i, c in enumerate("0123456789+/")}


def b64_number(digits: str) -> int:
    """A dictd index number: base 64, most significant digit first. KeyError if not one."""
    value = 0
    for c in digits:
        value = value * 64 + _B64[c]
    return value


def dictd_entries(index_lines, data: bytes) -> list[str]:
    """The entries an index points at in the uncompressed database, in database order, each
    once, without the database's own `00-database-*` entries and without empty ones."""
    spans = set()
    for line in index_lines:
        fields = line.rstrip("\n").split("\t")
        if len(fields) < 3 or fields[0].startswith("00-database-"):
            continue
        try:
            spans.add((b64_number(fields[1]), b64_number(fields[2])))
        except KeyError:
            pass
    entries = (data[at : at + size].decode("utf-8", "replace") for at, size in sorted(spans))
    return [entry for entry in (e.strip("\n") for e in entries) if entry]


def dictd_docs(root: str, name: str) -> list[str]:
    """A dictd dictionary as pages of consecutive entries, a blank line between entries."""
    base = os.path.join(root, "usr/share/dictd", name)
    with gzip.open(base + ".dict.dz") as f:  # dictzip files are gzip files
        data = f.read()
    with open(base + ".index", encoding="utf-8", errors="replace") as f:
        return group(dictd_entries(f, data), DICT_PAGE, "\n\n")


def cookies(text: str) -> list[str]:
    """The cookies of a fortune file: the texts between lines holding only `%`."""
    parts = (part.strip("\n%") for part in re.split(r"\n%\n", text))
    return [part for part in parts if part.strip()]


def fortune_docs(root: str) -> list[str]:
    """Each cookie of each fortune file (not the .dat indexes, not the offensive ones)."""
    paths = walk(
        os.path.join(root, "usr/share/games"),
        lambda p: not p.endswith((".dat", ".u8")) and "/off/" not in p,
    )
    return [cookie for path in paths for cookie in cookies(read_text(path))]


def file_docs(paths: list[str], min_chars: int = 100) -> list[str]:
    """Each file's text, if it has `min_chars` characters or more besides surrounding blanks."""
    texts = (read_text(path) for path in paths)
    return [text for text in texts if len(text.strip()) >= min_chars]


def changelog_docs(root: str) -> list[str]:
    """The changelogs, NEWS and READMEs of every unpacked package."""
    name = re.compile(r"/(changelog(\.Debian)?|NEWS(\.Debian)?|README(\.Debian)?)(\.gz)?$")
    return file_docs(walk(os.path.join(root, "usr/share/doc"), name.search), min_chars=300)


def emoji_docs(root: str) -> list[str]:
    """Unicode's emoji test files, one document per `# group:` section."""
    docs = []
    for name in ("emoji-test.txt", "emoji-zwj-sequences.txt"):
        path = os.path.join(root, "usr/share/unicode/emoji", name)
        if os.path.exists(path):
            docs += [part for part in re.split(r"\n(?=# group:)", read_text(path)) if part.strip()]
    return docs


def html_docs(paths: list[str], jobs: int, min_chars: int = 200) -> list[str]:
    """The texts of HTML pages, in path order, less short ones and repeats."""
    with ProcessPoolExecutor(jobs) as pool:
        texts = list(pool.map(html_file_text, paths, chunksize=16))
    return [text for text in unique(texts) if len(text) >= min_chars]


# --- SWORD modules ----------------------------------------------------------------------------

_MARKUP = re.compile(r"<[^>]*>")
_VERSE = re.compile(r"(.+?) (\d+):\d+$")


def sword_entries(dump: str) -> list[tuple[str, str]]:
    """(key, plain text) of the entries of a `mod2imp` export, markup and entities resolved.

    Each entry starts with a `$$$key` line. The text before the first one that follows a
    newline is not taken: the module's heading, or with a lexicon its first entry.
    """
    entries = []
    for block in dump.split("\n$$$")[1:]:
        key, _, body = block.partition("\n")
        body = _MARKUP.sub("", body)
        body = re.sub(r"<[^>\n]*$", "", body)  # a tag cut off at the end
        body = re.sub(r"[ \t]+", " ", html.unescape(body)).strip()
        if len(body) >= 3:
            entries.append((key, body))
    return entries


def cut_run_ons(entries: list[tuple[str, str]]) -> None:
    """Ends each entry where the text of the next different entry begins, in place.

    Some compressed commentaries (MHCC) export each entry followed by ~50 KB of the next ones.
    """
    for i in range(len(entries) - 1):
        key, body = entries[i]
        j = i + 1
        while j < len(entries) and entries[j][1][:80] == body[:80]:
            j += 1  # the same text under several keys
        following = entries[j][1][:80] if j < len(entries) else ""
        if len(following) >= 40:
            at = body.find(following, 1)
            if at > 0:
                entries[i] = (key, body[:at].rstrip())


def sword_chapters(entries: list[tuple[str, str]], titles: bool) -> list[str]:
    """One document per chapter (`Book N`, with a `Book N` title line if `titles`), verses
    numbered; lexicon entries by 25 under their keys. Repeated texts are left out."""
    chapters: dict[str, list[str]] = {}
    seen: set[bytes] = set()
    n_lexical = 0
    for key, body in entries:
        if not unique([body], seen):
            continue
        verse = _VERSE.match(key)
        chapter = f"{verse[1]} {verse[2]}" if verse else f"lex:{n_lexical // 25}"
        texts = chapters.setdefault(chapter, [])
        # commentaries may export a verse with the rest of its chapter: one copy is enough
        if len(body) > 200 and any(body in text for text in texts):
            continue
        if verse is None:
            n_lexical += 1
            texts.append(f"{key}\n{body}")
        else:
            number = key.rsplit(":", 1)[1]
            texts.append(body if number == "0" else f"{number} {body}")
    return [
        ("" if name.startswith("lex:") or not titles else name + "\n\n") + "\n".join(texts)
        for name, texts in chapters.items()
    ]


def sword_docs(root: str, module: str, titles: bool) -> list[str]:
    env = dict(os.environ, SWORD_PATH=os.path.join(root, "usr/share/sword"))
    dump = subprocess.run(["mod2imp", module], env=env, capture_output=True, check=True).stdout
    entries = sword_entries(dump.decode("utf-8", "replace"))
    cut_run_ons(entries)
    return sword_chapters(entries, titles)


# --- man pages --------------------------------------------------------------------------------


def render_man(path: str) -> str:
    """A man page as plain text, 80 columns; "" if it takes longer than MAN_TIMEOUT."""
    env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8", MANWIDTH="80")
    env.update(MAN_DISABLE_SECCOMP="1", GROFF_NO_SGR="1")
    proc = subprocess.Popen(
        f"man -l -E UTF-8 {shlex.quote(path)} 2>/dev/null | col -bx",
        shell=True,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a process group of its own: the whole pipeline can be killed
    )
    try:
        return proc.communicate(timeout=MAN_TIMEOUT)[0].decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return ""


def is_redirect(head: str) -> bool:
    """Whether a man page (its first 200 characters) only points at another: `.so page`."""
    return head.startswith(".so ") and head.count("\n") <= 2


def man_pages(root: str, langs: tuple[str, ...]) -> list[str]:
    """The man page files of `langs` ("en": the untranslated ones), without redirections."""
    top = os.path.join(root, "usr/share/man")
    section_file = re.compile(r"/man\d[^/]*/[^/]+$").search
    pages = []
    for folder in sorted(os.listdir(top)):
        lang = "en" if folder.startswith("man") else folder
        if lang not in langs or not os.path.isdir(os.path.join(top, folder)):
            continue
        for path in walk(os.path.join(top, folder), section_file):
            try:
                head = read_text(path)[:200]
            except Exception:
                continue
            if not is_redirect(head):
                pages.append(path)
    return pages


def man_docs(root: str, langs: tuple[str, ...], jobs: int) -> list[str]:
    with ProcessPoolExecutor(jobs) as pool:
        texts = list(pool.map(render_man, man_pages(root, langs), chunksize=8))
    return [text for text in texts if len(text.strip()) > 100]


# --- by kind ----------------------------------------------------------------------------------


def listed(root: str, files: Files) -> list[str]:
    """The paths `files` describes, folder after folder."""
    skip = re.compile(files.skip).search if files.skip else None
    return [
        path
        for folder in files.dirs
        for path in walk(os.path.join(root, folder), lambda p: p.endswith(files.suffix))
        if skip is None or not skip(path)
    ]


def extract(source: Source, root: str, jobs: int) -> list[str]:
    """The documents of one source as they come, in the source's own order."""
    kind, arg = source.kind, source.arg
    if kind == "dictd":
        return dictd_docs(root, arg)
    if kind == "sword":
        return sword_docs(root, *arg)
    if kind == "man":
        return man_docs(root, arg, jobs)
    if kind == "plain":
        return file_docs(listed(root, arg))
    if kind == "html":
        return html_docs(listed(root, arg), jobs)
    by_root = {"fortunes": fortune_docs, "changelogs": changelog_docs, "emoji": emoji_docs}
    return by_root[kind](root)
