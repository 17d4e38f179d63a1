"""Writes a multilingual benchmark corpus: Chinese, Japanese, Russian, Arabic, Thai and German.

Encoding speed depends on the script: multi-byte characters, long runs of letters without
spaces (Chinese, Japanese, Thai), and the merges a vocabulary has for them. This builds
`multilingual.txt` with about the same share of each language, documents joined by
`<|endoftext|>`, deterministically from its inputs:

1. The documents of the large corpus (`large.txt`, text from Debian packages), each classified
   by the script of most of its letters: Han (Chinese), Kana with Han (Japanese), Cyrillic
   with ы/э and without Ukrainian letters (Russian), Arabic, Thai, and Latin text with ä/ö/ü/ß
   and many German function words (German). They come first, in file order.
2. Where a language has less than its share there (Thai has none, Arabic little), the
   translations of Debian's LibreOffice, Firefox ESR and Thunderbird language packs: the
   msgstr strings of their `.mo` files and the values of the `.ftl`/`.properties`/`.dtd` files
   in their `.xpi`, grouped into documents of 2-20 KB. The `.deb` files are kept in `--debs`;
   `--download` fetches them with `apt-get download` (run `apt-get update` once first).
3. If still short, documents of the large corpus where that script has 30-50% of the letters
   and the rest is Latin (bilingual dictionaries).

     python benchmarks/multilingual_corpus.py --download    # once: the .deb files
     python benchmarks/multilingual_corpus.py [-o /work/cache/corpus/multilingual.txt] [--mb 40]

The languages take turns in the output (the one with the fewest bytes written so far goes
next), so the first N MB of the file hold about N/6 MB of each until one runs out. Each
language stops at its share, `--mb` / 6; one with less than `--min-mb` is refused. The output
depends only on `large.txt` and the `.deb` files; the packages' versions are printed, since a
newer release of a package changes its text.
"""

from __future__ import annotations

import argparse
import gettext
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import unicodedata
import zipfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CORPUS_DIR, EOT, MB, iter_docs

LANGS = ("zh", "ja", "ru", "ar", "th", "de")
NAMES = {"zh": "Chinese", "ja": "Japanese", "ru": "Russian", "ar": "Arabic", "th": "Thai"}
NAMES["de"] = "German"
#: Language packs with the most translated text of the languages the large corpus lacks.
PACKAGES = {
    lang: [f"libreoffice-l10n-{lang}", f"firefox-esr-l10n-{lang}", f"thunderbird-l10n-{lang}"]
    for lang in ("th", "ar")
}
DEBS_DIR = CORPUS_DIR / "multilingual-debs"
SEED = 20261204  # document sizes of the package text

# Letters by script: one pass of `str.translate` maps every character to its script's tag.
_RANGES = {
    "h": [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)],  # Han
    "k": [(0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)],  # Hiragana, Katakana
    "c": [(0x0400, 0x04FF)],  # Cyrillic
    "a": [(0x0600, 0x06FF), (0x0750, 0x077F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)],  # Arabic
    "t": [(0x0E00, 0x0E7F)],  # Thai
    "l": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F)],  # Latin
}
_SCRIPT_OF = {cp: tag for tag, spans in _RANGES.items() for a, b in spans for cp in range(a, b + 1)}
_GERMAN_WORDS = frozenset(
    "der die das und nicht ist mit für den dem des von werden wird ein eine einer einen sich "
    "auf auch zu im in es sie ich wir oder wenn kann können sind bei nach aus wie".split()
)
_WORD = re.compile(r"\w+")


def script_counts(text: str) -> dict[str, int]:
    """Letters of each script tag in `text` (h, k, c, a, t, l)."""
    tags = text.translate(_TRANSLATE)
    return {tag: tags.count(tag) for tag in _RANGES}


class _ScriptTable(dict):
    """`str.translate` table: a letter of a known script becomes its tag, anything else ''."""

    def __missing__(self, cp: int) -> str:
        tag = _SCRIPT_OF.get(cp, "")
        self[cp] = tag
        return tag


_TRANSLATE = _ScriptTable()


