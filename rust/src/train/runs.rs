//! One merge over every word its pair occurs in, split over the pool's threads: the words
//! (sorted) cut into runs that own disjoint parts of the arena, each run merged into a `Delta` of
//! its own. Applying the deltas to the pairs is the loop's (`merge_loop.rs`).

use rayon::prelude::*;

use super::arena::{end_at, regions, runs, set_len, word_at, Token};
use super::deltas::{merge_word, Delta, Moved};
use crate::types::{Pair, TokenId};

/// Sorted words and their part of the arena, which starts at offset `base`.
struct Run<'a, T> {
    ws: &'a [u32],
    region: &'a mut [T],
    base: usize,
}

/// Merges `pair` into `new` in the words of `run`, collecting what moved in `d`.
fn merge_words<T: Token>(run: Run<'_, T>, (pair, new): (Pair, TokenId), d: &mut Delta) {
    let Run { ws, region, base } = run;
    for (i, &w) in ws.iter().enumerate() {
        // The words are scattered over the arena: ask for later ones ahead of time.
        if let Some(&ahead) = ws.get(i + 8) {
            let at = region
                .as_ptr()
                .wrapping_add(ahead as usize * T::UNIT - base);
            crate::mem::prefetch(at);
            crate::mem::prefetch(at.wrapping_add(4 * T::UNIT));
        }
        let o = w as usize * T::UNIT - base;
        let (len, c, t) = word_at(region, o);
        let new_len = merge_word(t, len, pair, new, |m| match m {
            Moved::Left(x) => d.left.add(x, c, w),
            Moved::Right(y) => d.right.add(y, c, w),
            Moved::Run => {
                d.run += c;
                if d.run_words.last() != Some(&w) {
                    d.run_words.push(w);
                }
            }
        });
        if new_len != len {
            set_len(region, o, new_len);
        }
    }
}

/// A merge is split into runs of at least this many words, one per thread at most. On the
/// large corpus with 2 threads (`train_profile`), splitting merges of a few hundred words, not
/// only of 10,000+, made the whole loop about a tenth faster, more so at 32K merges than at
/// 10K. (When the loop ran outside the pool, splitting merges below 10,000 words had cost more
/// than it saved.) With the other threads kept awake (`with_pool_awake`), 60 does as well as
/// 150 or better.
const RUN_MIN_WORDS: usize = 60;

/// Merges `pair` into `new` in the words `ws` (sorted, distinct), split in runs over the
/// pool's threads: runs of sorted words own disjoint parts of the arena. Returns how many
/// deltas (one per run, in word order) were used. Results do not depend on the split.
pub(super) fn merge_all<T: Token>(
    arena: &mut [T],
    ws: &[u32],
    (pair, new): (Pair, TokenId),
    pool: &rayon::ThreadPool,
    deltas: &mut [Delta],
) -> usize {
    let n_runs = (ws.len() / RUN_MIN_WORDS).clamp(1, deltas.len());
    let ws_runs: Vec<&[u32]> = runs(ws, n_runs).collect();
    let bounds: Vec<(usize, usize)> = ws_runs
        .iter()
        .map(|r| {
            (
                r[0] as usize * T::UNIT,
                end_at(arena, r[r.len() - 1] as usize * T::UNIT),
            )
        })
        .collect();
    let jobs = ws_runs
        .into_iter()
        .zip(regions(arena, bounds.iter().copied()))
        .zip(&bounds)
        .map(|((ws, region), &(base, _))| Run { ws, region, base });
    let work = |(run, d): (Run<'_, T>, &mut Delta)| merge_words(run, (pair, new), d);
    let n_jobs = bounds.len();
    if n_jobs == 1 {
        jobs.zip(deltas.iter_mut()).for_each(work);
    } else {
        let jobs: Vec<Run<'_, T>> = jobs.collect();
        pool.install(|| {
            jobs.into_par_iter()
                .zip(deltas.par_iter_mut())
                .for_each(work)
        });
    }
    n_jobs
}
