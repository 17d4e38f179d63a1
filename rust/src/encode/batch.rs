//! Batches of texts on the calling thread and the encoder's pool (`share`): texts longer than
//! `BATCH_PIECE` cut into pieces, consecutive pieces grouped into runs, each run's ids in one
//! vector (`BatchIds`), its texts got by the thread that encodes it (`BatchTexts`). Encoding a
//! piece is `text.rs`'s; making one flat array of the ids is `flat.rs`'s.

use std::sync::Mutex;

use super::cache::{self, Cache};
use super::{EncodeError, Encoder, SpecialSet, CHECK_EVERY};
use crate::types::TokenId;

/// `encode_batch` encodes texts longer than this in pieces of about this size.
const BATCH_PIECE: usize = 1 << 18;

/// The ids of a batch of texts (`Encoder::encode_batch`): one vector per run of consecutive
/// pieces of the texts, in order. Why not a vector per text: thousands of allocations a call
/// (freed on another thread), and a copy of each into the flat array numpy callers want; a run
/// is one allocation and one copy.
pub struct BatchIds<T = ()> {
    /// The ids of each run; all runs one after the other are the ids of all texts in order.
    pub runs: Vec<Vec<TokenId>>,
    /// What the caller's `finish` made of each run (`Encoder::encode_batch_with`), in order.
    pub finished: Vec<T>,
    /// Each piece in order: the index of its text, and its number of ids. A text is one piece
    /// unless it is longer than `BATCH_PIECE`.
    pub pieces: Vec<(usize, usize)>,
    pub n_texts: usize,
}

/// A piece of a run, as `Encoder::encode_batch_with`'s `finish` sees it: the index of its text,
/// its number of ids, and whether it is the whole text.
pub type RunPiece = (usize, usize, bool);

impl<T> BatchIds<T> {
    /// Appends the runs a group of texts made: (ids, pieces, what `finish` made of them).
    fn push_runs(&mut self, done: Vec<(Vec<TokenId>, Vec<RunPiece>, T)>) {
        for (ids, pieces, made) in done {
            self.runs.push(ids);
            self.finished.push(made);
            self.pieces.extend(pieces.iter().map(|&(i, n, _)| (i, n)));
        }
    }

    /// The number of ids of each text.
    pub fn text_lens(&self) -> Vec<usize> {
        let mut lens = vec![0; self.n_texts];
        for &(i, n) in &self.pieces {
            lens[i] += n;
        }
        lens
    }

    /// The ids of each text, in order (copied only for texts of several pieces).
    pub fn texts(&self) -> Vec<std::borrow::Cow<'_, [TokenId]>> {
        let mut texts: Vec<std::borrow::Cow<'_, [TokenId]>> = Vec::with_capacity(self.n_texts);
        let mut runs = self.runs.iter();
        let mut run: &[TokenId] = &[];
        for &(i, n) in &self.pieces {
            // a piece lies in one run: past the end of this one, its ids start the next
            while run.len() < n {
                match runs.next() {
                    Some(next) => run = next,
                    None => break,
                }
            }
            let (ids, rest) = run.split_at(n.min(run.len()));
            run = rest;
            match texts.get_mut(i) {
                Some(text) => text.to_mut().extend_from_slice(ids),
                None => texts.push(ids.into()),
            }
        }
        texts
    }
}

/// The texts of a batch, for `Encoder::encode_batch`, which asks for them run by run on the
/// worker that encodes the run. Why not all up front: for Python strings, getting a text's
/// UTF-8 takes the interpreter lock (and copies each non-ASCII one); done by the calling thread
/// for the whole batch, it was ~10% of a 2-thread batch of the large corpus, the other core idle.
pub trait BatchTexts: Sync {
    /// The number of texts.
    fn count(&self) -> usize;
    /// About the length of text `i` in bytes (its length in characters will do).
    fn size(&self, i: usize) -> usize;
    /// The texts `range`.
    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError>;
}

