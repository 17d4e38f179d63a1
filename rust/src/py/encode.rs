//! Bindings of the encoder: the `Encoder` class (ids as lists or numpy arrays, one text or a
//! batch, a stream's prefix, decoding) and corpus encoding of a block of bytes. Encoding is
//! `encode`'s; what is left here is converting arguments and results, and the GIL.

use std::sync::{Mutex, OnceLock};

use numpy::PyArray1;
use pyo3::exceptions::{PyRuntimeError, PyUnicodeDecodeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::errors::{encode_err, too_wide};
use super::ffi;
use super::pretokenize::pretokenizer_of;
use super::progress::interruptible;
use crate::encode::{self, BatchIds, BatchTexts, EncodeError, Encoder, RunPiece, SpecialSet};
use crate::normalize::Normalization;
use crate::pretokenize::Added;
use crate::types::TokenId;

/// Texts up to this many bytes are encoded with the GIL held (see `PyEncoder::encode_vec`):
/// a few microseconds warm, under a millisecond with every pretoken new.
const SHORT_TEXT: usize = 4096;

/// A keyword argument of `encode`: not given, or given (None too, which the general path in
/// Python refuses). Named parameters, not `**options`: with those PyO3 took the call as a tuple
/// and a dict instead of a vector call (~25 ns of a 100-byte call).
enum Given<'py> {
    No,
    Yes(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Given<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Given::Yes(obj.to_owned()))
    }
}

/// A byte-level BPE encoder with all its tables built once (see `encode.rs`). Python's
/// `Tokenizer` is its subclass, so that `Tokenizer.encode` and `encode_ordinary` are the native
/// methods below: a short text's call then runs no Python code (a Python method in front was
/// ~90 ns of a 100-byte call's ~590). The other methods, named with an underscore, take the
/// special tokens already decided by Python's policy. It is made empty and built once by
/// `_build` (from `Tokenizer.__init__`), so that Python subclasses construct as any class does.
#[pyclass(name = "Encoder", module = "bytepair._core", frozen, subclass)]
pub struct PyEncoder {
    core: OnceLock<Core>,
    /// A Python int for every id, made on first use: a list of ids then costs a reference
    /// count per id instead of an allocation (building ints was ~35% of `encode`'s time).
    ints: OnceLock<Vec<Py<PyAny>>>,
}

/// What `_build` makes.
struct Core {
    inner: Encoder,
    /// The set of no special tokens (`encode_ordinary`), made once.
    no_specials: Option<SpecialSet>,
}

/// The special tokens a call matches: the encoder's own set, or one made for the call.
enum Chosen<'a> {
    Kept(&'a Option<SpecialSet>),
    Made(Option<SpecialSet>),
}

impl std::ops::Deref for Chosen<'_> {
    type Target = Option<SpecialSet>;
    fn deref(&self) -> &Self::Target {
        match self {
            Chosen::Kept(set) => set,
            Chosen::Made(set) => set,
        }
    }
}

