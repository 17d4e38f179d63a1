//! BPE of long pretokens in O(n log n): a heap of (rank, position) over a linked list, with the
//! plain loop's order (every entry of one rank merged, left to right, before the pairs they make
//! are queued). The plain loop for short ones, and the entry points, are `merge.rs`'s.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::pair_table::PairTable;
use super::ranks::{Input, Rank};
use crate::types::TokenId;

/// `merge_heap_at` with the table's own rank type (as `merge_input` picks it) and positions in
/// 32 bits when they fit: heap entries of 8 bytes, not 16.
pub(super) fn merge_heap<const WIDE: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    match (pairs.narrow.is_empty(), pairs.mid.is_empty()) {
        (false, _) => merge_heap_ranked::<i16, WIDE>(pairs, input, out),
        (true, false) => merge_heap_ranked::<i32, WIDE>(pairs, input, out),
        (true, true) => merge_heap_ranked::<u32, WIDE>(pairs, input, out),
    }
}

/// `merge_heap_at` with positions in 32 bits unless they do not fit (or `WIDE` asks for 64).
fn merge_heap_ranked<R: Rank, const WIDE: bool>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    match u32::try_from(input.len()) {
        Ok(n) if n < u32::MAX && !WIDE => merge_heap_at::<R, u32>(pairs, input, out),
        _ => merge_heap_at::<R, usize>(pairs, input, out),
    }
}

/// A token's position in `merge_heap_at`; `END` marks no neighbour. A heap entry (`Key`) is a
/// rank (`Rank::order`) and a position, ordered by rank, then position.
trait Pos: Copy + Ord {
    const END: Self;
    type Key: Copy + Ord;
    fn of(i: usize) -> Self;
    fn at(self) -> usize;
    fn key(rank: u32, at: Self) -> Self::Key;
    fn rank(key: Self::Key) -> u32;
    fn pos(key: Self::Key) -> Self;
}

impl Pos for u32 {
    const END: Self = u32::MAX;
    type Key = u64; // one compare a step
    fn of(i: usize) -> Self {
        i as u32
    }
    fn at(self) -> usize {
        self as usize
    }
    fn key(rank: u32, at: Self) -> u64 {
        (rank as u64) << 32 | at as u64
    }
    fn rank(key: u64) -> u32 {
        (key >> 32) as u32
    }
    fn pos(key: u64) -> Self {
        key as u32
    }
}

impl Pos for usize {
    const END: Self = usize::MAX;
    type Key = (u32, usize);
    fn of(i: usize) -> Self {
        i
    }
    fn at(self) -> usize {
        self
    }
    fn key(rank: u32, at: Self) -> (u32, usize) {
        (rank, at)
    }
    fn rank(key: (u32, usize)) -> u32 {
        key.0
    }
    fn pos(key: (u32, usize)) -> Self {
        key.1
    }
}

/// BPE of any number of tokens; false (nothing appended) where a merge makes a pair of lower
/// rank. All entries of one rank are merged, left to right, before the pairs they make are
/// queued, as in the plain loop. An entry is checked when it comes out by looking
/// its pair up again, which also gives the merged id: a changed pair has another rank or none,
/// since the tokens of two entries at one position with one rank (one merged token) cover the
/// same bytes. A byte input's first pairs come from the byte-pair grid.
fn merge_heap_at<R: Rank, P: Pos>(
    pairs: &PairTable,
    input: Input<'_>,
    out: &mut Vec<TokenId>,
) -> bool {
    let n = input.len();
    let mut tok: Vec<TokenId> = match input {
        Input::Bytes(word, byte_ids) => word.iter().map(|&b| byte_ids[b as usize]).collect(),
        Input::Ids(ids) => ids.to_vec(),
    };
    if n < 2 {
        out.append(&mut tok);
        return true;
    }
    // next: the token after (END: none, or merged away); prev: the one before (END: none)
    let mut next: Vec<P> = (1..=n)
        .map(|i| if i < n { P::of(i) } else { P::END })
        .collect();
    let mut prev: Vec<P> = (0..n)
        .map(|i| if i > 0 { P::of(i - 1) } else { P::END })
        .collect();
    let first = (0..n - 1).filter_map(|i| {
        let (rank, _) = match input {
            Input::Bytes(word, _) => R::get_bytes(pairs, word[i], word[i + 1]),
            Input::Ids(_) => R::get(pairs, tok[i], tok[i + 1]),
        };
        (rank != R::NONE).then(|| Reverse(P::key(rank.order(), P::of(i))))
    });
    let mut heap: BinaryHeap<Reverse<P::Key>> = first.collect();
    // queues the pair at `i`; its rank
    let queue = |heap: &mut BinaryHeap<_>, tok: &[TokenId], next: &[P], i: P| {
        let j = next[i.at()];
        if j == P::END {
            return u32::MAX;
        }
        let (rank, _) = R::get(pairs, tok[i.at()], tok[j.at()]);
        if rank != R::NONE {
            heap.push(Reverse(P::key(rank.order(), i)));
        }
        rank.order()
    };
    let mut pending = Vec::new();
    while let Some(&Reverse(top)) = heap.peek() {
        let rank = P::rank(top);
        while let Some(&Reverse(key)) = heap.peek() {
            if P::rank(key) != rank {
                break;
            }
            heap.pop();
            let i = P::pos(key);
            let j = next[i.at()];
            if j == P::END {
                continue; // merged away, or its right neighbour was
            }
            let (now, merged) = R::get(pairs, tok[i.at()], tok[j.at()]);
            if now.order() != rank {
                continue; // the pair has changed since it was queued
            }
            tok[i.at()] = merged;
            let after = next[j.at()];
            next[i.at()] = after;
            next[j.at()] = P::END;
            if after != P::END {
                prev[after.at()] = i;
            }
            pending.push(i);
            if prev[i.at()] != P::END {
                pending.push(prev[i.at()]);
            }
        }
        for i in pending.drain(..) {
            if queue(&mut heap, &tok, &next, i) < rank && pairs.one_at_a_time {
                return false; // a pair below this round's rank: see `merge.rs`
            }
        }
    }
    let mut i = P::of(0);
    while i != P::END {
        out.push(tok[i.at()]);
        i = next[i.at()];
    }
    true
}