impl<T: AsRef<str> + Sync> BatchTexts for [T] {
    fn count(&self) -> usize {
        self.len()
    }

    fn size(&self, i: usize) -> usize {
        self[i].as_ref().len()
    }

    fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
        Ok(self[range].iter().map(AsRef::as_ref).collect())
    }
}

/// A piece of a batch to encode: the index of its text, and the piece when the text was cut
/// (None: the whole text, got by the worker).
type Task<'t> = (usize, Option<&'t str>);

/// `tasks` (about `size` bytes in all; `bytes_of` tells each one's) cut into runs of consecutive
/// tasks for `threads` threads: one run on one thread; else each run a `2 × threads`-th of the
/// bytes left (at least `MIN_RUN`), so the runs shrink toward the end. Why: the threads take
/// runs in turn, and the last one to finish had up to a whole run left when the others were
/// done (runs of a quarter of a thread's share: one thread alone for the last 14 ms of a 60 ms
/// batch, a run full of new words); small last runs leave a short tail, large first ones keep
/// the runs few.
fn runs_of<'a, 't>(
    tasks: &'a [Task<'t>],
    size: usize,
    threads: usize,
    bytes_of: impl Fn(&Task<'t>) -> usize,
) -> Vec<&'a [Task<'t>]> {
    let share = |left: usize| match threads {
        1 => usize::MAX,
        _ => (left / (2 * threads)).max(MIN_RUN),
    };
    let mut runs = Vec::new();
    let (mut from, mut bytes, mut left) = (0, 0, size);
    let mut target = share(left);
    for (k, task) in tasks.iter().enumerate() {
        bytes += bytes_of(task);
        if bytes >= target {
            runs.push(&tasks[from..=k]);
            left = left.saturating_sub(bytes);
            (from, bytes, target) = (k + 1, 0, share(left));
        }
    }
    if from < tasks.len() {
        runs.push(&tasks[from..]);
    }
    runs
}

/// The smallest run of a batch on several threads, in bytes.
const MIN_RUN: usize = 1 << 16;

/// The end of the group of texts that starts at `first` (about `8 × CHECK_EVERY` bytes, at
/// least one text), and its size.
fn group_end<S: BatchTexts + ?Sized>(texts: &S, first: usize) -> (usize, usize) {
    let (mut end, mut size) = (first, 0);
    while end < texts.count() && size < 8 * CHECK_EVERY {
        size += texts.size(end);
        end += 1;
    }
    (end, size)
}

