//! The exact search, for what the scan's table does not decide (its escape row, and the end of
//! a text where pending starts do not settle): pretokens found one at a time by the
//! leftmost-first DFA, as fancy-regex's `find_iter` finds them, from the last sure start to a
//! position at or past the escape, where the scan starts again.
//!
//! In a sequence of splits the last split's pieces end where an earlier split's do: those ends
//! are found by walking the earlier splits' own small table (`Outer`) from the escape on, only
//! as far as the search reads.

use std::collections::HashMap;

use super::dfa::{DEAD, START};
use super::machine::{Config, Level, Machine, FRESH};
use super::Compiled;

/// The earlier splits of a sequence on their own: a state per distinct tuple of their levels,
/// and per state and class the next state and whether a piece ends before that character.
pub(super) struct Outer {
    next: Vec<(u32, bool)>,
    states: Vec<Vec<Vec<Level>>>,
    index: HashMap<Vec<Vec<Level>>, u32>,
    classes: usize,
}

impl Outer {
    /// The table of the earlier splits' states found in `configs` (all of them, with every
    /// state they lead to: the exploration added a configuration for each).
    pub(super) fn new(machine: &Machine, configs: &[Config], classes: usize) -> Option<Self> {
        let mut states: Vec<Vec<Vec<Level>>> = Vec::new();
        let mut index = HashMap::new();
        for cfg in configs {
            if !index.contains_key(&cfg.outer) {
                index.insert(cfg.outer.clone(), states.len() as u32);
                states.push(cfg.outer.clone());
            }
        }
        let mut next = Vec::with_capacity(states.len() * classes);
        for s in &states {
            for c in 0..classes as u8 {
                let (to, forced) = machine.step_outer(s, c);
                next.push((*index.get(&to)?, forced));
            }
        }
        Some(Outer {
            next,
            states,
            index,
            classes,
        })
    }
}

/// The earlier splits walked from the escape: where the current piece ends.
struct Walk<'o> {
    outer: &'o Outer,
    /// Where the walk began: no piece ends before it (the last split would have been
    /// restarted there, after its last sure start).
    from: usize,
    pos: usize,
    state: u32,
    end: Option<usize>,
}

impl Walk<'_> {
    /// Whether the piece that holds the last split's text ends at `at` (the end of the text,
    /// or an earlier split's piece end), walking as far as `at`.
    fn ends_at(&mut self, c: &Compiled, b: &[u8], at: usize) -> bool {
        if at >= b.len() {
            return true;
        }
        if self.outer.states.len() <= 1 || at < self.from {
            return false;
        }
        self.walk(c, b, at + 1);
        self.end == Some(at)
    }

    /// Walks up to `to` (or the end of the piece).
    fn walk(&mut self, c: &Compiled, b: &[u8], to: usize) {
        while self.end.is_none() && self.pos < to && self.pos < b.len() {
            let (class, len) = c.classes.at(b, self.pos);
            let at = self.state as usize * self.outer.classes + class as usize;
            let (next, forced) = self.outer.next[at];
            if forced {
                self.end = Some(self.pos);
            } else {
                self.state = next;
                self.pos += len;
            }
        }
    }
}

impl Compiled {
    /// The end of the leftmost-first match anchored at `p` in the current piece, if any.
    fn match_at(&self, b: &[u8], p: usize, walk: &mut Walk) -> Option<usize> {
        let dfa = self.last();
        let (mut q, mut at, mut last) = (START, p, None);
        loop {
            if walk.ends_at(self, b, at) {
                return if dfa.at_end(q) { Some(at) } else { last };
            }
            let (c, len) = self.classes.at(b, at);
            q = dfa.next(q, c);
            if q == DEAD {
                return last;
            }
            if dfa.matches(q) {
                last = Some(at);
            }
            at += len;
        }
    }

    /// Calls `f` on the pieces from `p` until one ends at or past `until` (or the piece ends);
    /// returns where the last one ends.
    fn pieces(
        &self,
        b: &[u8],
        mut p: usize,
        until: usize,
        walk: &mut Walk,
        f: &mut impl FnMut(usize, usize),
    ) -> usize {
        while p < until && !walk.ends_at(self, b, p) {
            if !self.gaps {
                match self.match_at(b, p, walk) {
                    Some(e) => {
                        f(p, e);
                        p = e;
                    }
                    // no match here: the character is dropped, as `find_iter` skips it
                    None => p += char_len(b[p]),
                }
                continue;
            }
            // the leftmost match start from p in the piece; the text before it is a piece
            let mut q = p;
            let found = loop {
                if walk.ends_at(self, b, q) {
                    break None;
                }
                if let Some(e) = self.match_at(b, q, walk) {
                    break Some((q, e));
                }
                q += char_len(b[q]);
            };
            if q > p {
                f(p, q);
            }
            p = q;
            if let Some((q, e)) = found {
                f(q, e);
                p = e;
            }
        }
        p
    }

    /// Calls `f` on the pieces from the sure start `tok` until one ends at or past `i` (the
    /// scan escaped on the character at `i`, in row `row`; past that character if `tok` is
    /// `i`), exactly as the engine splits them; returns where the scan starts again and the
    /// row it starts in.
    pub(super) fn resolve(
        &self,
        b: &[u8],
        tok: usize,
        i: usize,
        row: usize,
        f: &mut impl FnMut(usize, usize),
    ) -> (usize, usize) {
        ESCAPES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let table = &self.table;
        let outer = &table.configs[row / table.width].outer;
        let state = self.outer.index.get(outer).copied().unwrap_or(0);
        let new_walk = || Walk {
            outer: &self.outer,
            from: i,
            pos: i,
            state,
            end: None,
        };
        let mut walk = new_walk();
        // past `i`, or past its character when nothing was pending there (the scan would
        // escape again at once)
        let until = if tok < i { i } else { i + 1 };
        let p = self.pieces(b, tok, until, &mut walk, f);
        // the row of a fresh last split under the earlier splits' states at p
        let mut at_p = new_walk();
        at_p.walk(self, b, p);
        let cfg = Config {
            outer: self.outer.states[at_p.state as usize].clone(),
            levels: vec![FRESH],
        };
        // every such configuration has a row: a pattern alone has one, the start; a
        // sequence is compiled only when all its configurations fit (`Compiled::sequence`)
        debug_assert!(table.rows.contains_key(&cfg));
        let row = table.rows.get(&cfg).copied().unwrap_or(0);
        (p, row * table.width)
    }
}

/// The length of the UTF-8 character whose first byte is `b0`.
#[inline(always)]
pub(super) fn char_len(b0: u8) -> usize {
    match b0 {
        0..=0x7f => 1,
        0x80..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// TEMPORARY
pub static ESCAPES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
