"""The benchmark corpora in the formats training reads, to time each input path on the same text.

A corpus's documents are its pieces split exactly on `<|endoftext|>` (empty ones too, so that
joining them with the separator gives the corpus back byte for byte, which the build checks).
Each format below holds those documents, so training on any of them must give the txt merges:

  docs.jsonl.zst   one {"text": doc} record a line (json.dumps defaults, ensure_ascii)
  docs.parquet     column `text`, a row a document, --rows-per-group rows a row group
  docs.txt.gz      the corpus bytes, gzipped
  shards/          --shards plain .txt files cut just after a separator; concatenated, the corpus

The txt format is the corpus itself. Parquet is written as datatrove's ParquetWriter (FineWeb's
tooling) writes it: pyarrow's default compression, snappy, and a row group per 1000 rows (8 row
groups for small.txt, 176 for large.txt). One streaming pass in blocks of 8 MiB, so memory
stays small on the large corpus (about 230 MB peak). The outputs go to
`<corpus dir>/formats/<corpus stem>/` and are rebuilt only when missing, older than the corpus
or built with other options.

  python benchmarks/formats.py [small.txt large.txt] [--out DIR] [--force]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from common import EOT, MB

#: Formats held as files (txt is the corpus itself).
FILES = {
    "jsonl.zst": "docs.jsonl.zst",
    "parquet": "docs.parquet",
    "txt.gz": "docs.txt.gz",
    "shards": "shards",
}
FORMATS = ("txt", *FILES)
MANIFEST = "manifest.json"
_SEP = EOT.encode()
_BLOCK = 8 << 20


def formats_dir(corpus: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Where a corpus's formats live: `out`, or `formats/<stem>/` beside the corpus."""
    corpus = Path(corpus)
    return Path(out) if out else corpus.parent / "formats" / corpus.stem


def input_path(corpus: str | os.PathLike, fmt: str, out: str | os.PathLike | None = None) -> Path:
    """The file (or folder) that holds `corpus` in format `fmt`."""
    if fmt == "txt":
        return Path(corpus)
    return formats_dir(corpus, out) / FILES[fmt]


def _options(shards: int, rows_per_group: int, compression: str) -> dict:
    return {"shards": shards, "rows_per_group": rows_per_group, "compression": compression}


def is_fresh(corpus: str | os.PathLike, out: Path, options: dict) -> bool:
    """The cache holds every format, built from this very corpus file with these options."""
    try:
        with open(out / MANIFEST) as f:
            manifest = json.load(f)
        st = os.stat(corpus)
        paths = [out / MANIFEST, *(out / name for name in FILES.values())]
        return (
            manifest["corpus_size"] == st.st_size
            and manifest["corpus_mtime_ns"] == st.st_mtime_ns
            and manifest["options"] == options
            and all(os.stat(p).st_mtime_ns >= st.st_mtime_ns for p in paths)
        )
    except (OSError, KeyError, ValueError):
        return False


def _pieces(path: str | os.PathLike, block: int = _BLOCK):
    """(raw block, documents completed in it as bytes); the last call ends the final document."""
    rest = b""
    with open(path, "rb") as f:
        while buf := f.read(block):
            parts = (rest + buf).split(_SEP)
            rest = parts.pop()
            yield buf, parts
    yield b"", [rest]


class _Shards:
    """Plain-text shards of about `target` bytes, each ending just after a separator."""

    def __init__(self, folder: Path, target: int):
        folder.mkdir()
        self.folder, self.target, self.n, self.size, self.f = folder, target, 0, 0, None

    def write(self, doc: bytes, sep: bytes) -> None:
        if not (doc or sep) and self.n:
            return  # an empty final piece: no file of its own
        if self.f is None:
            self.f = open(self.folder / f"shard-{self.n:05d}.txt", "wb")
            self.n += 1
        self.f.write(doc)
        self.f.write(sep)
        self.size += len(doc) + len(sep)
        if sep and self.size >= self.target * self.n:
            self.f.close()
            self.f = None

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


