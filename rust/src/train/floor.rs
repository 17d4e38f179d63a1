//! Which new pairs the merge loop tracks (see `Floor`): those made with a count that a later
//! merge may still need, by a guess from the counts merged so far (`guess_floor`). The loop
//! itself, and counting every pair again when the guess was too high, are `merge_loop.rs`'s.

/// Which new pairs are tracked. A pair's count only falls after the merge that makes it (only
/// that merge can add occurrences), and each merge's count is at most the one before (a new
/// pair's occurrences sit on the merged pair's). So a pair made with a count below every later
/// merge's count can never be chosen, and need not be tracked: no table entry, heap entry or
/// word list. Which pairs those are is a guess (`guess_floor`); exactness does not rest on
/// it: `untracked` bounds every untracked pair's count, and when the best tracked pair is not
/// above it, every pair is counted again from the words (`State::recount`).
pub(super) struct Floor {
    /// Pairs made with a count below this are not tracked.
    floor: u64,
    /// No untracked pair's count is above this (0: every pair is tracked).
    pub(super) untracked: u64,
    /// The count of every merge of this loop so far, for the guess.
    history: Vec<u64>,
    /// The merges this loop is asked for.
    target: usize,
    /// How many times every pair was counted again (the guess was too high).
    recounts: u32,
    guess: Guess,
}

/// A floor for new pairs from the counts of the merges so far, the merges asked for and the
/// recounts so far, or None to leave it.
pub(super) type Guess = fn(history: &[u64], target: usize, recounts: u32) -> Option<u64>;

impl Floor {
    pub(super) fn new(target: usize, guess: Guess) -> Self {
        Floor {
            floor: 0,
            untracked: 0,
            history: Vec::new(),
            target,
            recounts: 0,
            guess,
        }
    }

    /// The floor, the pairs of the first index below it left out: none counted above
    /// `left_out`.
    pub(super) fn start_at(&mut self, floor: u64, left_out: u64) {
        self.floor = floor;
        self.untracked = self.untracked.max(left_out);
    }

    /// The floor now: pairs counted fewer times are not tracked.
    pub(super) fn value(&self) -> u64 {
        self.floor
    }

    /// Whether a pair counted `count` times is above the floor (see `tracks`).
    pub(super) fn keeps(&self, count: u64) -> bool {
        count >= self.floor
    }

    /// Whether a pair counted `count` times is tracked; if not, its count is bounded.
    pub(super) fn tracks(&mut self, count: u64) -> bool {
        if !self.keeps(count) {
            self.untracked = self.untracked.max(count);
        }
        self.keeps(count)
    }

    /// Starts over before every pair is counted again, because the best tracked pair (`best`
    /// times) may not be the best: from now on pairs below a quarter of it go untracked.
    pub(super) fn recount(&mut self, best: u64) {
        self.floor = best / 4;
        self.untracked = 0;
        self.recounts += 1;
    }

    /// Notes a merge's count, and raises the floor if the guess says so.
    pub(super) fn merged(&mut self, count: u64) {
        self.history.push(count);
        if let Some(floor) = (self.guess)(&self.history, self.target, self.recounts) {
            self.floor = self.floor.max(floor);
        }
    }
}

/// The floor for new pairs, guessed at 1/16, 1/8, 1/4 and 1/2 of the merges: a quarter of the
/// last merge's predicted count (a sixteenth after a recount, and so on). Merge counts fall
/// about as a power of the merge's rank (on the large corpus as k^-1.1 past the first hundred
/// merges, faster further on): the power is fitted over the last eighth of the ranks so far,
/// which overestimated the last count by 1.4-2.9x there (10K and 32K merges). Too high a guess
/// costs a recount; too low, speed.
pub(super) fn guess_floor(history: &[u64], target: usize, recounts: u32) -> Option<u64> {
    let m = history.len();
    if m < 64 || ![16, 8, 4, 2].iter().any(|&d| m == target / d) {
        return None;
    }
    let (now, before) = (history[m - 1] as f64, history[m / 8 - 1] as f64);
    let power = ((before / now).ln() / 8f64.ln()).clamp(0.0, 4.0);
    let last = now * (m as f64 / target as f64).powf(power);
    Some((last / 4f64.powi(recounts as i32 + 1)) as u64)
}

/// The floor of the first index when the words go on from earlier merges (a continued run, the
/// second stage of superword training): the count of the `keep`-th most counted pair (0 if
/// there are no more). Their words hold millions of pairs, nearly all rare, where words of
/// bytes hold at most 65,536; listing them all took 21 s and 1 GB on the large corpus.
pub(super) fn first_floor(counts: &[u64], keep: usize) -> u64 {
    let mut counted: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    if counted.len() <= keep {
        return 0;
    }
    let (_, &mut kth, _) = counted.select_nth_unstable_by(keep, |a, b| b.cmp(a));
    kth
}