#[pymethods]
impl PyEncoder {
    /// An encoder not yet built: a subclass's constructor arguments are its own business.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyEncoder {
            core: OnceLock::new(),
            ints: OnceLock::new(),
        }
    }

    /// Builds the encoder's tables, once. `bpe`: "gpt2" (rounds of the lowest pair), "hf" (one
    /// pair at a time) or "tiktoken" (ids are ranks, every split of a token merges: `merges` are
    /// then not used); `whole`: a pretoken that is a token is that token; `normalization`: "NFC"
    /// or "NFKC" before pretokenizing; `match_specials`: false matches only special tokens a
    /// call names; `added`: each special token's HF options `(lstrip, rstrip, single_word,
    /// normalized)`, in their order, or empty.
    #[pyo3(signature = (vocab, merges, special_tokens, pattern, *, bpe = "gpt2", whole = false, normalization = None, match_specials = true, added = Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn _build(
        &self,
        py: Python<'_>,
        vocab: Vec<(TokenId, Vec<u8>)>,
        merges: Vec<(Vec<u8>, Vec<u8>)>,
        special_tokens: Vec<(String, TokenId)>,
        pattern: &Bound<'_, PyAny>,
        bpe: &str,
        whole: bool,
        normalization: Option<&str>,
        match_specials: bool,
        added: Vec<(bool, bool, bool, bool)>,
    ) -> PyResult<()> {
        if self.core.get().is_some() {
            return Err(PyRuntimeError::new_err("the tokenizer is already built"));
        }
        let normalization = match normalization {
            None => None,
            Some(name) => Some(Normalization::parse(name).ok_or_else(|| {
                PyValueError::new_err(format!("normalization must be NFC or NFKC, got {name:?}"))
            })?),
        };
        let ranks = match bpe {
            "gpt2" | "hf" => encode::Ranks::Listed,
            "tiktoken" => encode::Ranks::ById,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "bpe must be 'gpt2', 'hf' or 'tiktoken', got {bpe:?}"
                )))
            }
        };
        let rule = encode::Rule {
            ranks,
            whole: whole || bpe == "tiktoken",
            normalization,
            match_specials,
            one_at_a_time: bpe != "gpt2",
            added: added
                .into_iter()
                .map(|(lstrip, rstrip, single_word, normalized)| Added {
                    lstrip,
                    rstrip,
                    single_word,
                    normalized,
                })
                .collect(),
        };
        let pretok = pretokenizer_of(pattern)?;
        let inner = py
            .detach(|| Encoder::with_rule(vocab, merges, special_tokens, pretok, rule))
            .map_err(encode_err)?;
        let no_specials = inner.special_set(Some(&[])).map_err(encode_err)?;
        self.core
            .set(Core { inner, no_specials })
            .map_err(|_| PyRuntimeError::new_err("the tokenizer is already built"))
    }

    /// Whether every listed merge makes its token after the merges of its parts (then GPT-2's
    /// order and one pair at a time give the same ids).
    fn _merges_grow(&self) -> PyResult<bool> {
        Ok(self.inner()?.merges_grow)
    }

    /// How many tokens a pretoken equal to one is taken whole as, where its merges would make
    /// other ids (`whole` of `_build`): 0 means taking them whole changes nothing.
    fn _n_whole(&self) -> PyResult<usize> {
        Ok(self.inner()?.whole.len())
    }

    /// Ids of `text`. By default every special token of the tokenizer is matched (CS336);
    /// tiktoken's strict default is `allowed_special=set(), disallowed_special="all"`;
    /// `add_special_tokens=True` wraps the ids in the template's (transformers' flag).
    #[pyo3(
        signature = (
            text, *, allowed_special = Given::No, disallowed_special = Given::No,
            add_special_tokens = Given::No
        ),
        text_signature = "($self, text, *, allowed_special='all', disallowed_special=(), add_special_tokens=False)"
    )]
    fn encode<'py>(
        slf: &Bound<'py, Self>,
        text: &Bound<'py, PyAny>,
        allowed_special: Given<'py>,
        disallowed_special: Given<'py>,
        add_special_tokens: Given<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if let (Given::No, Given::No, Given::No) =
            (&allowed_special, &disallowed_special, &add_special_tokens)
        {
            if let Some(ids) = slf.get().try_str(py, text, &None) {
                return ids;
            }
        }
        let options = PyDict::new(py);
        for (name, option) in [
            ("allowed_special", allowed_special),
            ("disallowed_special", disallowed_special),
            ("add_special_tokens", add_special_tokens),
        ] {
            if let Given::Yes(value) = option {
                options.set_item(name, value)?;
            }
        }
        slf.call_method(intern!(py, "_encode_options"), (text,), Some(&options))
    }

    /// Ids of `text` with special-token text encoded as plain text.
    fn encode_ordinary<'py>(
        slf: &Bound<'py, Self>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        match me.try_str(slf.py(), text, &me.core()?.no_specials) {
            Some(ids) => ids,
            None => slf.call_method1(intern!(slf.py(), "_encode_ordinary_mended"), (text,)),
        }
    }

    /// Ids of `text`; `allowed_special` None means all special tokens are matched.
    #[pyo3(name = "_encode", signature = (text, allowed_special=None))]
    fn encode_with<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let set = self.set(allowed_special)?;
        let ids = self.encode_vec(py, text, &set)?;
        self.to_list(py, &ids)
    }

    /// The same ids as `encode`, as a numpy array (uint16 when `small`, else uint32).
    #[pyo3(signature = (text, allowed_special=None, small=false))]
    #[pyo3(name = "_encode_to_numpy")]
    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
        small: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let set = self.set(allowed_special)?;
        if !small {
            let ids = self.encode_vec(py, text, &set)?;
            return Ok(array(py, ids).into_any());
        }
        if text.len() <= crate::encode::CHECK_EVERY {
            // a document: its u32 ids narrowed straight into the array (~5% of a 13 KB
            // document's time went to a uint16 vector and its copy into numpy)
            let ids = self.encode_vec(py, text, &set)?;
            if let Some(id) = encode::first_wide(&ids) {
                return Err(too_wide(id));
            }
            return ffi::u16_array(py, &ids);
        }
        // uint16 straight from each piece's ids (`Encoder::encode_u16`)
        let inner = self.inner()?;
        let (narrow, too_large) = interruptible(py, |check| inner.encode_u16(text, &set, check))?;
        if let Some(id) = too_large {
            return Err(too_wide(id));
        }
        Ok(array(py, narrow).into_any())
    }

    /// Ids of each text, on `num_threads` threads. The texts are borrowed, not copied (but see
    /// `PyTexts`). Each run's lists are made by the worker that encoded it, with the GIL, while
    /// the others encode on; those of texts cut into pieces, after the batch.
    #[pyo3(signature = (texts, allowed_special=None, num_threads=1))]
    #[pyo3(name = "_encode_batch")]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let finish = |ids: &[TokenId], pieces: &[RunPiece]| {
            Python::attach(|py| {
                let mut at = 0;
                pieces
                    .iter()
                    .map(|&(_, n, whole)| {
                        let part = &ids[at..at + n];
                        at += n;
                        match whole {
                            true => self.to_list(py, part).map(|l| Some(l.unbind())),
                            false => Ok(None),
                        }
                    })
                    .collect::<PyResult<Vec<_>>>()
            })
        };
        let mut all = self.batch(py, texts, allowed_special, num_threads, &finish)?;
        let mut made: Vec<Option<Py<PyList>>> = (0..all.n_texts).map(|_| None).collect();
        let mut pieces = all.pieces.iter();
        for lists in std::mem::take(&mut all.finished) {
            // a run's lists first: `zip` takes from its left side first, so the pieces of the
            // next run stay
            for (list, &(i, _)) in lists?.into_iter().zip(pieces.by_ref()) {
                // None for each piece of a text that was cut: its list is made below
                if list.is_some() {
                    made[i] = list;
                }
            }
        }
        let lists = made
            .into_iter()
            .zip(all.texts())
            .map(|(list, ids)| match list {
                Some(list) => Ok(list.into_bound(py)),
                None => self.to_list(py, &ids),
            })
            .collect::<PyResult<Vec<_>>>()?;
        self.inner()?.give_back_ids(all.runs);
        PyList::new(py, lists)
    }

    /// The ids of every text in one flat array (uint16 when `small`, else uint32) and the
    /// offsets where each text's ids start (uint64, one more than the texts: the end).
    #[pyo3(signature = (texts, allowed_special=None, num_threads=1, small=false))]
    #[pyo3(name = "_encode_batch_to_numpy")]
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
        small: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>)> {
        let all = self.batch(py, texts, allowed_special, num_threads, &|_, _| ())?;
        flatten(py, self.inner()?, all, small, num_threads)
    }

    /// Encodes the longest prefix of `text` whose ids cannot change with more text (all of it if
    /// `last`); returns the ids and the prefix length in characters (0 when more text is needed).
    #[pyo3(signature = (text, allowed_special=None, last=false))]
    #[pyo3(name = "_encode_prefix")]
    fn encode_prefix<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: Option<Vec<String>>,
        last: bool,
    ) -> PyResult<(Bound<'py, PyList>, usize)> {
        let (set, inner) = (self.set(allowed_special)?, self.inner()?);
        let (ids, n_chars) = py
            .detach(|| {
                let (ids, n_bytes) = inner.encode_prefix(text, &set, last)?;
                Ok((ids, text[..n_bytes].chars().count()))
            })
            .map_err(encode_err)?;
        // the cached ints: a new int per id was a sixth of a stream's time
        Ok((self.to_list(py, &ids)?, n_chars))
    }

    /// The bytes of `ids`, concatenated; an unknown id raises KeyError.
    #[pyo3(name = "_decode_bytes")]
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<TokenId>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner()?;
        let bytes = py.detach(|| inner.decode_bytes(&ids)).map_err(encode_err)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// `v` as a numpy array: a copy into numpy's own memory when short, else `v`'s memory
