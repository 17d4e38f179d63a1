//! bytepair's Rust core: pretokenize, count, train, encode. Pure Rust; the Python bindings live
//! in `py.rs`, compiled only with the `python` feature (maturin turns it on), so `cargo test`
//! needs no libpython.

pub mod count;
pub mod encode;
pub mod pretokenize;
mod tables;
pub mod train;

#[cfg(feature = "python")]
mod py;

/// The hash map of the hot loops (Fx: fast on short keys; results never depend on its order).
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
