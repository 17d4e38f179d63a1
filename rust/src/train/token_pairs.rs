//! The merge loop's first pair index for words that go on from earlier merges (a continued
//! run, the second stage of superword training). Words of tokens, unlike words of bytes, hold
//! millions of distinct pairs, nearly all rare (the large corpus's lines after 25,600 merges:
//! 80 M pair occurrences). `pairs.rs` counts pairs in tables by slot, which here are maps of
//! millions of entries, a miss to memory at every occurrence (21 s on that corpus). Here every
//! occurrence is written to one of 256 partitions by its hash (in rounds over the words, which
//! bounds the buffers), each partition summed in a map that fits the core's caches, and only the
//! pairs counted at least the floor get word lists, in one more pass.

use rayon::prelude::*;

use super::arena::{runs, Token};
use super::pairs::{for_each_pair, PairInfo, Pairs, WordList};
use super::words::Words;
use super::TrainError;
use crate::types::{mix, FastMap, Pair, TokenId};

/// Partitions by the top bits of a pair's hash. The words are read in as many rounds as keep
/// each round's occurrences (8 bytes each, in buffers kept from round to round) within
/// `ROUND_BYTES`: one round per 64 M occurrences (two on the large corpus at 32K).
const PARTS: usize = 256;
const ROUND_BYTES: usize = 512 << 20;

/// One run's occurrences of a partition: pairs of ids below 2^24 with counts below 2^16 packed
/// in a u64 (nearly all: lines repeat little), the others as (pair, count).
#[derive(Clone, Default)]
struct Written {
    packed: Vec<u64>,
    wide: Vec<(u64, u64)>,
}

/// `Words::pairs` for words of tokens: every pair's count, and the words of those counted
/// `floor(counts)` times or more; also the largest count of the others.
pub(super) fn token_pairs<T: Token>(
    words: &Words<T>,
    pool: &rayon::ThreadPool,
    floor: impl FnOnce(&[u64]) -> u64,
) -> Result<(Pairs, u64), TrainError> {
    let word_runs: Vec<&[u32]> = runs(&words.refs, 8 * pool.current_num_threads()).collect();
    let arena = &words.arena[..];
    // The tokens of the words bound their pairs' occurrences.
    let rounds = (arena.len() * 8)
        .div_ceil(ROUND_BYTES)
        .next_power_of_two()
        .min(PARTS);
    let per_round = PARTS / rounds;
    let mut counted: Vec<(Pair, u64)> = Vec::new();
    let mut written: Vec<Vec<Written>> = vec![vec![Written::default(); per_round]; word_runs.len()];
    for round in 0..rounds {
        // 1. Each run's occurrences of this round's partitions.
        pool.install(|| {
            word_runs
                .par_iter()
                .zip(written.par_iter_mut())
                .for_each(|(ws, parts)| {
                    for part in parts.iter_mut() {
                        part.packed.clear();
                        part.wide.clear();
                    }
                    for_each_pair(arena, ws, |p, n, _| {
                        let key = (p.0 as u64) << 32 | p.1 as u64;
                        let k = (mix(key as u128) >> 56) as usize;
                        if k / per_round != round {
                            return;
                        }
                        let part = &mut parts[k % per_round];
                        if (p.0 | p.1) >> 24 == 0 && n >> 16 == 0 {
                            part.packed
                                .push((p.0 as u64) << 40 | (p.1 as u64) << 16 | n);
                        } else {
                            part.wide.push((key, n));
                        }
                    });
                })
        });
        // 2. Each partition summed.
        let sums: Vec<Result<Vec<(Pair, u64)>, TrainError>> = pool.install(|| {
            (0..per_round)
                .into_par_iter()
                .map(|k| {
                    let mut sum: FastMap<u64, u64> = FastMap::default();
                    let mut add = |key: u64, n: u64| -> Result<(), TrainError> {
                        let c = sum.entry(key).or_insert(0);
                        *c = c.checked_add(n).ok_or_else(|| too_large(key))?;
                        Ok(())
                    };
                    for run in &written {
                        for &e in &run[k].packed {
                            add((e >> 40) << 32 | (e >> 16 & 0xff_ffff), e & 0xffff)?;
                        }
                        for &(key, n) in &run[k].wide {
                            add(key, n)?;
                        }
                    }
                    Ok(sum.into_iter().map(|(key, c)| (pair_of(key), c)).collect())
                })
                .collect()
        });
        for part in sums {
            counted.extend(part?);
        }
    }
    drop(written);
    let counts: Vec<u64> = counted.iter().map(|&(_, c)| c).collect();
    let floor = floor(&counts);
    drop(counts);
    let mut left_out = 0;
    let mut kept: FastMap<Pair, (u32, u64)> = FastMap::default();
    for (p, c) in counted {
        if c >= floor && c > 0 {
            let k = kept.len() as u32;
            kept.insert(p, (k, c));
        } else {
            left_out = left_out.max(c);
        }
    }
    // 3. The words of each kept pair, by run (runs in word order, so lists come out sorted).
    let n_kept = kept.len();
    let lists: Vec<Vec<Vec<u32>>> = pool.install(|| {
        word_runs
            .par_iter()
            .map(|ws| {
                let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n_kept];
                for_each_pair(arena, ws, |p, _, w| {
                    if let Some(&(k, _)) = kept.get(&p) {
                        let list = &mut lists[k as usize];
                        if list.last() != Some(&w) {
                            list.push(w);
                        }
                    }
                });
                lists
            })
            .collect()
    });
    let mut by_kept: Vec<Vec<u32>> = vec![Vec::new(); n_kept];
    for run in lists {
        for (all, list) in by_kept.iter_mut().zip(run) {
            all.extend(list);
        }
    }
    let mut pairs = Pairs::default();
    pairs.reserve(n_kept);
    for (p, (k, count)) in kept {
        let words = WordList::from_vec(std::mem::take(&mut by_kept[k as usize]));
        pairs.insert(p, PairInfo { count, words });
    }
    Ok((pairs, left_out))
}

fn pair_of(key: u64) -> Pair {
    ((key >> 32) as TokenId, key as TokenId)
}

fn too_large(key: u64) -> TrainError {
    let (a, b) = pair_of(key);
    TrainError::CountsTooLarge(
        char::from_u32(a).unwrap_or('?'),
        char::from_u32(b).unwrap_or('?'),
    )
}
