//! The merge loop's words, laid out in one arena (`arena.rs`) from counting's tables, grouped by
//! their first two bytes, and the merges of an earlier run applied to them. Their first pair
//! index is `pairs.rs`'s.

use rayon::prelude::*;

use super::arena::{end_at, regions, units, Token};
use super::replay::{Replay, Scratch};
use super::TrainError;
use crate::count::{drop_on, LongWords, ShortMap, WordCounts};
use crate::types::TokenId;

/// The words in one arena, and where each starts (in units).
pub(super) struct Words<T> {
    pub arena: Vec<T>,
    pub refs: Vec<u32>,
    /// Whether merges were applied to the words (they hold tokens, not only bytes).
    pub replayed: bool,
}

impl<T: Token> Words<T> {
    /// Lays the words out in the arena grouped by their first two bytes, on the pool's threads,
    /// straight from counting's tables: a count of each group's size, then every word written at
    /// its group's cursor. The result does not depend on word order (counts are sums, ties go by
    /// bytes), but words that share pairs then sit together: the merge loop ran 2.5x faster on the
    /// large corpus than with words in hash order, and as fast as with the words fully sorted
    /// (which took a copy of the keys and a sort, about half the layout's time). Words of fewer
    /// than 2 bytes hold no pair, now or later, and words counted 0 times weigh nothing (as in the
    /// reference trainer, tests/reference.py): both are left out. With `replay` (the merges of
    /// an earlier run), each word is laid out as their BPE, made while sizing the groups: lines
    /// of superword training take a quarter of their bytes in tokens, and the tables are freed
    /// before the arena is made.
    pub fn new(
        counts: WordCounts,
        pool: &rayon::ThreadPool,
        replay: Option<&Replay>,
    ) -> Result<Self, TrainError> {
        let (short, long) = counts.into_maps();
        // Each task takes a run of partitions, short and long words alike.
        let per_task = short.len().div_ceil(pool.current_num_threads()).max(1);
        let tasks: Vec<_> = short.chunks(per_task).zip(long.chunks(per_task)).collect();
        let n_tasks = tasks.len();
        // 1. The units of each task's words, by group (and with `replay` their tokens).
        let (mut sizes, replayed): (Vec<Vec<usize>>, Vec<Replayed<T>>) = pool.install(|| {
            tasks
                .par_iter()
                .map(|&(short, long)| {
                    let mut size = vec![0usize; GROUPS];
                    let (mut out, mut scratch) = (Replayed::default(), Scratch::default());
                    for_each_word(short, long, |w, n| {
                        let g = group_of(w);
                        let len = match replay {
                            Some(replay) => {
                                let before = out.tokens.len();
                                replay.word(w, &mut scratch, &mut out.tokens);
                                let len = out.tokens.len() - before;
                                out.words.push((g as u32, len as u32, n));
                                len
                            }
                            None => w.len(),
                        };
                        size[g] += units::<T>(len);
                    });
                    (size, out)
                })
                .unzip()
        });
        if replay.is_some() {
            drop(tasks);
            drop_on(short, pool);
            drop_on(long, pool);
            crate::mem::give_back_freed_memory();
            let (arena, refs) = lay_out(&mut sizes, n_tasks, pool, |k, parts| {
                let r = &replayed[k];
                let mut tokens = &r.tokens[..];
                for &(g, len, n) in &r.words {
                    let (word, rest) = tokens.split_at(len as usize);
                    tokens = rest;
                    place(parts, g as usize, word.len(), n).copy_from_slice(word);
                }
            })?;
            return Ok(Words {
                arena,
                refs,
                replayed: true,
            });
        }
        let (arena, refs) = lay_out(&mut sizes, n_tasks, pool, |k, parts| {
            let (short, long) = tasks[k];
            for_each_word(short, long, |w, n| {
                let tokens = place(parts, group_of(w), w.len(), n);
                for (t, &b) in tokens.iter_mut().zip(w) {
                    *t = T::of(b as TokenId);
                }
            })
        })?;
        drop(tasks);
        drop_on(short, pool);
        drop_on(long, pool);
        Ok(Words {
            arena,
            refs,
            replayed: false,
        })
    }
}

/// A task's words as the BPE of an earlier run's merges: their tokens one after another, and
/// each word's group, length and count.
struct Replayed<T> {
    tokens: Vec<T>,
    words: Vec<(u32, u32, u64)>,
}

impl<T> Default for Replayed<T> {
    fn default() -> Self {
        Replayed {
            tokens: Vec::new(),
            words: Vec::new(),
        }
    }
}

/// The arena of the groups' `sizes` (units, by task), each task's part of every group written
/// by `write(task, parts)` on the pool, and the words' references.
fn lay_out<T: Token>(
    sizes: &mut [Vec<usize>],
    n_tasks: usize,
    pool: &rayon::ThreadPool,
    write: impl Fn(usize, &mut Vec<&mut [T]>) + Sync,
) -> Result<(Vec<T>, Vec<u32>), TrainError> {
    let starts = group_starts(sizes);
    let at = starts[GROUPS];
    // Word references are u32s of units.
    if at as u64 > 1 << 32 {
        return Err(TrainError::TooManyWords);
    }
    let mut arena = zeroed(at * T::UNIT)?;
    // 2. Every part as a slice of its own, written by its task.
    let mut parts = parts_of(&mut arena, sizes, &starts, n_tasks);
    pool.install(|| {
        parts
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, parts)| write(k, parts))
    });
    drop(parts);
    let refs = refs_of(&arena, &starts, pool)?;
    Ok((arena, refs))
}

