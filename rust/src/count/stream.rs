//! The reader: bytes read, decoded (invalid UTF-8 replaced or refused) and cut at safe cuts into
//! chunks (`read_chunks`), and the count of a stream, where one reader thread hands its chunks to
//! the workers (`count_stream`). Workers that read regions themselves are `regions.rs`'s.

use std::io::Read;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError};

use super::records::{count_lines, RecordError};
use super::workers::{guarded, join_workers, spawn_workers};
use super::{CountError, CountStats, Counter, Job};

/// Decodes `raw` into `out`, replacing each maximal invalid subsequence by U+FFFD (as Python's
/// `errors="replace"` does). Returns the number replaced, or the offset of the first invalid byte
/// when `strict`.
fn decode_into(raw: &[u8], out: &mut String, strict: bool) -> Result<u64, usize> {
    // valid text (nearly always) is checked at SIMD speed; std finds where it is not
    if let Ok(s) = simdutf8::basic::from_utf8(raw) {
        out.push_str(s);
        return Ok(0);
    }
    let mut rest = raw;
    let mut n_replaced = 0;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return Ok(n_replaced);
            }
            Err(e) => {
                let valid = e.valid_up_to();
                if strict {
                    return Err(raw.len() - rest.len() + valid);
                }
                // SAFETY-free: from_utf8 said the prefix is valid.
                out.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                out.push('\u{FFFD}');
                n_replaced += 1;
                let skip = e.error_len().unwrap_or(rest.len() - valid);
                rest = &rest[valid + skip..];
            }
        }
    }
}

/// Where raw bytes may be cut for decoding so that both sides decode as the whole would: before
/// the last byte that is not a continuation byte (0b10xxxxxx). Such a byte is never inside a
/// maximal subpart that began earlier, and begins its own. When it lies 5 or more bytes before
/// the end, the sequence it begins is over (at most 4 bytes) and the whole is cut; so are bytes
/// that are all continuations (each then is an invalid sequence of its own).
/// (Cutting only before ASCII, as before, never cut text with no ASCII, e.g. Chinese.)
fn decode_cut(raw: &[u8]) -> usize {
    match raw.iter().rposition(|&b| b & 0xc0 != 0x80) {
        Some(q) if raw.len() - q <= 4 => q,
        _ => raw.len(),
    }
}