def build(corpus, out: Path, shards: int, rows_per_group: int, compression: str) -> dict:
    """Writes every format into `out` (replaced whole), checking the documents rejoin exactly."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    size = os.path.getsize(corpus)
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    original, rejoined = hashlib.sha256(), hashlib.sha256()
    schema = pa.schema([("text", pa.string())])
    n_docs, n_empty, rows, t0 = 0, 0, [], time.perf_counter()
    with (
        open(tmp / FILES["jsonl.zst"], "wb") as raw_jsonl,
        zstandard.ZstdCompressor(level=3).stream_writer(raw_jsonl) as jsonl,
        gzip.open(tmp / FILES["txt.gz"], "wb", compresslevel=6) as gz,
        pq.ParquetWriter(tmp / FILES["parquet"], schema, compression=compression) as parquet,
    ):
        cut = _Shards(tmp / FILES["shards"], -(-size // shards))

        def flush_rows() -> None:
            parquet.write_table(pa.table({"text": rows}, schema=schema), row_group_size=len(rows))
            rows.clear()

        for buf, docs in _pieces(corpus):
            original.update(buf)
            gz.write(buf)
            lines = []
            for doc in docs:
                sep = _SEP if buf else b""  # the final piece has no separator after it
                rejoined.update(doc)
                rejoined.update(sep)
                cut.write(doc, sep)
                text = doc.decode("utf-8")
                lines.append(json.dumps({"text": text}))
                rows.append(text)
                if len(rows) == rows_per_group:
                    flush_rows()
                n_docs += 1
                n_empty += not doc
            if lines:
                jsonl.write(("\n".join(lines) + "\n").encode())
        if rows:
            flush_rows()
        cut.close()
    if original.digest() != rejoined.digest():
        shutil.rmtree(tmp)
        raise SystemExit(f"{corpus}: documents joined with {EOT} differ from the corpus bytes")
    manifest = {
        "corpus": str(Path(corpus).resolve()),
        "corpus_size": size,
        "corpus_mtime_ns": os.stat(corpus).st_mtime_ns,
        "sha256": original.hexdigest(),
        "documents": n_docs,
        "empty_documents": n_empty,
        "joined_equals_corpus": True,
        "row_groups": pq.ParquetFile(tmp / FILES["parquet"]).num_row_groups,
        "shard_files": cut.n,
        "options": _options(shards, rows_per_group, compression),
        "build_s": round(time.perf_counter() - t0, 2),
    }
    with open(tmp / MANIFEST, "w") as f:  # written last: its presence marks a complete build
        json.dump(manifest, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    return manifest


def ensure(
    corpus: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    shards: int = 8,
    rows_per_group: int = 1000,
    compression: str = "snappy",
    force: bool = False,
) -> tuple[Path, dict, bool]:
    """The formats folder of `corpus`, built first if stale; also its manifest and whether it
    was built just now."""
    folder = formats_dir(corpus, out)
    options = _options(shards, rows_per_group, compression)
    if not force and is_fresh(corpus, folder, options):
        with open(folder / MANIFEST) as f:
            return folder, json.load(f), False
    folder.parent.mkdir(parents=True, exist_ok=True)
    return folder, build(corpus, folder, shards, rows_per_group, compression), True


def disk_size(path: Path) -> int:
    """Bytes of a file, or of all files in a folder."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def main(argv=None) -> int:
    corpora = [str(common.CORPUS_DIR / "small.txt"), str(common.CORPUS_DIR / "large.txt")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="*", default=corpora, type=common.corpus_path)
    ap.add_argument("--out", help="output folder (one corpus only); default formats/<stem>/")
    ap.add_argument("--shards", type=int, default=8, help="number of plain-text shards")
    ap.add_argument("--rows-per-group", type=int, default=1000, help="Parquet rows per group")
    ap.add_argument("--compression", default="snappy", help="Parquet codec (pyarrow's default)")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = ap.parse_args(argv)
    if args.out and len(args.corpus) > 1:
        ap.error("--out takes one corpus")
    for corpus in args.corpus:
        t0 = time.perf_counter()
        folder, manifest, built = ensure(
            corpus,
            args.out,
            shards=args.shards,
            rows_per_group=args.rows_per_group,
            compression=args.compression,
            force=args.force,
        )
        how = f"built in {time.perf_counter() - t0:.1f} s" if built else "up to date"
        print(
            f"{corpus}: {manifest['documents']:,} documents ({manifest['empty_documents']} empty), "
            f"{manifest['row_groups']} row groups, {manifest['shard_files']} shards; "
            f"joined == corpus; {folder} {how}"
        )
        for fmt in FILES:
            path = input_path(corpus, fmt, args.out)
            print(f"  {fmt:10} {disk_size(path) / MB:10.2f} MB  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
