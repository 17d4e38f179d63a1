//! One merge in one word, and what it moves: `merge_word` rewrites the word's tokens and tells
//! where each count moves between pairs (`Moved`); a `Delta` sums those moves by neighbour for
//! one thread. Which words are visited, and applying the sums to the pairs, are the loop's
//! (`runs.rs`, `merge_loop.rs`).

use super::arena::{pair_bits, Token};
use crate::types::{Pair, TokenId};

/// Merges `(a, b)` into `new` in the `len` tokens of a word (`t` holds its whole units),
/// left to right and non-overlapping, tells `moved` where counts move (see `Moved`), and
/// returns the word's new length. Words of up to 64 tokens go from one occurrence to the next
/// by the bits of `pair_bits` and copy the tokens between: looking at every token after the
/// first occurrence was a third of a merge's instructions (callgrind).
pub(super) fn merge_word<T: Token>(
    t: &mut [T],
    len: usize,
    (a, b): Pair,
    new: TokenId,
    mut moved: impl FnMut(Moved),
) -> usize {
    let (a, b, new) = (T::of(a), T::of(b), T::of(new));
    let Some(mut at) = pair_bits(t, len, a, b) else {
        return merge_long_word(t, len, (a, b), new, moved);
    };
    // Up to the first occurrence nothing changes (and a word that lost the pair is not written).
    if at == 0 {
        return len;
    }
    let first = at.trailing_zeros() as usize;
    // read from i, write at j; `merged`: the last token written is a new one
    let (mut i, mut j, mut merged) = (first, first, false);
    while at != 0 {
        let p = at.trailing_zeros() as usize;
        at &= at - 1;
        if p < i {
            continue; // overlaps the occurrence just merged (a = b)
        }
        if p > i {
            t.copy_within(i..p, j);
            j += p - i;
            merged = false;
        }
        if j > 0 {
            moved(if merged {
                Moved::Run
            } else {
                Moved::Left(t[j - 1].id())
            });
        }
        // An occurrence right after this one moves (b, a) as a run instead.
        if p + 2 < len && at >> (p + 2) & 1 == 0 {
            moved(Moved::Right(t[p + 2].id()));
        }
        t[j] = new;
        j += 1;
        i = p + 2;
        merged = true;
    }
    t.copy_within(i..len, j);
    j + len - i
}

/// `merge_word` token by token, for words of more than 64 tokens.
fn merge_long_word<T: Token>(
    t: &mut [T],
    len: usize,
    (a, b): (T, T),
    new: T,
    mut moved: impl FnMut(Moved),
) -> usize {
    let Some(first) = t[..len].windows(2).position(|p| p[0] == a && p[1] == b) else {
        return len;
    };
    let (mut i, mut j) = (first, first);
    let mut prev_merged = false;
    while i < len {
        if i + 1 < len && t[i] == a && t[i + 1] == b {
            if j > 0 {
                moved(if prev_merged {
                    Moved::Run
                } else {
                    Moved::Left(t[j - 1].id())
                });
            }
            if i + 2 < len {
                let y = t[i + 2];
                // A merge right after this one moves (b, a) as a run instead.
                if !(y == a && i + 3 < len && t[i + 3] == b) {
                    moved(Moved::Right(y.id()));
                }
            }
            t[j] = new;
            prev_merged = true;
            i += 2;
        } else {
            t[j] = t[i];
            prev_merged = false;
            i += 1;
        }
        j += 1;
    }
    j
}

/// Where one occurrence of the merged pair moves a word's count: from (x, a) to (x, new), from
/// (b, y) to (new, y), or from (b, a) to (new, new) between two merged occurrences. Every
/// occurrence of (a, b) goes (so do those overlapping it when a = b): its count drops to 0.
pub(super) enum Moved {
    Left(TokenId),
    Right(TokenId),
    Run,
}

/// The counts one thread moved while merging a run of words, and the words behind them. Each
/// on lines of its own: the threads' deltas sit side by side, and where two of them shared a
/// line it went back and forth between the cores writing it (false sharing: a build whose
/// deltas happened to share one ran the large corpus's merge stage about 30% slower).
#[derive(Default)]
#[repr(align(128))]
pub(super) struct Delta {
    /// By left neighbour x: what moved from (x, a) to (x, new).
    pub(super) left: Half,
    /// By right neighbour y: what moved from (b, y) to (new, y).
    pub(super) right: Half,
    /// The count moved from (b, a) to (new, new), and its words (each once, in order).
    pub(super) run: u64,
    pub(super) run_words: Vec<u32>,
}

impl Delta {
    /// The left half (`left`) or the right one.
    pub(super) fn half(&mut self, left: bool) -> &mut Half {
        if left {
            &mut self.left
        } else {
            &mut self.right
        }
    }
}