def classify(doc: str) -> tuple[str | None, bool]:
    """The language of a document by its script, and whether that script holds the majority of
    its letters (False: 30-50%, the rest mostly Latin, as in a bilingual dictionary)."""
    counts = script_counts(doc)
    letters = sum(counts.values())
    if letters < 200:
        return None, False
    share = {tag: n / letters for tag, n in counts.items()}
    if share["k"] >= 0.15 and share["k"] + share["h"] >= 0.5:
        return "ja", True
    if share["h"] >= 0.5 and share["k"] < 0.02:
        return "zh", True
    if share["c"] >= 0.5:
        ru = sum(doc.count(ch) for ch in "ыэЫЭ")
        uk = sum(doc.count(ch) for ch in "іїєґІЇЄҐ")  # Ukrainian; Bulgarian has no ы/э
        return ("ru" if ru >= 0.005 * counts["c"] and uk <= 0.001 * counts["c"] else None), True
    for tag, lang in (("a", "ar"), ("t", "th")):
        if share[tag] >= 0.3 and share[tag] + share["l"] >= 0.9:
            return lang, share[tag] >= 0.5
    if share["l"] >= 0.95:
        umlauts = sum(doc.count(ch) for ch in "äöüßÄÖÜ")
        words = _WORD.findall(doc.lower())
        german = sum(w in _GERMAN_WORDS for w in words)
        if umlauts >= 0.005 * counts["l"] and german >= 0.12 * len(words):
            return "de", True
    return None, False


# ---------------------------------------------------------------- Debian language packs


def deb_files(debs: Path, lang: str) -> tuple[list[Path], list[str]]:
    """The `.deb` of each language pack of `lang` in `debs`, and the packages not there."""
    found, missing = [], []
    for pkg in PACKAGES.get(lang, []):
        hits = sorted(debs.glob(f"{pkg}_*.deb"))
        if hits:
            found.append(hits[-1])  # the newest if several versions were downloaded
        else:
            missing.append(pkg)
    return found, missing


def _mo_strings(data: bytes) -> list[str]:
    """The translations (msgstr) of a `.mo` file, in the file's order; the header left out."""
    try:
        catalog = gettext.GNUTranslations(io.BytesIO(data))._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    return [v for k, v in catalog.items() if k != "" and isinstance(v, str)]


_DTD_VALUE = re.compile(r'<!ENTITY\s+\S+\s+"([^"]*)"')


def _l10n_strings(name: str, text: str) -> list[str]:
    """The values of a Mozilla `.ftl`, `.properties` or `.dtd` file, comments left out."""
    if name.endswith(".dtd"):
        return _DTD_VALUE.findall(text)
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "[", "*", "}", "-")):
            continue
        if "=" in s:
            s = s.split("=", 1)[1].strip()
        elif not line[:1].isspace():
            continue  # a continuation line is indented
        if s:
            out.append(s)
    return out


def _xpi_strings(data: bytes) -> list[str]:
    out = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in sorted(z.namelist()):
            if name.endswith((".ftl", ".properties", ".dtd")):
                out += _l10n_strings(name, z.read(name).decode("utf-8", "replace"))
    return out


def package_strings(deb: Path) -> list[str]:
    """Every translated string of a language pack, in a fixed order (members by name)."""
    if not shutil.which("dpkg-deb"):
        raise SystemExit("dpkg-deb not found: this reads Debian packages (apt-get install dpkg)")
    tar_bytes = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True
    ).stdout
    out = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile() or not member.name.endswith((".mo", ".xpi")):
                continue
            f = tar.extractfile(member)
            data = f.read() if f else b""
            out += _mo_strings(data) if member.name.endswith(".mo") else _xpi_strings(data)
    return out


def package_docs(debs: list[Path], lang: str) -> list[str]:
    """The strings of `lang`'s packs that hold its script, joined by newlines into documents
    of 2-20 KB (sizes from a seeded generator, so the same inputs give the same documents)."""
    tag = {"th": "t", "ar": "a", "zh": "h", "ja": "k", "ru": "c", "de": "l"}[lang]
    rng = random.Random(f"{SEED}-{lang}")
    docs, cur, size = [], [], 0
    target = rng.randint(2_000, 20_000)
    for deb in debs:
        for s in package_strings(deb):
            s = unicodedata.normalize("NFC", s.replace(EOT, "")).strip()
            if not s or script_counts(s)[tag] == 0:
                continue  # untranslated, or a key, a URL or a brand name
            cur.append(s)
            size += len(s.encode())
            if size >= target:
                docs.append("\n".join(cur))
                cur, size, target = [], 0, rng.randint(2_000, 20_000)
    if cur:
        docs.append("\n".join(cur))
    return docs