/// Where each group of words starts in the arena (in units), and the end of the last.
fn group_starts(sizes: &mut [Vec<usize>]) -> Vec<usize> {
    // Groups in order, each task's part of a group after the previous task's: `sizes` turn
    // into where each part starts, and `starts` keeps where each group does.
    let mut starts = Vec::with_capacity(GROUPS + 1);
    let mut at = 0usize;
    for g in 0..GROUPS {
        starts.push(at);
        for size in sizes.iter_mut() {
            at += std::mem::replace(&mut size[g], at);
        }
    }
    starts.push(at);
    starts
}

/// The arena cut into every task's part of every group (`sizes`: where each part starts, by
/// task; `starts`: where each group does), each part a slice of its own for its task to write.
fn parts_of<'a, T: Token>(
    arena: &'a mut [T],
    sizes: &[Vec<usize>],
    starts: &[usize],
    n_tasks: usize,
) -> Vec<Vec<&'a mut [T]>> {
    let mut parts: Vec<Vec<&mut [T]>> = (0..n_tasks).map(|_| Vec::with_capacity(GROUPS)).collect();
    {
        let mut bounds: Vec<(usize, usize)> = Vec::with_capacity(GROUPS * n_tasks);
        for g in 0..GROUPS {
            for k in 0..n_tasks {
                let end = sizes.get(k + 1).map_or(starts[g + 1], |next| next[g]);
                bounds.push((sizes[k][g] * T::UNIT, end * T::UNIT));
            }
        }
        for (k, region) in regions(arena, bounds).into_iter().enumerate() {
            parts[k % n_tasks].push(region);
        }
    }
    parts
}

/// Where every word starts (in units), read back from the headers, 64 runs of 1,024 groups on
/// the pool's threads.
fn refs_of<T: Token>(
    arena: &[T],
    starts: &[usize],
    pool: &rayon::ThreadPool,
) -> Result<Vec<u32>, TrainError> {
    // 3. The references, read back from the headers, 64 runs of 1,024 groups on the threads.
    let refs: Vec<Vec<u32>> = pool.install(|| {
        starts
            .par_windows(GROUPS / 64 + 1)
            .step_by(GROUPS / 64)
            .map(|run| {
                let (mut o, end) = (run[0], run[run.len() - 1]);
                let mut refs = Vec::new();
                while o < end {
                    refs.push(o as u32);
                    o = end_at(arena, o * T::UNIT) / T::UNIT;
                }
                refs
            })
            .collect()
    });
    let mut all = Vec::new();
    all.try_reserve_exact(refs.iter().map(Vec::len).sum())
        .map_err(|_| TrainError::OutOfMemory)?;
    refs.into_iter().for_each(|r| all.extend(r));
    Ok(all)
}

/// `n` zeroed tokens; the memory comes zeroed from the system (no pass over it) and is first
/// touched by the threads that fill it. Merges read it all over: it asks for huge pages (with
/// 4 KB pages, a third of the merging step's samples sat on the prefetch of the next word).
fn zeroed<T: Token>(n: usize) -> Result<Vec<T>, TrainError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| TrainError::OutOfMemory)?;
    // SAFETY: the layout has a nonzero size; a null pointer is turned into an error. The
    // allocation is zeroed, and zero is a valid u16 and u32 (the only tokens), so all `n`
    // elements are initialised; it was made by the global allocator with the layout of `n`
    // tokens, as `Vec` requires.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<T>();
        if ptr.is_null() {
            return Err(TrainError::OutOfMemory);
        }
        let mut arena = Vec::from_raw_parts(ptr, n, n);
        crate::mem::advise_huge_pages(&mut arena);
        Ok(arena)
    }
}

/// Groups of words in the arena: one per first two bytes.
const GROUPS: usize = 1 << 16;

/// The group of a word of 2 bytes or more.
#[inline(always)]
fn group_of(w: &[u8]) -> usize {
    (w[0] as usize) << 8 | w[1] as usize
}

/// Calls `f(word, count)` for every word of the partitions `short` and `long` that can hold a
/// pair: 2 bytes or more, counted more than 0 times.
fn for_each_word(short: &[ShortMap], long: &[LongWords], mut f: impl FnMut(&[u8], u64)) {
    for (short, long) in short.iter().zip(long) {
        for (&key, &n) in short {
            let buf = key.get().to_le_bytes();
            let len = buf[15] as usize;
            if n > 0 && len >= 2 {
                f(&buf[..len], n);
            }
        }
        for (word, n) in long.iter() {
            if n > 0 {
                f(word, n);
            }
        }
    }
}

/// Takes the room of a word of `len` tokens counted `n` times from the front of its group's
/// part (`parts[g]`), writes its header there, and returns its `len` tokens to fill.
fn place<'a, T: Token>(parts: &mut [&'a mut [T]], g: usize, len: usize, n: u64) -> &'a mut [T] {
    let part = std::mem::take(&mut parts[g]);
    let (slot, rest) = part.split_at_mut(units::<T>(len) * T::UNIT);
    parts[g] = rest;
    for (k, v) in [len as u32, len as u32, n as u32, (n >> 32) as u32]
        .into_iter()
        .enumerate()
    {
        T::set_field(slot, k, v);
    }
    &mut slot[T::UNIT..][..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_too_large_to_lay_out_is_an_error_not_an_abort() {
        assert!(matches!(
            zeroed::<u32>(usize::MAX / 2),
            Err(TrainError::OutOfMemory)
        ));
        assert_eq!(zeroed::<u16>(0).unwrap().len(), 0);
        assert!(zeroed::<u16>(1000).unwrap().iter().all(|&x| x == 0));
    }
}
