//! The classes of a compiled pattern: the sets of characters its trees name (classes, and the
//! characters of literals) cut Unicode into a few classes (10-30 for the patterns in use), so
//! that two characters of one class are in the same sets and no match can tell them apart. The
//! trees are then rewritten over one byte per class, which is what the DFAs read.
//!
//! Lookup: a table for ASCII, and two levels for the rest (`cp >> 8` → a block of 256 class
//! bytes, equal blocks shared), built from the sets' intervals directly.

use std::collections::HashMap;

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, Hir, HirKind, Look};

use super::Refusal;
use crate::pretokenize::decode_at;

/// A set of characters as its ranges (the key by which a tree's class finds its classes).
type Key = Vec<(u32, u32)>;

fn key(c: &ClassUnicode) -> Key {
    c.ranges()
        .iter()
        .map(|r| (r.start() as u32, r.end() as u32))
        .collect()
}

/// The partition of Unicode into classes, and the byte each class is in the DFAs' input.
pub(super) struct Classes {
    /// How many classes.
    pub(super) count: usize,
    ascii: [u8; 128],
    /// `cp >> 8` → the first entry of its block in `blocks`.
    index: Vec<u32>,
    blocks: Vec<u8>,
    /// Each set → the bit of its signature.
    bits: HashMap<Key, u32>,
    /// Each class's signature: the sets that hold it.
    signature: Vec<u128>,
    /// The byte that stands for each class in the DFAs' input (see `encode_lookahead`).
    pub(super) code: Vec<u8>,
}

/// The sets a tree names: its classes and the characters of its literals.
pub(super) fn collect(h: &Hir, out: &mut Vec<ClassUnicode>) {
    match h.kind() {
        HirKind::Class(Class::Unicode(c)) => out.push(c.clone()),
        HirKind::Literal(lit) => {
            for ch in String::from_utf8_lossy(&lit.0).chars() {
                out.push(ClassUnicode::new([
                    regex_syntax::hir::ClassUnicodeRange::new(ch, ch),
                ]));
            }
        }
        HirKind::Repetition(r) => collect(&r.sub, out),
        HirKind::Capture(c) => collect(&c.sub, out),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().for_each(|x| collect(x, out)),
        _ => {}
    }
}

