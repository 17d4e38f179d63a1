"""`benchmarks/make_corpus.py`'s pure parts, offline: cleaning, grouping, HTML to text, the
dictd, fortune and SWORD readers, the caps, and the layout of the written corpora. No apt-get,
no root, no network, no man or mod2imp."""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

import pytest

# benchmarks/ on the path only while importing: its scripts' names must not shadow others'
_BENCHMARKS = str(Path(__file__).parents[1] / "benchmarks")
sys.path.insert(0, _BENCHMARKS)
try:
    from corpus import assemble, extract, sources, text
finally:
    sys.path.remove(_BENCHMARKS)

EOT = "<|endoftext|>"


def test_clean_removes_separators_nuls_crs_and_extra_blank_lines() -> None:
    raw = f"\n\nfirst  \r\nsec{EOT}ond\x00\t\n\n\n\n\n\nlast \n\n"
    assert text.clean(raw) == "first\nsecond\n\n\nlast"


def test_read_text_gunzips_and_falls_back_to_latin1(tmp_path: Path) -> None:
    (tmp_path / "a.gz").write_bytes(gzip.compress("zoë\n".encode()))
    (tmp_path / "b").write_bytes(gzip.compress(b"magic, no suffix"))
    (tmp_path / "c.gz").write_bytes(b"not gzip at all")
    (tmp_path / "d").write_bytes("café".encode("latin-1"))
    got = [text.read_text(str(tmp_path / name)) for name in ("a.gz", "b", "c.gz", "d")]
    assert got == ["zoë\n", "magic, no suffix", "not gzip at all", "café"]


