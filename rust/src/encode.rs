//! The encoder (docs/spec.md §2): special tokens, then the shared pretokenizer, then BPE of each
//! pretoken by merge rank (`merge.rs`); and decoding ids back to bytes. Every table is built
//! once, in `Encoder::new` (`encoder.rs`); one text's pretokens become ids in `text.rs`, batches
//! run in `batch.rs` on the threads of `pool.rs`, texts are cut at safe cuts in `pieces.rs`, and
//! the ids of many texts become one flat array in `flat.rs`.
//!
//! Performance notes: a cache maps a pretoken's bytes to its ids (`cache.rs`; ~90% of pretokens
//! of 2+ bytes hit it on real text). Calls take warm caches from a small pool and give them
//! back, one per thread they run on; `encode_batch` gives each worker its own.

mod batch;
mod cache;
mod encoder;
mod exact;
mod flat;
mod heap;
mod merge;
mod pair_table;
mod parts;
mod pieces;
mod pool;
mod ranks;
mod rule;
mod text;

use crate::pretokenize::PretokenizeError;
use crate::types::TokenId;

pub use batch::{BatchIds, BatchTexts, RunPiece};
pub use encoder::{Encoder, SpecialSet};
pub use flat::{fill, first_wide, first_wide_in, text_offsets};
pub use pieces::block_text;
pub use rule::{canonical_merges, Ranks, Rule};
// Training replays earlier merges on its words with the encoder's BPE (`train/words.rs`).
pub(crate) use merge::merge_bytes;
pub(crate) use pair_table::PairTable;
pub(crate) use parts::{Joins, RecentParts};

/// Errors of the encoder.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The vocabulary lacks a single byte.
    #[error(
        "the vocabulary has no token for byte {0:#04x}; a byte-level vocabulary needs all 256"
    )]
    MissingByte(u8),
    /// A merge names a token that is not in the vocabulary.
    #[error(
        "merge {rank} ({:?}, {:?}): {:?} is not in the vocabulary",
        String::from_utf8_lossy(left),
        String::from_utf8_lossy(right),
        String::from_utf8_lossy(missing)
    )]
    BadMerge {
        rank: usize,
        left: Vec<u8>,
        right: Vec<u8>,
        missing: Vec<u8>,
    },
    /// Two ids share one byte string.
    #[error("token ids {0} and {1} have the same bytes")]
    DuplicateToken(TokenId, TokenId),
    /// An id is not in the vocabulary.
    #[error("{0}")]
    UnknownId(TokenId),
    /// The options of special tokens are not one per token.
    #[error("{0} sets of added-token options for {1} special tokens")]
    AddedOptions(usize, usize),
    /// Pretokenization failed.
    #[error(transparent)]
    Pretokenize(#[from] PretokenizeError),
    /// The output buffer could not be allocated.
    #[error("out of memory: cannot hold the ids of {0} bytes of text")]
    OutOfMemory(usize),
    /// Building the thread pool failed.
    #[error("could not start worker threads: {0}")]
    Threads(String),
    /// The ids leave most of their range unused (one huge id would cost a huge table).
    #[error(
        "token ids are too sparse: {n_ids} ids, the largest {max_id}; ids must stay below \
         4 × their number + 2^20, and below 2^32 - 1"
    )]
    SparseIds { n_ids: usize, max_id: u64 },
    /// The caller's check asked to stop (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// A text of a batch could not be got (`BatchTexts::get`; the source keeps why).
    #[error("a text of the batch could not be read")]
    Unreadable,
}

/// Long calls check for interruption (Ctrl-C) after about this many bytes of text.
pub const CHECK_EVERY: usize = 1 << 20;
