//! BPE one merge at a time, as tiktoken's `byte_pair_merge` does it: the adjacent pair of lowest
//! rank, the leftmost of equals, merged; then the next. The plain loop and the heap (`merge.rs`,
//! `heap.rs`) merge a whole round of one rank first, which is the same when every merge makes
//! pairs of higher rank only. Tables where a merge can make a lower one (tiktoken's rule on rank
//! files such as Llama 3's, where a token may be made of one of higher rank; HF lists holding
//! every split of a token) send the words where it happens here. O(n log n): a heap of (rank,
//! position) entries, stale ones skipped when they come out.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::pair_table::{id_of, rank_of, PairTable, NO_MERGE};
use super::ranks::Input;
use crate::types::TokenId;

/// BPE of `input`, one merge at a time, appended to `out`.
pub(super) fn merge_exact(pairs: &PairTable, input: Input<'_>, out: &mut Vec<TokenId>) {
    let mut tok: Vec<TokenId> = match input {
        Input::Bytes(word, byte_ids) => word.iter().map(|&b| byte_ids[b as usize]).collect(),
        Input::Ids(ids) => ids.to_vec(),
    };
    let n = tok.len();
    const END: usize = usize::MAX;
    let mut next: Vec<usize> = (1..=n).map(|i| if i < n { i } else { END }).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.checked_sub(1).unwrap_or(END)).collect();
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let queue = |heap: &mut BinaryHeap<_>, tok: &[TokenId], i: usize, j: usize| {
        let merge = pairs.get(tok[i], tok[j]);
        if merge != NO_MERGE {
            heap.push(Reverse((rank_of(merge), i)));
        }
    };
    for i in 0..n.saturating_sub(1) {
        queue(&mut heap, &tok, i, i + 1);
    }
    while let Some(Reverse((rank, i))) = heap.pop() {
        let j = next[i];
        if j == END {
            continue; // merged away, or its right neighbour was
        }
        let merge = pairs.get(tok[i], tok[j]);
        if merge == NO_MERGE || rank_of(merge) != rank {
            continue; // the pair has changed since it was queued; the new one has its entry
        }
        tok[i] = id_of(merge);
        let after = next[j];
        next[i] = after;
        next[j] = END;
        if after != END {
            prev[after] = i;
            queue(&mut heap, &tok, i, after);
        }
        if prev[i] != END {
            queue(&mut heap, &tok, prev[i], i);
        }
    }
    let mut i = if n == 0 { END } else { 0 };
    while i != END {
        out.push(tok[i]);
        i = next[i];
    }
}