def test_walk_is_sorted_and_skips_symlinks(tmp_path: Path) -> None:
    for name in ("b/2.txt", "b/1.txt", "a/z.txt", "a/y.bin", "c.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "a" / "link.txt").symlink_to(tmp_path / "c.txt")
    found = text.walk(str(tmp_path), lambda p: p.endswith(".txt"))
    assert [Path(p).relative_to(tmp_path).as_posix() for p in found] == [
        "c.txt",
        "a/z.txt",
        "b/1.txt",
        "b/2.txt",
    ]
    assert text.walk(str(tmp_path / "missing"), bool) == []


def test_group_fills_documents_up_to_the_target() -> None:
    assert text.group(["aaa", "bb", "c", "dddd", "e"], 5, "|") == ["aaa|bb", "c|dddd", "e"]
    assert text.group([], 5, "|") == []


def test_unique_keeps_first_copies_across_calls() -> None:
    seen: set[bytes] = set()
    assert text.unique(["a", "b", "a"], seen) == ["a", "b"]
    assert text.unique(["b", "c"], seen) == ["c"]


def test_html_text_keeps_content_and_drops_furniture() -> None:
    page = """<html><head><title>T</title><style>p {}</style></head><body class="nav">
    <div class="sidebar"><p>menu</p></div><nav>links</nav>
    <h1>Title</h1><p>Some   <b>bold</b>
    text &amp; more.</p><ul><li>one</li><li>two</li></ul>
    <table><tr><td>a</td><td>b</td></tr></table>
    <pre>  keep
    spacing</pre><div id="footer">bye</div><p>unclosed <span>inner</p>after</body></html>"""
    got = text.html_text(page)
    # <pre> keeps its line breaks; indentation at line starts goes, there as everywhere
    assert got == (
        "Title\n\nSome bold text & more.\n\n* one\n\n* two\n\na\n\nb\n\n"
        "keep\nspacing\n\nunclosed inner\nafter"
    )
    assert "menu" not in got and "links" not in got and "bye" not in got


def test_dictd_entries_follow_the_index() -> None:
    data = b"headerAlphaBeta\nGamma"
    index = [
        "00-database-info\tA\tG\n",  # the database's own entry: left out
        "beta\tL\tE\n",  # offset 11, 4 bytes (listed out of order)
        "alpha\tG\tF\n",  # offset 6, 5 bytes
        "alpha2\tG\tF\n",  # the same span again
        "gamma\tQ\tG\n",  # offset 16, 6 bytes: runs past the end
        "bad\t!\tB\n",  # not base 64
        "short\tA\n",
    ]
    assert extract.b64_number("BA") == 64 and extract.b64_number("/") == 63
    assert extract.dictd_entries(index, data) == ["Alpha", "Beta", "Gamma"]


def test_cookies_of_a_fortune_file() -> None:
    fortune = "First cookie.\n%\n\n%\nSecond\n  -- someone\n%\n"
    assert extract.cookies(fortune) == ["First cookie.", "Second\n  -- someone"]


def test_sword_export_to_chapters() -> None:
    dump = (
        "$$$[ Module Heading ]\n\n"
        "$$$Genesis 1:0\n<chapter n='1'/>Intro text\n"
        "$$$Genesis 1:1\nIn the <w lemma='x'>beginning</w>&amp; so on\n"
        "$$$Genesis 1:2\nIn the <w lemma='x'>beginning</w>&amp; so on\n"  # repeat: left out
        "$$$Genesis 2:1\nThus the   heavens <note\n"
    )
    entries = extract.sword_entries(dump)
    assert entries[0] == ("Genesis 1:0", "Intro text")
    assert entries[-1] == ("Genesis 2:1", "Thus the heavens")
    assert extract.sword_chapters(entries, titles=True) == [
        "Genesis 1\n\nIntro text\n1 In the beginning& so on",
        "Genesis 2\n\n1 Thus the heavens",
    ]
    assert extract.sword_chapters(entries, titles=False)[1] == "1 Thus the heavens"


def test_sword_lexicon_entries_keep_their_keys() -> None:
    entries = [(f"{n:05}", f"word {n}") for n in range(30)]
    docs = extract.sword_chapters(entries, titles=True)
    assert len(docs) == 2 and docs[0].startswith("00000\nword 0\n00001\nword 1")
    assert docs[1].count("\n") == 2 * 5 - 1


def test_run_on_entries_are_cut_where_the_next_begins() -> None:
    nxt = "The next entry starts here and goes on for a while."
    entries = [("A 1:1", "First entry. " + nxt + " more"), ("A 1:2", nxt + " more")]
    extract.cut_run_ons(entries)
    assert entries == [("A 1:1", "First entry."), ("A 1:2", nxt + " more")]


def test_man_redirections_are_recognized() -> None:
    assert extract.is_redirect(".so man1/other.1\n")
    assert not extract.is_redirect('.TH LS 1\n.SH NAME\nls \\- list\n.so "x"\n')


def test_cap_takes_every_kth_document_in_order() -> None:
    docs = [str(i) * assemble.MIB for i in range(10)]  # 1 MiB each
    assert assemble.cap(docs, None) is docs
    assert assemble.cap(docs, 10) is docs
    assert assemble.cap(docs, 4) == [docs[0], docs[3], docs[5], docs[8]]  # k = 2.5


def test_corpora_layout_and_sample(tmp_path: Path) -> None:
    docs = [f"document {i}\nline two" for i in range(2000)]
    large, small = assemble.corpora(docs, small_mb=200 * 25 / assemble.MIB)
    shuffled = list(docs)
    random.Random(assemble.SHUFFLE_SEED).shuffle(shuffled)
    assert large == shuffled and large is not docs
    assert 100 < len(small) < 300 and set(small) <= set(large)
    assert small == [d for d in large if d in set(small)]  # in large's order
    path = tmp_path / "c.txt"
    assemble.write_corpus(str(path), large[:2])
    assert path.read_bytes() == f"{large[0]}\n{EOT}\n{large[1]}\n{EOT}\n".encode()
    assert assemble.corpus_bytes(large[:2]) == path.stat().st_size


def test_tables_are_consistent() -> None:
    names = [source.name for source in sources.SOURCES]
    assert len(names) == len(set(names)) == 54
    assert len(sources.PACKAGES) == len(set(sources.PACKAGES)) == 95
    kinds = {"dictd", "fortunes", "sword", "man", "plain", "html", "changelogs", "emoji"}
    assert {source.kind for source in sources.SOURCES} == kinds
    for source in sources.SOURCES:
        if source.kind in ("plain", "html"):
            assert isinstance(source.arg, sources.Files) and source.arg.dirs


def test_unknown_kind_is_an_error() -> None:
    with pytest.raises(KeyError):
        extract.extract(sources.Source("x", "nothing", None, None, "en"), "/nonexistent", 1)
