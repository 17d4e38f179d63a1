//! bytepair's Rust core: pretokenize, count, train, encode. Pure Rust; the Python bindings live
//! in `py.rs`, compiled only with the `python` feature (maturin turns it on), so `cargo test`
//! needs no libpython.

pub mod count;
pub mod encode;
pub mod pretokenize;
#[rustfmt::skip]
mod tables;
pub mod train;

#[cfg(feature = "python")]
mod py;

/// The hash map of the hot loops: foldhash with a fixed seed (fast on u64/u128 and short byte
/// keys; tried Fx, whose weak low bits made packed u128 word keys collide); results never depend
/// on its order.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
