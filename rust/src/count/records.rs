//! Inputs made of records, each one document (a hard boundary, as a special token is): lines of
//! JSON, whose text field the workers parse out themselves (so parsing runs on every counting
//! thread, not on the reader), and the rows of an Arrow string column (`count_rows`). Reading
//! compressed files is `decoded`'s: the reader thread decompresses as it reads.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::workers::count_units;
use super::{CountConfig, CountError, Counter, WordCounts};

/// How a file's bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a name (`"gz"`, `"zst"`, or none) stands for.
    pub fn parse(name: Option<&str>) -> Option<Self> {
        match name {
            None => Some(Compression::None),
            Some("gz") => Some(Compression::Gzip),
            Some("zst") => Some(Compression::Zstd),
            Some(_) => None,
        }
    }
}

/// A reader of the decompressed bytes of `file`, and the count of the file's own bytes read
/// so far (progress is shown in the file's bytes). Concatenated gzip members and zstd frames
/// are read one after the other, as `zcat` and `zstdcat` do.
pub(super) fn decoded<'a>(
    file: impl Read + Send + 'a,
    compression: Compression,
) -> std::io::Result<(Box<dyn Read + Send + 'a>, Arc<AtomicU64>)> {
    let read = Arc::new(AtomicU64::new(0));
    let raw = Tally {
        inner: file,
        n: read.clone(),
    };
    let reader: Box<dyn Read + Send + 'a> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(
            std::io::BufReader::with_capacity(1 << 16, raw),
        )),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(raw)?),
    };
    Ok((reader, read))
}

/// A reader that counts the bytes it gives.
struct Tally<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Tally<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Counts the records of `chunk`, whole lines of JSON whose first is line `first_line` (1-based)
/// of the input: each record's `field` is one document; blank lines are skipped. Returns the
/// bytes of the records' texts (what the input holds as text, without its JSON).
pub(super) fn count_lines(
    counter: &mut Counter,
    chunk: &str,
    first_line: u64,
    (config, field): (&CountConfig, &str),
    stop: &AtomicBool,
) -> Result<u64, RecordError> {
    let mut n_bytes = 0;
    for (i, line) in chunk.split('\n').enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        let at = first_line + i as u64;
        let text = field_of(line, field).map_err(|message| RecordError::Line(at, message))?;
        n_bytes += text.len() as u64;
        counter
            .add_document(&text, config, stop)
            .map_err(RecordError::Count)?;
    }
    Ok(n_bytes)
}

/// Why a record could not be counted: a bad line (its number, what is wrong), or counting failed.
pub(super) enum RecordError {
    Line(u64, String),
    Count(CountError),
}

/// The string value of `field` in the JSON object `line` (the last, if the key repeats, as in
/// Python's `json.loads`), borrowed when it has no escapes; else what is wrong, for the user.
pub(crate) fn field_of<'a>(line: &'a str, field: &str) -> Result<Cow<'a, str>, String> {
    match parse_field(line, field) {
        // serde_json refuses a lone surrogate; Python's json.loads keeps it and the encoder
        // then makes it U+FFFD, as training does here
        Err(e) if e.starts_with("not valid JSON") => match without_lone_surrogates(line) {
            Some(fixed) => parse_field(&fixed, field).map(|t| Cow::Owned(t.into_owned())),
            None => Err(e),
        },
        found => found,
    }
}

/// `line` with each `\uXXXX` escape of a lone surrogate written as `\ufffd` (None if it has
/// none); escaped backslashes are skipped as such.
fn without_lone_surrogates(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let digits = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    };
    // a `\uXXXX` escape at `at`, and its value
    let escape = |at: usize| {
        (b.get(at..at + 2) == Some(b"\\u"))
            .then(|| hex(at + 2))
            .flatten()
    };
    let (mut out, mut last, mut i, mut changed) = (String::new(), 0, 0, false);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape(i) {
            Some(0xD800..=0xDBFF) if matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) => {
                i += 12; // a pair: one character
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str(&line[last..i]);
                out.push_str("\\ufffd");
                (i, last, changed) = (i + 6, i + 6, true);
            }
            _ => i += 2, // another escape (or `\\`): its next character is not an escape
        }
    }
    out.push_str(&line[last..]);
    changed.then_some(out)
}

fn parse_field<'a>(line: &'a str, field: &str) -> Result<Cow<'a, str>, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let found = FieldSeed { name: field }
        .deserialize(&mut de)
        .and_then(|found| de.end().map(|()| found));
    match found {
        Ok(Found::Text(text)) => Ok(text),
        Ok(Found::Missing(keys)) => Err(format!(
            "the record has no field {field:?} (its fields: {}; choose one with --jsonl-field / \
             jsonl_field=)",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        )),
        Ok(Found::NotText(kind)) => Err(format!("field {field:?} is {kind}, not a string")),
        Ok(Found::NotObject) => Err("the line is not a JSON object".to_string()),
        Err(e) => Err(format!("not valid JSON ({e})")),
    }
}

