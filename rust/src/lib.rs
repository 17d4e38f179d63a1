//! bytepair's Rust core, one module per stage: pretokenize, count, cuts (where a file may be
//! split), counts_file (counts as bytes), train, encode; the types they share in `types.rs`, OS
//! and memory hints in `mem.rs`. Pure Rust; the Python bindings live in `py.rs` and `py/`,
//! compiled only with the `python` feature (maturin turns it on), so `cargo test` needs no
//! libpython.

pub use types::{Pair, TokenId};
pub use unicode::UNICODE_VERSION;

pub mod count;
pub mod counts_file;
pub mod cuts;
pub mod encode;
pub(crate) mod mem;
pub mod normalize;
pub mod pretokenize;
#[rustfmt::skip]
mod tables;
#[cfg(test)]
mod testing;
pub mod train;
pub mod types;
pub mod unicode;

#[cfg(feature = "python")]
mod py;