impl Encoder {
    /// Encodes each text, on `num_threads` threads; `check` is called between groups of texts
    /// of about `8 × CHECK_EVERY` bytes (false stops with `Interrupted`).
    pub fn encode_batch<S: BatchTexts + ?Sized>(
        &self,
        texts: &S,
        set: &Option<SpecialSet>,
        num_threads: usize,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<BatchIds, EncodeError> {
        self.encode_batch_with(texts, set, num_threads, check, &|_, _| ())
    }

    /// `encode_batch`, with `finish` called on each run's ids and pieces by the worker that
    /// encoded it, while the others encode on. For Python: the lists of the run's texts, which,
    /// made on the calling thread after the batch, were a third of a 2-thread batch's time.
    pub fn encode_batch_with<S: BatchTexts + ?Sized, T: Send>(
        &self,
        texts: &S,
        set: &Option<SpecialSet>,
        num_threads: usize,
        check: &mut dyn FnMut() -> bool,
        finish: &(dyn Fn(&[TokenId], &[RunPiece]) -> T + Sync),
    ) -> Result<BatchIds<T>, EncodeError> {
        let threads = crate::mem::worker_count(num_threads);
        let set = self.resolve(set);
        let total: usize = (0..texts.count()).map(|i| texts.size(i)).sum();
        let caches: Vec<Mutex<Cache>> = self
            .take_caches(threads, cache::entries_per_thread(threads))
            .into_iter()
            .map(|mut cache| {
                cache.expect_text(total / threads);
                Mutex::new(cache)
            })
            .collect();
        let encode_run = |run: &[Task<'_>], out, who: usize| {
            self.encode_run(texts, set, &caches[who], run, out, finish)
        };
        let n_texts = texts.count();
        let mut all = BatchIds {
            runs: Vec::new(),
            finished: Vec::new(),
            pieces: Vec::with_capacity(n_texts),
            n_texts,
        };
        let mut first = 0;
        let mut tasks = Vec::new();
        let result = loop {
            if first == n_texts {
                break Ok(all);
            }
            let (end, size) = group_end(texts, first);
            if let Err(e) = self.tasks_of(texts, first..end, set, &mut tasks) {
                break Err(e);
            }
            first = end;
            let bytes_of = |&(i, piece): &Task<'_>| piece.map_or_else(|| texts.size(i), str::len);
            let runs = runs_of(&tasks, size, threads, bytes_of);
            let done = self.run_outs(&runs, bytes_of).and_then(|outs| {
                let outs: Vec<_> = outs.into_iter().map(Mutex::new).collect();
                self.share(threads, runs.len(), |i, who| {
                    let out =
                        std::mem::take(&mut *outs[i].lock().unwrap_or_else(|p| p.into_inner()));
                    encode_run(runs[i], out, who)
                })
            });
            match done {
                Ok(done) => all.push_runs(done),
                Err(e) => break Err(e),
            }
            if first < n_texts && !check() {
                break Err(EncodeError::Interrupted);
            }
        };
        self.give_back(
            caches
                .into_iter()
                .map(|c| c.into_inner().unwrap_or_else(|p| p.into_inner())),
        );
        result
    }

    /// An empty vector for the ids of each of `runs`, on the calling thread: for each run, from
    /// the largest, the smallest of those given back by earlier calls (`give_back_ids`) that is
    /// large enough, else a new one.
    fn run_outs<'t>(
        &self,
        runs: &[&[Task<'t>]],
        bytes_of: impl Fn(&Task<'t>) -> usize,
    ) -> Result<Vec<Vec<TokenId>>, EncodeError> {
        // Room for half an id a byte, as a document gets (`encode_limited`): with a third,
        // every run's ids were copied once to a vector twice as large (perf: the first page
        // faults of 8 MB batches were mostly that copy's). New vectors are made here, not on the
        // workers: freed by this thread later, those made on the workers went back to their
        // allocator arenas, which returned the memory to the system
        let bytes: Vec<usize> = runs
            .iter()
            .map(|run| run.iter().map(&bytes_of).sum())
            .collect();
        let needs: Vec<usize> = bytes.iter().map(|b| b / 2 + 4 * cache::BATCH).collect();
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_unstable_by_key(|&i| std::cmp::Reverse(needs[i]));
        let mut spare = self.take_spare_ids();
        let mut outs: Vec<Vec<TokenId>> = (0..runs.len()).map(|_| Vec::new()).collect();
        for i in order {
            // the smallest that is large enough (`spare` is smallest first)
            let fit = spare.partition_point(|v| v.capacity() < needs[i]);
            outs[i] = match fit < spare.len() {
                true => spare.remove(fit),
                false => {
                    let mut out = Vec::new();
                    out.try_reserve(needs[i])
                        .map_err(|_| EncodeError::OutOfMemory(bytes[i]))?;
                    crate::mem::advise_huge_pages(out.spare_capacity_mut());
                    out
                }
            };
        }
        self.give_back_ids(spare);
        Ok(outs)
    }

    /// Encodes the tasks of one `run` into `out` on this worker, with its `cache`, then calls
    /// `finish` on them: the run's ids, its pieces, and what `finish` made.
    fn encode_run<S: BatchTexts + ?Sized, T>(
        &self,
        texts: &S,
        set: &SpecialSet,
        cache: &Mutex<Cache>,
        run: &[Task<'_>],
        mut out: Vec<TokenId>,
        finish: &(dyn Fn(&[TokenId], &[RunPiece]) -> T + Sync),
    ) -> Result<(Vec<TokenId>, Vec<RunPiece>, T), EncodeError> {
        // the run's texts, got on this worker while the others encode
        let first = run[0].0;
        let got = texts.get(first..run[run.len() - 1].0 + 1)?;
        // one cache per thread of the call: the lock is never contended
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut pieces = Vec::with_capacity(run.len());
        for &(i, piece) in run {
            let start = out.len();
            let text = piece.unwrap_or(got[i - first]);
            self.encode_into(text, set, &mut cache, &mut out)?;
            pieces.push((i, out.len() - start, piece.is_none()));
        }
        drop(cache);
        let made = finish(&out, &pieces);
        Ok((out, pieces, made))
    }

    /// The tasks of texts `range` into `tasks` (emptied first). Texts longer than `BATCH_PIECE`
    /// in pieces (at safe cuts: the same ids): one long text last in a group left the other
    /// threads idle until it was done.
    fn tasks_of<'t, S: BatchTexts + ?Sized>(
        &self,
        texts: &'t S,
        range: std::ops::Range<usize>,
        set: &SpecialSet,
        tasks: &mut Vec<Task<'t>>,
    ) -> Result<(), EncodeError> {
        tasks.clear();
        for i in range {
            match texts.size(i) > BATCH_PIECE {
                true => self.pieces_of(texts.get(i..i + 1)?[0], set, BATCH_PIECE, true, |p| {
                    tasks.push((i, Some(p)))
                }),
                false => tasks.push((i, None)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoder::tests::toy;

    #[test]
    fn batches_give_each_text_its_ids() {
        let enc = toy();
        let long = "aaa aaaaa <s>a ".repeat(BATCH_PIECE / 8);
        let texts = ["", "aaaaa", &long, "", "a<s>", &long, "", "aa aa"];
        for threads in [1, 2, 3] {
            let ids = enc
                .encode_batch(&texts[..], &None, threads, &mut || true)
                .unwrap();
            let got = ids.texts();
            assert_eq!(got.len(), texts.len());
            for ((text, got), n) in texts.iter().zip(&got).zip(ids.text_lens()) {
                let want = enc.encode(text, &None).unwrap();
                assert_eq!(got.as_ref(), want, "{threads} threads");
                assert_eq!(n, want.len());
            }
            let all: Vec<TokenId> = ids.runs.concat();
            assert_eq!(all, got.concat());
            assert!(threads == 1 || ids.runs.len() > 2, "{}", ids.runs.len());
        }
    }

    #[test]
    fn batch_calls_reuse_the_id_vectors_given_back() {
        let enc = toy();
        let texts: Vec<String> = (0..3000).map(|i| format!("aa{i} a<s>aaa ")).collect();
        let want: Vec<Vec<TokenId>> = texts
            .iter()
            .map(|t| enc.encode(t, &None).unwrap())
            .collect();
        let mut given: Vec<*const TokenId> = Vec::new();
        for round in 0..3 {
            let ids = enc
                .encode_batch(&texts[..], &None, 2, &mut || true)
                .unwrap();
            let got: Vec<Vec<TokenId>> = ids.texts().into_iter().map(|t| t.to_vec()).collect();
            assert_eq!(got, want, "round {round}");
            let mine: Vec<*const TokenId> = ids.runs.iter().map(|r| r.as_ptr()).collect();
            // after the first call, every run's vector is one given back (the same runs)
            assert!(
                round == 0 || mine.iter().all(|p| given.contains(p)),
                "round {round}"
            );
            given = mine;
            enc.give_back_ids(ids.runs);
        }
        // the kept vectors are empty, and no more than their budget
        let huge = Vec::with_capacity(super::super::encoder::SPARE_ID_BYTES / 4 + 1);
        enc.give_back_ids(vec![huge]);
        let kept = enc.take_spare_ids();
        assert!(!kept.is_empty() && kept.iter().all(Vec::is_empty));
        let bytes: usize = kept.iter().map(|v| v.capacity() * 4).sum();
        assert!(bytes <= super::super::encoder::SPARE_ID_BYTES);
    }

    #[test]
    fn finish_sees_each_run_and_its_pieces() {
        let enc = toy();
        let long = "aaa aaaaa <s>a ".repeat(BATCH_PIECE / 8);
        let mut texts: Vec<String> = (0..500).map(|i| format!("aa{i} a")).collect();
        texts[100] = long.clone();
        texts[400] = long;
        for threads in [1, 2, 3] {
            let finish = |ids: &[TokenId], pieces: &[RunPiece]| (ids.to_vec(), pieces.to_vec());
            let all = enc
                .encode_batch_with(&texts[..], &None, threads, &mut || true, &finish)
                .unwrap();
            let mut seen = Vec::new();
            for ((ids, pieces), run) in all.finished.iter().zip(&all.runs) {
                assert_eq!(ids, run);
                assert_eq!(pieces.iter().map(|p| p.1).sum::<usize>(), run.len());
                seen.extend(pieces.iter().copied());
            }
            let pieces: Vec<(usize, usize)> = seen.iter().map(|&(i, n, _)| (i, n)).collect();
            assert_eq!(pieces, all.pieces, "{threads} threads");
            for &(i, _, whole) in &seen {
                assert_eq!(whole, texts[i].len() <= BATCH_PIECE, "text {i}");
            }
        }
    }

    /// Texts got run by run, as Python's are: sizes in characters, and maybe one unreadable.
    struct Lazy {
        texts: Vec<String>,
        bad: Option<usize>,
        gets: std::sync::atomic::AtomicUsize,
    }

    impl BatchTexts for Lazy {
        fn count(&self) -> usize {
            self.texts.len()
        }

        fn size(&self, i: usize) -> usize {
            self.texts[i].chars().count()
        }

        fn get(&self, range: std::ops::Range<usize>) -> Result<Vec<&str>, EncodeError> {
            self.gets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.bad {
                Some(i) if range.contains(&i) => Err(EncodeError::Unreadable),
                _ => Ok(self.texts[range].iter().map(String::as_str).collect()),
            }
        }
    }

    #[test]
    fn batch_texts_got_by_runs() {
        let enc = toy();
        // 3-byte characters: sizes in characters undercount
        let wide = "aa \u{4e00}\u{4e01} aaaa ".repeat(BATCH_PIECE / 8);
        let mut texts: Vec<String> = (0..300).map(|i| format!("aa{i} \u{e9}aaa")).collect();
        texts.insert(100, wide.clone());
        texts.insert(200, wide.repeat(3));
        let want = enc
            .encode_batch(&texts[..], &None, 1, &mut || true)
            .unwrap();
        let lazy = Lazy {
            texts,
            bad: None,
            gets: 0.into(),
        };
        for threads in [1, 2, 3] {
            let got = enc
                .encode_batch(&lazy, &None, threads, &mut || true)
                .unwrap();
            assert_eq!(got.texts(), want.texts(), "{threads} threads");
        }
        assert!(lazy.gets.load(std::sync::atomic::Ordering::Relaxed) > 3);
        let bad = Lazy {
            bad: Some(150),
            ..lazy
        };
        enc.drop_caches();
        let err = enc.encode_batch(&bad, &None, 2, &mut || true).err();
        assert!(matches!(err, Some(EncodeError::Unreadable)), "{err:?}");
        // the workers' caches were given back
        assert_eq!(enc.spare_caches.lock().unwrap().len(), 2);
    }
}