impl Classes {
    /// The classes of these sets: each elementary interval between their bounds gets the
    /// signature of the sets that hold it, and each distinct signature is a class.
    pub(super) fn new(sets: &[ClassUnicode]) -> Result<Self, Refusal> {
        let mut keys: Vec<Key> = sets.iter().map(key).collect();
        keys.sort();
        keys.dedup();
        if keys.len() > 128 {
            return Err(Refusal::TooLarge("more than 128 character sets"));
        }
        let mut cuts = vec![0u32, 0x11_0000];
        for k in &keys {
            for &(a, b) in k {
                cuts.extend([a, b + 1]);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut ids: HashMap<u128, u8> = HashMap::new();
        let mut signature = Vec::new();
        // (first code point, class) of each elementary interval, in order
        let mut intervals = Vec::with_capacity(cuts.len());
        for w in cuts.windows(2) {
            let sig = keys.iter().enumerate().fold(0u128, |sig, (bit, k)| {
                let j = k.partition_point(|&(_, e)| e < w[0]);
                sig | u128::from(j < k.len() && k[j].0 <= w[0]) << bit
            });
            let next = signature.len();
            let id = *ids.entry(sig).or_insert_with(|| {
                signature.push(sig);
                next as u8
            });
            if signature.len() > 255 - 128 {
                return Err(Refusal::TooLarge("more than 127 character classes"));
            }
            intervals.push((w[0], id));
        }
        let (index, blocks) = Self::tables(&intervals);
        let mut ascii = [0u8; 128];
        for (c, a) in ascii.iter_mut().enumerate() {
            *a = blocks[c];
        }
        let bits = keys.into_iter().zip(0..).collect();
        let count = signature.len();
        Ok(Classes {
            count,
            ascii,
            index,
            blocks,
            bits,
            signature,
            code: (0..count as u8).collect(),
        })
    }

    /// The two-level table of `intervals` (first code point, class), blocks of one class
    /// shared without being filled code point by code point.
    fn tables(intervals: &[(u32, u8)]) -> (Vec<u32>, Vec<u8>) {
        let (mut index, mut blocks) = (Vec::with_capacity(0x1100), Vec::new());
        let mut seen: HashMap<[u8; 256], u32> = HashMap::new();
        let mut j = 0; // the interval holding the block's first code point
        for block in 0..0x1100u32 {
            let (lo, hi) = (block << 8, (block << 8) + 256);
            while j + 1 < intervals.len() && intervals[j + 1].0 <= lo {
                j += 1;
            }
            let mut bytes = [intervals[j].1; 256];
            let mut m = j + 1;
            while m < intervals.len() && intervals[m].0 < hi {
                bytes[(intervals[m].0 - lo) as usize..].fill(intervals[m].1);
                m += 1;
            }
            let at = *seen.entry(bytes).or_insert_with(|| {
                blocks.extend_from_slice(&bytes);
                blocks.len() as u32 - 256
            });
            index.push(at);
        }
        (index, blocks)
    }

    /// The class of a code point.
    #[inline(always)]
    pub(super) fn of(&self, cp: u32) -> u8 {
        if cp < 128 {
            return self.ascii[cp as usize];
        }
        self.blocks[self.index[(cp >> 8) as usize] as usize + (cp & 0xff) as usize]
    }

    /// The class of the character at byte `i` of valid UTF-8, and its length.
    #[inline(always)]
    pub(super) fn at(&self, b: &[u8], i: usize) -> (u8, usize) {
        if b[i] < 0x80 {
            return (self.ascii[b[i] as usize], 1);
        }
        let (cp, len) = decode_at(b, i);
        (self.of(cp), len)
    }

    /// The class of each ASCII byte.
    pub(super) fn ascii(&self) -> &[u8; 128] {
        &self.ascii
    }

    /// The classes a set holds.
    fn of_set(&self, c: &ClassUnicode) -> Vec<u8> {
        let bit = self.bits[&key(c)];
        (0..self.count as u8)
            .filter(|&id| self.signature[id as usize] >> bit & 1 == 1)
            .collect()
    }

    /// Makes the classes of `y` ASCII word bytes and all others not, so that the one-character
    /// lookahead `(?!Y)` is `(?-u:\b{end-half})` over class bytes (the next byte is not a word
    /// byte, or there is none), an assertion regex-automata's DFAs run exactly. False when the
    /// classes do not fit (63 word bytes, 193 others).
    pub(super) fn encode_lookahead(&mut self, y: &ClassUnicode) -> bool {
        let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
        let ys = self.of_set(y);
        let mut words = (0..=255u8).filter(word);
        let mut others = (0..=255u8).filter(|b| !word(b));
        for id in 0..self.count as u8 {
            let next = if ys.contains(&id) {
                words.next()
            } else {
                others.next()
            };
            let Some(byte) = next else {
                return false;
            };
            self.code[id as usize] = byte;
        }
        true
    }

    /// `h` over class bytes: each class or literal character becomes the bytes of its classes.
    pub(super) fn rewrite(&self, h: &Hir) -> Hir {
        let bytes = |ids: &[u8]| {
            Hir::class(Class::Bytes(ClassBytes::new(ids.iter().map(|&i| {
                let b = self.code[i as usize];
                ClassBytesRange::new(b, b)
            }))))
        };
        let all = |v: &[Hir]| v.iter().map(|x| self.rewrite(x)).collect();
        match h.kind() {
            HirKind::Class(Class::Unicode(c)) => bytes(&self.of_set(c)),
            HirKind::Literal(lit) => Hir::concat(
                String::from_utf8_lossy(&lit.0)
                    .chars()
                    .map(|ch| bytes(&[self.of(ch as u32)]))
                    .collect(),
            ),
            HirKind::Look(l) => Hir::look(*l),
            HirKind::Repetition(r) => Hir::repetition(regex_syntax::hir::Repetition {
                sub: Box::new(self.rewrite(&r.sub)),
                ..*r
            }),
            HirKind::Capture(c) => self.rewrite(&c.sub),
            HirKind::Concat(v) => Hir::concat(all(v)),
            HirKind::Alternation(v) => Hir::alternation(all(v)),
            // the plan refuses byte classes; Empty is the only other kind
            _ => Hir::empty(),
        }
    }

    /// `h` over class bytes followed by the lookahead of `encode_lookahead`.
    pub(super) fn rewrite_with_lookahead(&self, h: &Hir) -> Hir {
        Hir::concat(vec![self.rewrite(h), Hir::look(Look::WordEndHalfAscii)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(pattern: &str) -> ClassUnicode {
        match regex_syntax::parse(pattern).unwrap().into_kind() {
            HirKind::Class(Class::Unicode(c)) => c,
            HirKind::Literal(l) => {
                let c = std::str::from_utf8(&l.0).unwrap().chars().next().unwrap();
                ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(c, c)])
            }
            other => panic!("{other:?}"),
        }
    }

    /// Every code point's class is in exactly the sets that hold it, and the lookup tables agree
    /// with a plain search of the sets.
    #[test]
    fn classes_hold_exactly_their_sets_on_every_code_point() {
        let sets: Vec<ClassUnicode> =
            [r"\p{L}", r"\p{N}", r"\s", r"[\p{Lu}\p{M}]", "'", r"\p{Han}"]
                .into_iter()
                .map(class)
                .collect();
        let classes = Classes::new(&sets).unwrap();
        assert!(classes.count <= 12, "{}", classes.count);
        let mut seen = vec![None; classes.count];
        for cp in 0..0x11_0000u32 {
            let inside: Vec<bool> = sets
                .iter()
                .map(|s| {
                    s.ranges()
                        .iter()
                        .any(|r| r.start() as u32 <= cp && cp <= r.end() as u32)
                })
                .collect();
            let id = classes.of(cp) as usize;
            match &seen[id] {
                None => seen[id] = Some(inside),
                Some(first) => assert_eq!(first, &inside, "U+{cp:04X}"),
            }
        }
    }
}
