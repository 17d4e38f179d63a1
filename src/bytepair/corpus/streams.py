"""Byte streams of corpus encoding's inputs: files opened plain, `.gz` or `.zst`, counted and
hashed (sha256, as stored) while read; UTF-8 decoding as training does it; errors that name the
file and the byte offset. What the bytes mean (text, records) is `inputs.py`'s business; reading
ahead on another thread is `_background.py`'s.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from typing import TYPE_CHECKING, Any

from ..sources import InputError, Source, os_error, require

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class Hashing(io.RawIOBase):
    """A binary file that hashes (sha256) and counts every byte read from it."""

    def __init__(self, f: io.BufferedIOBase):
        self.f, self.sha, self.n = f, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        n = self.f.readinto(b)
        self.sha.update(memoryview(b)[:n])
        self.n += n
        return n

    def finish(self) -> str:
        """Reads whatever is left (a compressed stream may stop short) and returns the hash."""
        while self.read(1 << 20):
            pass
        return self.sha.hexdigest()


class _Zstd(io.RawIOBase):
    """The decompressed bytes of zstd frames. zstandard's `stream_reader` ends quietly at the end
    of a cut-off file; here a frame left unfinished there is an error."""

    def __init__(self, raw: Hashing, zstd: Any):
        self.raw, self.zstd = raw, zstd
        self.d, self.out, self.at = zstd.ZstdDecompressor().decompressobj(), b"", 0
        self.started = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        while self.at == len(self.out):
            chunk = self.raw.read(1 << 20)
            if not chunk:
                if self.started and not self.d.eof:
                    raise EOFError("the file ends inside a zstd frame (cut off?)")
                return 0
            self.started, self.out, self.at = True, self.d.decompress(chunk), 0
            while self.d.eof and self.d.unused_data:  # the next frame
                rest, self.d = self.d.unused_data, self.zstd.ZstdDecompressor().decompressobj()
                self.out += self.d.decompress(rest)
        view = memoryview(b)
        n = min(len(view), len(self.out) - self.at)
        view[:n] = self.out[self.at : self.at + n]
        self.at += n
        return n


class Stream:
    """The decompressed bytes of an input with their offset, errors named by file and offset."""

    def __init__(self, src: Source, skip: int):
        self.src, self.pos = src, 0
        try:
            self.raw = Hashing(open(src.path, "rb"))
        except OSError as e:
            raise os_error(e, f"cannot read {src.path}: {e.strerror}") from None
        self.f: gzip.GzipFile | io.BufferedReader
        if src.compression == "gz":
            self.f = gzip.GzipFile(fileobj=self.raw, mode="rb")
        elif src.compression == "zst":
            self.f = io.BufferedReader(_Zstd(self.raw, require("zst")), 1 << 20)
        else:
            self.f = io.BufferedReader(self.raw, 1 << 20)
        while self.pos < skip:  # resuming: re-read (and hash) what was done
            if not self.read(min(skip - self.pos, 1 << 22)):
                raise InputError(f"cannot resume: {src.path} is shorter than before")

    def _call(self, method: str, *args: int) -> Any:
        """`self.f.method(*args)`, its errors named by file (and offset)."""
        try:
            return getattr(self.f, method)(*args)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise self._corrupt(e) from None
        except OSError as e:
            raise os_error(e, f"cannot read {self.src.path}: {e.strerror or e}") from None
        except Exception as e:
            if type(e).__name__ == "ZstdError":
                raise self._corrupt(e) from None
            raise

    def _corrupt(self, e: Exception) -> InputError:
        what = {"gz": "gzip", "zst": "zstd"}[self.src.compression or "gz"]
        return InputError(
            f"{self.src.path}: corrupt {what} data at or after decompressed byte {self.pos:,} ({e})"
        )

    def read(self, n: int) -> bytes:
        data: bytes = self._call("read", n)
        self.pos += len(data)
        return data

    def readlines(self, hint: int) -> list[bytes]:
        lines: list[bytes] = self._call("readlines", hint)
        self.pos += sum(map(len, lines))
        return lines

    def close(self) -> dict[str, str | int]:
        """The input's size and sha256 (of the file as stored), after reading all of it."""
        digest = self.raw.finish()
        self.f.close()
        return {"path": str(self.src.path), "size": self.raw.n, "sha256": digest}


def decode(data: bytes, errors: str, where: str, offset: int) -> tuple[str, int]:
    """`data` as text and the number of invalid sequences replaced; `strict` fails naming the
    byte offset. Replacements are the U+FFFD made, less those written in the input."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError as e:
        if errors == "strict":
            raise invalid_utf8(where, offset + e.start) from None
    text = data.decode("utf-8", "replace")
    return text, text.count("\ufffd") - data.count(b"\xef\xbf\xbd")


def invalid_utf8(where: str, offset: int) -> InputError:
    return InputError(
        f"{where}: invalid UTF-8 at byte {offset:,} "
        f"(use --errors replace / errors='replace' to replace it with U+FFFD)"
    )


def complete(data: bytes) -> int:
    """Length of the longest prefix of `data` that does not end inside a UTF-8 sequence (the
    held-back tail starts at a lead byte, where a decoder is always at a boundary)."""
    for back in range(1, min(3, len(data)) + 1):
        b = data[-back]
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4 if b < 0xF8 else 1
            return len(data) - back if back < need else len(data)
        if b < 0x80:
            return len(data)
    return len(data)
