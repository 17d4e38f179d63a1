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

/// Words of up to this many bytes pack into a `u128` key (`pack_word`).
pub(crate) const PACKED_MAX: usize = 15;

/// A word of at most `PACKED_MAX` bytes as a u128: its bytes, zero padding, its length in the
/// top byte (so that no two words share a key). Hash maps keyed by it need no allocation and no
/// byte comparison, which matters when the table outgrows the CPU caches.
#[inline(always)]
pub(crate) fn pack_word(word: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    buf[..word.len()].copy_from_slice(word);
    buf[15] = word.len() as u8;
    u128::from_le_bytes(buf)
}

/// The slot of a packed word in a direct-mapped cache of `2^bits` slots.
#[inline(always)]
pub(crate) fn hot_slot(key: u128, bits: u32) -> usize {
    let mixed =
        ((key as u64) ^ ((key >> 64) as u64).rotate_left(23)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - bits)) as usize
}