def download(debs: Path) -> None:
    debs.mkdir(parents=True, exist_ok=True)
    pkgs = [p for lang in LANGS for p in PACKAGES.get(lang, [])]
    print(f"apt-get download {' '.join(pkgs)}  (in {debs})", flush=True)
    subprocess.run(["apt-get", "download", *pkgs], cwd=debs, check=True)


# ---------------------------------------------------------------- the corpus


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(CORPUS_DIR / "multilingual.txt"))
    ap.add_argument("--mb", type=float, default=40, help="target size; each language 1/6 of it")
    ap.add_argument("--large", default=str(CORPUS_DIR / "large.txt"), help="the large corpus")
    ap.add_argument("--debs", default=str(DEBS_DIR), help="folder of the language packs' .deb")
    ap.add_argument("--download", action="store_true", help="apt-get download the .deb files")
    ap.add_argument("--min-mb", type=float, default=2, help="refuse a language with less")
    args = ap.parse_args(argv)
    debs = Path(args.debs)
    if args.download:
        download(debs)
        if not Path(args.large).is_file():
            return 0
    if not Path(args.large).is_file():
        raise SystemExit(
            f"no large corpus at {args.large}: it is built from Debian packages by "
            "sudo python3 benchmarks/make_corpus.py DIR (see docs/performance.md), or give "
            "--large PATH"
        )
    share = args.mb * MB / len(LANGS)
    picked: dict[str, list[str]] = {lang: [] for lang in LANGS}
    have = dict.fromkeys(LANGS, 0)
    sources: dict[str, list[str]] = {lang: [] for lang in LANGS}
    minority: dict[str, list[str]] = {lang: [] for lang in LANGS}

    def take(lang: str, docs) -> float:
        before = have[lang]
        for doc in docs:
            if have[lang] >= share:
                break
            picked[lang].append(doc)
            have[lang] += len(doc.encode())
        return (have[lang] - before) / MB

    print(f"classifying the documents of {args.large} ...", flush=True)
    for doc in iter_docs(args.large):
        lang, majority = classify(doc)
        if lang and majority:
            take(lang, [doc])
        elif lang and sum(map(len, minority[lang])) < share:
            minority[lang].append(doc)
    for lang in LANGS:
        sources[lang].append(f"large.txt {have[lang] / MB:.1f} MB")
        if have[lang] >= share or lang not in PACKAGES:
            continue
        found, missing = deb_files(debs, lang)
        if missing:
            raise SystemExit(
                f"{NAMES[lang]}: only {have[lang] / MB:.1f} MB in the large corpus, and the "
                f"language packs {', '.join(missing)} are not in {debs}: run "
                f"`python benchmarks/multilingual_corpus.py --download --debs {debs}` (it "
                "runs apt-get download there; apt-get update first)"
            )
        mb = take(lang, package_docs(found, lang))
        sources[lang].append(f"language packs {mb:.1f} MB ({', '.join(d.name for d in found)})")
        if have[lang] < share and minority[lang]:
            mb = take(lang, minority[lang])
            sources[lang].append(f"large.txt, mixed with Latin text, {mb:.1f} MB")
    short = [lang for lang in LANGS if have[lang] < args.min_mb * MB]
    if short:
        raise SystemExit(
            "too little text for " + ", ".join(f"{NAMES[x]} ({have[x] / MB:.2f} MB)" for x in short)
        )
    out, tmp = Path(args.output), Path(args.output + ".partial")
    written = dict.fromkeys(LANGS, 0)
    queues = {lang: iter(picked[lang]) for lang in LANGS}
    first = True
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        while queues:
            lang = min(queues, key=lambda x: (written[x], LANGS.index(x)))
            doc = next(queues[lang], None)
            if doc is None:
                del queues[lang]
                continue
            f.write(doc if first else EOT + doc)
            first = False
            written[lang] += len(doc.encode())
    os.replace(tmp, out)
    total = sum(written.values())
    print(f"{out}: {total / MB:.1f} MB, {sum(map(len, picked.values())):,} documents")
    for lang in LANGS:
        print(
            f"  {NAMES[lang]:<9} {written[lang] / MB:5.1f} MB  {len(picked[lang]):6,} docs  "
            f"from {'; '.join(sources[lang])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