enum Found<'a> {
    Text(Cow<'a, str>),
    NotText(&'static str),
    /// The first keys of the object, quoted.
    Missing(Vec<String>),
    NotObject,
}

/// Finds one field of an object, skipping every other value unparsed into Rust values.
struct FieldSeed<'f> {
    name: &'f str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Found<'de>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Found<'de>, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let mut found = None;
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == self.name {
                found = Some(map.next_value_seed(ValueSeed)?);
            } else {
                if keys.len() < 10 {
                    keys.push(format!("{key:?}"));
                }
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or(Found::Missing(keys)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Found<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found::NotObject)
    }
    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_str<E>(self, _: &str) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
    fn visit_unit<E>(self) -> Result<Found<'de>, E> {
        Ok(Found::NotObject)
    }
}

/// The value of the wanted field: a string (borrowed when it has no escapes), or its kind.
struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Found<'de>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Found<'de>, D::Error> {
        de.deserialize_any(ValueSeed)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Found<'de>, E> {
        Ok(Found::Text(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Found<'de>, E> {
        Ok(Found::Text(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Found<'de>, E> {
        Ok(Found::Text(Cow::Owned(s)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Found::NotText("an object"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Found<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found::NotText("a list"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Found<'de>, E> {
        Ok(Found::NotText("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Found<'de>, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Found<'de>, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Found<'de>, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_unit<E>(self) -> Result<Found<'de>, E> {
        Ok(Found::NotText("null"))
    }
}

/// A column of Arrow strings: row `i` is `data[offsets[i]..offsets[i + 1]]`.
pub type Column<'a> = (&'a [i64], &'a [u8]);

/// Rows of text taken by a worker at a time (about; a row is never split).
const UNIT_BYTES: i64 = 1 << 20;

/// Counts the rows of Arrow string columns (rows numbered on from column to column), each row
/// one document, on `config.num_threads` threads that take about `UNIT_BYTES` of rows at a
/// time, into `into` (in place, as `count_file` does). Several columns in one call: one call
/// per Parquet row group started threads too often, and joining the columns into one cost a
/// copy of every byte (page faults on fresh memory made that as slow as reading the file).
/// Offsets must rise within their data; a row that is not UTF-8 is an error naming it
/// (`CountError::Row`, rows counted from 0).
pub fn count_rows(
    columns: &[Column<'_>],
    config: &CountConfig,
    into: &mut WordCounts,
) -> Result<(), CountError> {
    let mut units = Vec::new(); // (column, first row, end row)
    let mut first_row = 0; // of the column, counted over all columns
    let mut firsts = Vec::with_capacity(columns.len());
    for (c, &(offsets, data)) in columns.iter().enumerate() {
        let n_rows = offsets.len().saturating_sub(1);
        for (i, w) in offsets.windows(2).enumerate() {
            if w[0] < 0 || w[1] < w[0] || w[1] as u64 > data.len() as u64 {
                let row = (first_row + i) as u64;
                return Err(CountError::Row {
                    row,
                    problem: "offsets outside the data",
                });
            }
        }
        let mut lo = 0;
        while lo < n_rows {
            let target = offsets[lo] + UNIT_BYTES;
            let hi = offsets
                .partition_point(|&o| o < target)
                .clamp(lo + 1, n_rows);
            units.push((c, lo, hi));
            lo = hi;
        }
        firsts.push(first_row);
        first_row += n_rows;
    }
    count_units(
        units.len(),
        config.num_threads,
        into,
        |counter, unit, stop| {
            let (c, lo, hi) = units[unit];
            let (offsets, data) = columns[c];
            for row in lo..hi {
                let bytes = &data[offsets[row] as usize..offsets[row + 1] as usize];
                let text = simdutf8::basic::from_utf8(bytes).map_err(|_| CountError::Row {
                    row: (firsts[c] + row) as u64,
                    problem: "not valid UTF-8",
                })?;
                counter.add_document(text, config, stop)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_of_reads_json_as_python_does() {
        assert_eq!(field_of(r#"{"text": "a b"}"#, "text").unwrap(), "a b");
        assert_eq!(
            field_of(
                r#"{"id": 1, "text": "a\nb\u00e9\ud83d\ude00", "m": {"x": [1]}}"#,
                "text"
            )
            .unwrap(),
            "a\nbé😀"
        );
        // the last of repeated keys, as json.loads keeps
        assert_eq!(field_of(r#"{"t": "a", "t": "b"}"#, "t").unwrap(), "b");
        assert!(field_of(r#"{"id": 1}"#, "text")
            .unwrap_err()
            .contains(r#"its fields: "id""#));
        assert!(field_of(r#"{"text": 3}"#, "text")
            .unwrap_err()
            .contains("a number, not a string"));
        assert!(field_of(r#"{"text": null}"#, "text")
            .unwrap_err()
            .contains("null"));
        assert!(field_of(r#"[1, 2]"#, "text")
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(field_of(r#"{"text": "a"} x"#, "text")
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(field_of(r#"{"text": "a"#, "text")
            .unwrap_err()
            .contains("not valid JSON"));
        // lone surrogates become U+FFFD, as json.loads and the encoder's check make them
        assert_eq!(
            field_of(r#"{"text": "a\ud800b\udc00\ud83d\ude00\\ud800"}"#, "text").unwrap(),
            "a\u{FFFD}b\u{FFFD}😀\\ud800"
        );
    }
}
