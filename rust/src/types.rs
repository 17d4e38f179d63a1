//! The types every stage shares: token ids and pairs, the hash map of the hot loops, and words
//! of up to 15 bytes packed into a u128 key, with the hashes that place such keys in tables.
//! No stage logic: counting, training and encoding each use these in modules of their own.

/// A token id: bytes are 0-255, merge i is 256 + i.
pub type TokenId = u32;
/// An adjacent pair of tokens.
pub type Pair = (TokenId, TokenId);

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
    let n = word.len();
    let (lo, hi) = if n >= 8 {
        let first: [u8; 8] = word[..8].try_into().unwrap_or_default();
        (u64::from_le_bytes(first), load_short(&word[8..]))
    } else {
        (load_short(word), 0)
    };
    (lo as u128) | (((hi | (n as u64) << 56) as u128) << 64)
}

/// `pack_word(&b[start..start + len])` (len at most `PACKED_MAX`): where 16 bytes can be read
/// from `start`, one load and a mask instead of `pack_word`'s length-dependent loads.
#[inline(always)]
pub(crate) fn pack_at(b: &[u8], start: usize, len: usize) -> u128 {
    debug_assert!(len <= PACKED_MAX);
    match b.get(start..start + 16) {
        Some(window) => {
            let bytes = u128::from_le_bytes(window.try_into().unwrap_or_default());
            bytes & LOW_BYTES[len] | (len as u128) << 120
        }
        None => pack_word(&b[start..start + len]),
    }
}

/// `LOW_BYTES[n]`: the low `n` bytes set (a table: a u128 shift is a dozen instructions).
const LOW_BYTES: [u128; 16] = {
    let mut masks = [0; 16];
    let mut n = 1;
    while n < 16 {
        masks[n] = (1 << (8 * n)) - 1;
        n += 1;
    }
    masks
};

/// Up to 8 bytes as a little-endian u64, zero-padded. Two overlapping loads instead of a
/// variable-length copy into a buffer, whose store-then-load stalled the counting loop (perf:
/// 15% of counting time).
#[inline(always)]
fn load_short(b: &[u8]) -> u64 {
    let n = b.len();
    let load4 = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as u64;
    match n {
        0 => 0,
        // bytes 0, n/2 and n-1 cover every position of a 1-3 byte word
        1..=3 => {
            (b[0] as u64) | (b[n / 2] as u64) << (8 * (n / 2)) | (b[n - 1] as u64) << (8 * (n - 1))
        }
        _ => load4(0) | load4(n - 4) << (8 * (n - 4)),
    }
}

/// The slot of a packed word in a direct-mapped cache of `2^bits` slots.
#[inline(always)]
pub(crate) fn hot_slot(key: u128, bits: u32) -> usize {
    (mix(key) >> (64 - bits)) as usize
}

/// A 64-bit hash of a packed word whose top bits pick its slot (`hot_slot`), whatever the
/// table's size: a hash kept across a table's growth still finds the slot.
#[inline(always)]
pub(crate) fn mix(key: u128) -> u64 {
    ((key as u64) ^ ((key >> 64) as u64).rotate_left(23)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pack_word_is_the_padded_bytes_and_length() {
        let word: Vec<u8> = (1..=15).collect();
        for n in 0..=super::PACKED_MAX {
            let mut buf = [0u8; 16];
            buf[..n].copy_from_slice(&word[..n]);
            buf[15] = n as u8;
            assert_eq!(
                super::pack_word(&word[..n]),
                u128::from_le_bytes(buf),
                "n = {n}"
            );
        }
        assert_ne!(super::pack_word(b"a"), super::pack_word(b"a\0"));
        let text: Vec<u8> = (100..140).collect();
        for start in 0..text.len() {
            for len in 0..=super::PACKED_MAX.min(text.len() - start) {
                let want = super::pack_word(&text[start..start + len]);
                assert_eq!(super::pack_at(&text, start, len), want, "{start} {len}");
            }
        }
    }
}