/// The moves of one side's neighbours, by the neighbour's id.
#[derive(Default)]
pub(super) struct Half {
    /// What each neighbour moved, in one 16-byte slot (sum, last word, words listed): three
    /// arrays had made a first touch three cache misses (perf: the sum's load was a third of
    /// the visits' callback).
    pub(super) slots: Vec<Slot>,
    /// The neighbours with a nonzero sum, in the order first seen.
    pub(super) ids: Vec<TokenId>,
    /// (neighbour, word) for every word a new pair appeared in, each once, in word order.
    pub(super) words: Vec<(TokenId, u32)>,
}

/// One neighbour's moves.
#[derive(Clone, Copy, Default)]
#[repr(align(16))]
pub(super) struct Slot {
    /// The count moved; 0 where untouched.
    pub(super) sum: u64,
    /// The last word that listed the neighbour (valid where `sum` is not 0).
    pub(super) last: u32,
    /// How many words listed it.
    pub(super) listed: u32,
}

impl Half {
    /// Makes room for neighbour ids below `n`.
    pub(super) fn grow(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize(n.next_power_of_two(), Slot::default());
        }
    }

    /// Adds `c` moved by neighbour `x` in the word `w`, and lists the word once.
    #[inline(always)]
    pub(super) fn add(&mut self, x: TokenId, c: u64, w: u32) {
        let s = &mut self.slots[x as usize];
        if s.sum == 0 {
            self.ids.push(x);
        } else if s.last == w {
            s.sum += c;
            return;
        }
        s.sum += c;
        s.last = w;
        s.listed += 1;
        self.words.push((x, w));
    }

    /// Adds the sums of `other` into this half and leaves `other`'s sums empty.
    pub(super) fn absorb(&mut self, other: &mut Half) {
        for x in other.ids.drain(..) {
            let theirs = std::mem::take(&mut other.slots[x as usize]);
            let mine = &mut self.slots[x as usize];
            if mine.sum == 0 {
                self.ids.push(x);
            }
            mine.sum += theirs.sum;
            mine.listed += theirs.listed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_merge_as_the_plain_loop_does_with_u16_and_u32_tokens() {
        let mut next = crate::testing::numbers(7);
        for _ in 0..3000 {
            // Lengths around the 64-token mask and the units; few ids, so pairs repeat.
            let len = next(80) as usize;
            let word: Vec<TokenId> = (0..len).map(|_| 97 + next(3) as TokenId).collect();
            let pair = (97 + next(3) as TokenId, 97 + next(3) as TokenId);
            let mut plain = Vec::new();
            let mut i = 0;
            while i < len {
                if i + 1 < len && (word[i], word[i + 1]) == pair {
                    plain.push(300);
                    i += 2;
                } else {
                    plain.push(word[i]);
                    i += 1;
                }
            }
            // What moved, as (kind, neighbour).
            fn record(moves: &mut Vec<(u8, TokenId)>) -> impl FnMut(Moved) + '_ {
                |m| {
                    moves.push(match m {
                        Moved::Left(x) => (0, x),
                        Moved::Right(y) => (1, y),
                        Moved::Run => (2, 0),
                    })
                }
            }
            let mut moves = Vec::new();
            let mut narrow: Vec<u16> = word.iter().map(|&t| t as u16).collect();
            narrow.resize(len.div_ceil(8) * 8, 97);
            let n = merge_word(&mut narrow, len, pair, 300, record(&mut moves));
            let narrow: Vec<TokenId> = narrow[..n].iter().map(|&t| t as TokenId).collect();
            let mut wide = word.clone();
            wide.resize(len.div_ceil(4) * 4, 97);
            let mut wide_moves = Vec::new();
            let n = merge_word(&mut wide, len, pair, 300, record(&mut wide_moves));
            assert_eq!(narrow, plain, "{word:?} {pair:?}");
            assert_eq!(wide[..n], plain[..], "{word:?} {pair:?}");
            assert_eq!(moves.is_empty(), plain.len() == len || len < 3);
            assert_eq!(moves, wide_moves);
            // Token by token (the path of words past 64 tokens), the same moves.
            let mut by_token = word.clone();
            let mut token_moves = Vec::new();
            let n = merge_long_word(&mut by_token, len, pair, 300, record(&mut token_moves));
            assert_eq!(by_token[..n], plain[..], "{word:?} {pair:?}");
            assert_eq!(moves, token_moves, "{word:?} {pair:?}");
            // Each occurrence moves its left and right neighbours, or a run between two.
            let merged = len - plain.len();
            let runs = token_moves.iter().filter(|m| m.0 == 2).count();
            let lefts = token_moves.iter().filter(|m| m.0 == 0).count();
            assert_eq!(
                lefts + runs,
                merged - usize::from(plain.first() == Some(&300))
            );
        }
    }
}