/// itself. Why: an array over a Rust vector keeps a holder object that Python's cyclic garbage
/// collector tracks, and a per-document loop keeping its arrays then ran a collection every
/// ~700 calls (6% of its time, perf); copying a long one would cost more than that.
fn array<T: numpy::Element>(py: Python<'_>, v: Vec<T>) -> Bound<'_, PyArray1<T>> {
    match v.len() {
        0..=65536 => PyArray1::from_slice(py, &v),
        _ => PyArray1::from_vec(py, v),
    }
}

impl PyEncoder {
    /// Encodes a batch with the GIL released, stopping on Ctrl-C between groups of texts;
    /// `finish` as in `Encoder::encode_batch_with`.
    fn batch<T: Send>(
        &self,
        py: Python<'_>,
        texts: Vec<Py<PyString>>,
        allowed_special: Option<Vec<String>>,
        num_threads: usize,
        finish: &(dyn Fn(&[TokenId], &[RunPiece]) -> T + Sync),
    ) -> PyResult<BatchIds<T>> {
        let (set, inner) = (self.set(allowed_special)?, self.inner()?);
        let texts = PyTexts::new(py, texts)?;
        let result = interruptible(py, |check| {
            inner.encode_batch_with(&texts, &set, num_threads, check, finish)
        });
        match texts.error.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => result,
        }
    }

    /// The ids of `text` as a list, or None when `text` is not a str or has lone surrogates,
    /// for the caller's Python to say what is wrong or mend it (`Tokenizer`'s general path).
    fn try_str<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
        set: &Option<SpecialSet>,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let text = text.cast::<PyString>().ok()?.to_str().ok()?;
        Some(
            self.encode_vec(py, text, set)
                .and_then(|ids| self.to_list(py, &ids))
                .map(Bound::into_any),
        )
    }

    /// `ids` as a Python list of ints, from the cached ints.
    fn to_list<'py>(&self, py: Python<'py>, ids: &[TokenId]) -> PyResult<Bound<'py, PyList>> {
        let n_ids = self.inner()?.n_ids() as u64;
        let ints = self.ints.get_or_init(|| {
            (0..n_ids)
                .map(|i| {
                    i.into_pyobject(py)
                        .map_or_else(|e| match e {}, |o| o.unbind().into_any())
                })
                .collect()
        });
        ffi::list_of(py, ids, |&id| match ints.get(id as usize) {
            Some(int) => Ok(int.clone_ref(py).into_bound(py)),
            None => Ok(id.into_pyobject(py)?.into_any()),
        })
    }

    /// Encodes with the GIL released, stopping on Ctrl-C (checked every `CHECK_EVERY` bytes);
    /// a text of up to `SHORT_TEXT` bytes with the GIL held and no Ctrl-C check, as it takes
    /// microseconds: releasing and taking back the GIL, and the clock of the check, were a
    /// fifth of a 100-byte call.
    fn encode_vec(
        &self,
        py: Python<'_>,
        text: &str,
        set: &Option<SpecialSet>,
    ) -> PyResult<Vec<TokenId>> {
        let inner = self.inner()?;
        if text.len() <= SHORT_TEXT {
            return inner.encode(text, set).map_err(encode_err);
        }
        interruptible(py, |check| inner.encode_checked(text, set, check))
    }

    fn set(&self, allowed: Option<Vec<String>>) -> PyResult<Chosen<'_>> {
        let core = self.core()?;
        if allowed.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Chosen::Kept(&core.no_specials));
        }
        let set = core.inner.special_set(allowed.as_deref());
        Ok(Chosen::Made(set.map_err(encode_err)?))
    }

    /// The built tables; an error before `_build` (a subclass whose `__init__` skipped it).
    fn core(&self) -> PyResult<&Core> {
        self.core.get().ok_or_else(|| {
            PyRuntimeError::new_err("the tokenizer is not built: Tokenizer.__init__ did not run")
        })
    }

    fn inner(&self) -> PyResult<&Encoder> {
        Ok(&self.core()?.inner)
    }
}