/// Counts a stream (a pipe, or a file not cut in regions): one reader thread, this one, hands
/// chunks to `n_workers` workers. A failed worker raises a flag and drains the channel, so the
/// reader never blocks on it.
pub(super) fn count_stream(
    job: &Job<'_>,
    mut reader: impl Read,
    start: u64,
    n_workers: usize,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<CountStats, CountError> {
    let mut stats = CountStats::default();
    let failed = AtomicBool::new(false);
    let (tx, rx) = crossbeam_channel::bounded::<Chunk>(n_workers);
    std::thread::scope(|scope| {
        let workers = spawn_workers(scope, n_workers, || || count_chunks(&rx, job, &failed))?;
        // Sends a chunk, waiting while the channel is full but looking at `progress` every
        // `SEND_WAIT` (for Ctrl-C: a slow custom pattern can keep the workers busy for long).
        // Ok(false): a worker failed; its error is the one to report.
        let mut send = |mut chunk: Chunk,
                        n_read: u64,
                        progress: &mut dyn FnMut(u64) -> bool|
         -> Result<bool, ReadError> {
            loop {
                match tx.send_timeout(chunk, SEND_WAIT) {
                    Ok(()) => return Ok(!failed.load(Ordering::Relaxed)),
                    Err(SendTimeoutError::Disconnected(_)) => return Ok(false),
                    Err(SendTimeoutError::Timeout(back)) => chunk = back,
                }
                if failed.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                if !progress(n_read) {
                    return Err(ReadError::Interrupted);
                }
            }
        };
        let read = read_chunks(
            &mut reader,
            (job, start),
            &mut stats,
            progress,
            (&mut send, &failed),
        );
        if read.is_err() {
            failed.store(true, Ordering::Relaxed); // the workers skip what is queued
        }
        drop(tx);
        join_workers(workers, read.err().map(|e| job.error(e)))?;
        Ok(stats)
    })
}

pub(super) enum ReadError {
    Io(std::io::Error),
    InvalidUtf8(u64),
    Interrupted,
    OutOfMemory(usize),
    /// Counting a chunk failed.
    Count(CountError),
}

/// How long the reader waits at most on a full channel before it looks at `progress` again,
/// and how often `count_regions` reports progress.
/// (Polling every 0.2 ms made counting on 2 cores switch threads about 9 times as often; at
/// 20 ms counting is as fast as at 2 ms, within the noise of the measurement.)
pub(super) const SEND_WAIT: Duration = Duration::from_millis(20);

/// What `read_chunks` does with a chunk: (chunk, bytes read so far, progress) -> go on (false:
/// stop quietly, another thread reports why), or an error.
pub(super) type Deliver<'a> =
    dyn FnMut(Chunk, u64, &mut dyn FnMut(u64) -> bool) -> Result<bool, ReadError> + 'a;

/// A piece of the input's text (decoded UTF-8), cut where counting may cut: at a safe cut, or
/// for JSON lines after a line's end; `first_line` (1-based) is the line it starts on, in JSON
/// lines.
pub(super) struct Chunk {
    pub bytes: Vec<u8>,
    pub first_line: u64,
}

/// Reads, decodes and cuts the input (which starts at byte `start` of the file) into chunks,
/// delivering each; stops early (without error) once `failed` is raised or `deliver` says so.
pub(super) fn read_chunks(
    reader: &mut impl Read,
    (job, start): (&Job<'_>, u64),
    stats: &mut CountStats,
    progress: &mut dyn FnMut(u64) -> bool,
    (deliver, failed): (&mut Deliver<'_>, &AtomicBool),
) -> Result<(), ReadError> {
    let (config, chunk_size) = (job.config, job.chunk_size);
    let lines = config.json_field.is_some();
    // Decoded text, then the bytes read but not decoded yet (held back at a sequence that may
    // go on). Read into the same buffer the text is handed on in: a copy of every byte fewer
    // (copies were 8% of counting compressed JSON lines, perf).
    let mut buf: Vec<u8> = Vec::new();
    let mut valid = 0; // bytes of `buf` decoded
    let mut target = chunk_size;
    let mut decoded_upto = start;
    let mut line = 1; // the line `buf` starts on (JSON lines)
                      // progress in the file's bytes (compressed, when it is)
    let done = |stats: &CountStats| job.file_read.map_or(stats.n_bytes, |n| n.load(Relaxed));
    loop {
        if failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        buf.try_reserve(chunk_size)
            .map_err(|_| ReadError::OutOfMemory(chunk_size))?;
        // into the spare capacity, not zeroed first (zeroing was 3% of counting's instructions)
        let n = read_full(reader, &mut buf, chunk_size).map_err(ReadError::Io)?;
        stats.n_bytes += n as u64;
        let eof = n == 0;
        let cut = valid
            + if eof {
                buf.len() - valid
            } else {
                decode_cut(&buf[valid..])
            };
        let (end, n_replaced) = decode_in_place(&mut buf, valid..cut, config.strict)
            .map_err(|off| ReadError::InvalidUtf8(decoded_upto + off as u64))?;
        stats.n_replaced += n_replaced;
        decoded_upto += (cut - valid) as u64;
        valid = end;
        if eof {
            if !buf.is_empty() {
                stats.add_chunk(buf.len());
                let chunk = Chunk {
                    bytes: buf,
                    first_line: line,
                };
                deliver(chunk, done(stats), progress)?;
            }
            progress(done(stats));
            return Ok(());
        }
        // (with the bytes held back for decoding: counting only the text, which always lacks
        // the last byte read, a region's first chunk took two reads, twice the chunk size)
        if buf.len() >= target {
            // (JSON lines are cut after a newline byte: no need to see the text as `str`)
            let cut = if lines {
                memchr::memrchr(b'\n', &buf[..valid]).map(|p| p + 1)
            } else {
                let text = text_of(&buf[..valid]).map_err(ReadError::Count)?;
                config.specials.safe_cut(text, &config.pretok)
            };
            match cut {
                Some(p) => {
                    let mut rest = Vec::new();
                    rest.try_reserve(buf.len() - p + chunk_size)
                        .map_err(|_| ReadError::OutOfMemory(chunk_size))?;
                    rest.extend_from_slice(&buf[p..]);
                    buf.truncate(p);
                    valid -= p;
                    stats.add_chunk(p);
                    let first_line = line;
                    if lines {
                        line += buf.iter().filter(|&&b| b == b'\n').count() as u64;
                    }
                    let chunk = Chunk {
                        bytes: std::mem::replace(&mut buf, rest),
                        first_line,
                    };
                    if !deliver(chunk, done(stats), progress)? {
                        return Ok(()); // another thread failed; its error is reported
                    }
                    target = chunk_size;
                }
                // No cut yet (one long word, or line): wait for twice the text, so rescans
                // stay linear.
                None => target = 2 * valid,
            }
        }
        if !progress(done(stats)) {
            return Err(ReadError::Interrupted);
        }
    }
}

/// Decodes `buf[range]` where it lies (invalid sequences replaced, or the offset of the first
/// in `range` when `strict`); returns where the decoded text now ends and how many were
/// replaced. Valid text (nearly always) is only checked, at SIMD speed.
fn decode_in_place(
    buf: &mut Vec<u8>,
    range: std::ops::Range<usize>,
    strict: bool,
) -> Result<(usize, u64), usize> {
    if simdutf8::basic::from_utf8(&buf[range.clone()]).is_ok() {
        return Ok((range.end, 0));
    }
    let mut fixed = String::new();
    let n_replaced = decode_into(&buf[range.clone()], &mut fixed, strict)?;
    let end = range.start + fixed.len();
    buf.splice(range, fixed.into_bytes());
    Ok((end, n_replaced))
}

/// Text that the reader decoded, as `&str` (checked again, at SIMD speed: a failure is a bug).
pub(super) fn text_of(bytes: &[u8]) -> Result<&str, CountError> {
    simdutf8::basic::from_utf8(bytes)
        .map_err(|_| CountError::Internal("a chunk of decoded text is not UTF-8".into()))
}

/// Appends up to `n` bytes of `reader` to `buf`, fewer only at the end of the input; returns
/// how many. `read_to_end` retries reads that were interrupted and reads into the vector's
/// spare capacity (which the caller reserved) without zeroing it.
fn read_full(reader: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> std::io::Result<usize> {
    reader.take(n as u64).read_to_end(buf)
}

/// Counts one chunk: a document, or lines of JSON records.
pub(super) fn count_chunk(
    counter: &mut Counter,
    chunk: &Chunk,
    job: &Job<'_>,
    stop: &AtomicBool,
) -> Result<(), CountError> {
    let text = text_of(&chunk.bytes)?;
    let Some(field) = &job.config.json_field else {
        return counter.add_document(text, job.config, stop);
    };
    let found = count_lines(counter, text, chunk.first_line, (job.config, field), stop);
    let n_bytes = found.map_err(|e| match e {
        RecordError::Line(line, message) => CountError::Record {
            path: job.path.to_owned(),
            line,
            message,
        },
        RecordError::Count(e) => e,
    })?;
    job.record_bytes.fetch_add(n_bytes, Ordering::Relaxed);
    Ok(())
}

/// A worker: counts chunks from the channel until it closes. After a failure (its own or
/// another's) it only drains the channel, so that the reader never waits on a full one.
fn count_chunks(
    rx: &Receiver<Chunk>,
    job: &Job<'_>,
    failed: &AtomicBool,
) -> Result<(), CountError> {
    let result = guarded(failed, || {
        let mut counter = Counter::sharing(job.shared);
        for chunk in rx {
            if !failed.load(Ordering::Relaxed) {
                count_chunk(&mut counter, &chunk, job, failed)?;
            }
        }
        Ok(counter.finish()?)
    });
    if result.is_err() {
        rx.iter().for_each(drop); // so that the reader never blocks on a full channel
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_replaces_maximal_subparts() {
        let mut out = String::new();
        let n = decode_into(b"a\xffb\xe2\x82c\xf0\x9f\x99", &mut out, false).unwrap();
        assert_eq!(out, "a\u{FFFD}b\u{FFFD}c\u{FFFD}");
        assert_eq!(n, 3);
        assert_eq!(decode_into(b"ab\xff", &mut String::new(), true), Err(2));
    }

    #[test]
    fn decoding_in_pieces_equals_decoding_whole() {
        let samples: [&[u8]; 4] = [
            "我们。你好 ab".as_bytes(),
            b"\xe4\xb8\xe4\xbd\xa0\x80\x80\x80\x80\x80\xf0\x9f\x99\x83\xed\xa0\x80",
            b"\x80\x80\xf0\x9f\x99\xc0\xc1\xf5\xff",
            "\u{10ffff}é\u{7ff}\u{800}".as_bytes(),
        ];
        for data in samples {
            let mut whole = String::new();
            decode_into(data, &mut whole, false).unwrap();
            for step in 1..=5 {
                // feed `step` bytes at a time, as the reader does, cutting where decode_cut says
                let (mut raw, mut text) = (Vec::new(), String::new());
                for piece in data.chunks(step) {
                    raw.extend_from_slice(piece);
                    let cut = decode_cut(&raw);
                    decode_into(&raw[..cut], &mut text, false).unwrap();
                    raw.drain(..cut);
                }
                decode_into(&raw, &mut text, false).unwrap();
                assert_eq!(text, whole, "{data:?} in steps of {step}");
                // and in place, as the reader does: decoded text, then bytes held back
                let (mut buf, mut valid) = (Vec::new(), 0);
                for piece in data.chunks(step) {
                    buf.extend_from_slice(piece);
                    let cut = valid + decode_cut(&buf[valid..]);
                    valid = decode_in_place(&mut buf, valid..cut, false).unwrap().0;
                }
                let end = buf.len();
                decode_in_place(&mut buf, valid..end, false).unwrap();
                assert_eq!(buf, whole.as_bytes(), "{data:?} in place, steps of {step}");
            }
        }
    }
}