/// The strings of a batch, each one's UTF-8 got by the worker thread that encodes it, under
/// the GIL (`BatchTexts`): CPython makes (and keeps in the string) a UTF-8 copy of a non-ASCII
/// string, and made up front for the whole batch on the calling thread, those copies left the
/// other cores idle. Holds a reference to each string: what `get` returns lives as long.
struct PyTexts {
    strings: Vec<Py<PyString>>,
    /// Each string's length in characters.
    sizes: Vec<usize>,
    /// Why a string had no UTF-8 (a lone surrogate: UnicodeEncodeError), for the caller.
    error: Mutex<Option<PyErr>>,
}

impl PyTexts {
    fn new(py: Python<'_>, strings: Vec<Py<PyString>>) -> PyResult<Self> {
        let sizes = strings
            .iter()
            .map(|s| s.bind(py).len())
            .collect::<PyResult<_>>()?;
        Ok(PyTexts {
            strings,
            sizes,
            error: Mutex::new(None),
        })
    }
}

impl BatchTexts for PyTexts {
    fn count(&self) -> usize {
        self.strings.len()
    }

    fn size(&self, i: usize) -> usize {
        self.sizes[i]
    }

    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
        Python::attach(|py| {
            self.strings[range]
                .iter()
                .map(|s| {
                    // alive as long as `self`, which holds the string
                    ffi::utf8_of(py, s).map_err(|e| {
                        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        EncodeError::Unreadable
                    })
                })
                .collect()
        })
    }
}

/// The merges HF's converter derives from tiktoken ranks ((bytes, rank) pairs), in rank order,
/// and the ranks of the tokens no such merge makes (see `encode::canonical_merges`).
#[pyfunction]
pub(super) fn canonical_merges(
    py: Python<'_>,
    ranks: Vec<(Vec<u8>, TokenId)>,
) -> (Vec<[Py<PyBytes>; 2]>, Vec<TokenId>) {
    let (merges, unmade) = py.detach(|| encode::canonical_merges(&ranks));
    let bytes = |b: &[u8]| PyBytes::new(py, b).unbind();
    let merges = merges.iter().map(|(a, b)| [bytes(a), bytes(b)]).collect();
    (merges, unmade)
}

/// Corpus encoding of one block of bytes that continues a stream from a safe cut: cuts it into
/// pieces of about `piece_bytes` where `Encoder::pieces` allows (so the ids never depend on
/// where pieces fall, nor on the block size), encodes them on `num_threads` threads, and returns
/// (the ids of every piece in one array, uint16 when `small`; the offsets where each piece's
/// ids start, and the end; the bytes consumed). Unless `last`, the bytes after the last safe cut
/// (an unfinished character included) are not consumed: they go in front of the next block.
/// Invalid UTF-8 raises UnicodeDecodeError (the caller decides: fail, or replace and retry).
#[pyfunction]
#[pyo3(signature = (encoder, data, *, last, piece_bytes, num_threads, small))]
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_block<'py>(
    py: Python<'py>,
    encoder: &PyEncoder,
    data: &[u8],
    last: bool,
    piece_bytes: usize,
    num_threads: usize,
    small: bool,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>, usize)> {
    let set = encoder.set(None)?;
    let inner = encoder.inner()?;
    let (pieces, consumed) = py
        .detach(|| inner.block_pieces(data, &set, piece_bytes, last))
        .map_err(|e| PyUnicodeDecodeError::new_err_from_utf8(py, data, e))?;
    let all = interruptible(py, |check| {
        inner.encode_batch(pieces.as_slice(), &set, num_threads, check)
    })?;
    let (ids, offsets) = flatten(py, inner, all, small, num_threads)?;
    Ok((ids, offsets, consumed))
}

/// The ids of every text in one numpy array (uint16 when `small`: an error if one does not
/// fit) and the offsets where each text's ids start, and the end. Copied (and narrowed) on
/// `num_threads` threads, each run into its own part of the array: on one thread, this copy
/// and the narrowing after it were a sixth of a 2-thread batch's time, the cores half idle.
#[allow(clippy::type_complexity)]
fn flatten<'py>(
    py: Python<'py>,
    encoder: &Encoder,
    all: BatchIds,
    small: bool,
    num_threads: usize,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u64>>)> {
    let (offsets, total) = encode::text_offsets(&all);
    let offsets = array(py, offsets);
    let runs = &all.runs;
    if !small {
        let flat = py
            .detach(|| encode::fill(encoder, runs, total, num_threads, |id| id))
            .map_err(encode_err)?;
        encoder.give_back_ids(all.runs);
        return Ok((array(py, flat.0).into_any(), offsets));
    }
    let (flat, all_bits) = py
        .detach(|| encode::fill(encoder, runs, total, num_threads, |id| id as u16))
        .map_err(encode_err)?;
    let wide = encode::first_wide_in(runs, all_bits);
    encoder.give_back_ids(all.runs);
    if let Some(wide) = wide {
        return Err(too_wide(wide));
    }
    Ok((array(py, flat).into_any(), offsets))
}
