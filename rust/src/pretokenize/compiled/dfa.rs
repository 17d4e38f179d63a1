//! One DFA over class bytes: regex-automata compiles the alternatives (one pattern each,
//! leftmost-first, anchored), and its states are copied into a table of our own over classes.
//! Matches are delayed by one character, as in regex-automata: the state entered on the
//! character at `i` says whether the text before `i` matched (`matches`), and the end of the
//! text has a transition of its own (`at_end`).

use std::collections::HashMap;

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};
use regex_syntax::hir::Hir;

use super::Refusal;

/// No state: the DFA died.
pub(super) const DEAD: u16 = u16::MAX;
/// The start state's number.
pub(super) const START: u16 = 0;
/// The most states a DFA may have.
const MAX_STATES: usize = 4096;

/// A leftmost-first DFA over classes: `next(q, class)`, and per state whether it reports a
/// match.
pub(super) struct ClassDfa {
    classes: usize,
    next: Vec<u16>,
    /// The state reports that the text before its last character matched.
    matches: Vec<bool>,
    /// The text up to the end matches: the end-of-text transition reports a match.
    at_end: Vec<bool>,
    /// The state reports a match that no longer text can replace: every character kills it,
    /// and the end of the text adds no match.
    ended: Vec<bool>,
    /// Every text from this state, continued in any way, reports a match (at a later
    /// character or at the end).
    sure: Vec<bool>,
}

impl ClassDfa {
    /// The DFA of `hirs` (over class bytes, `codes[class]` the byte of each class).
    pub(super) fn new(hirs: &[Hir], codes: &[u8]) -> Result<Self, Refusal> {
        let too_large = |_| Refusal::TooLarge("the DFA");
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .utf8(false)
                    .which_captures(thompson::WhichCaptures::None),
            )
            .build_many_from_hir(hirs)
            .map_err(|_| Refusal::TooLarge("the NFA"))?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .start_kind(StartKind::Anchored)
                    .accelerate(false)
                    .dfa_size_limit(Some(16 << 20))
                    .determinize_size_limit(Some(16 << 20)),
            )
            .build_from_nfa(&nfa)
            .map_err(too_large)?;
        let s0 = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|_| Refusal::TooLarge("the DFA's start"))?;
        // number the states reachable from the start, in the order found
        let (mut order, mut index) = (vec![s0], HashMap::from([(s0, START)]));
        let (mut next, mut matches, mut at_end) = (Vec::new(), Vec::new(), Vec::new());
        let mut q = 0;
        while q < order.len() {
            let s = order[q];
            matches.push(dfa.is_match_state(s));
            at_end.push(dfa.is_match_state(dfa.next_eoi_state(s)));
            for &code in codes {
                let t = dfa.next_state(s, code);
                if dfa.is_dead_state(t) {
                    next.push(DEAD);
                    continue;
                }
                let n = order.len() as u16;
                next.push(*index.entry(t).or_insert_with(|| {
                    order.push(t);
                    n
                }));
            }
            q += 1;
            if order.len() > MAX_STATES {
                return Err(Refusal::TooLarge("the DFA"));
            }
        }
        let mut dfa = ClassDfa {
            classes: codes.len(),
            next,
            matches,
            at_end,
            ended: Vec::new(),
            sure: Vec::new(),
        };
        dfa.ended = (0..dfa.len())
            .map(|q| {
                let q = q as u16;
                dfa.matches(q) && !dfa.at_end(q) && dfa.row(q).all(|t| t == DEAD)
            })
            .collect();
        dfa.sure = dfa.sure_states();
        Ok(dfa)
    }

    /// How many states.
    pub(super) fn len(&self) -> usize {
        self.matches.len()
    }

    /// How many classes it reads.
    pub(super) fn classes(&self) -> usize {
        self.classes
    }

    fn row(&self, q: u16) -> impl Iterator<Item = u16> + '_ {
        let at = q as usize * self.classes;
        self.next[at..at + self.classes].iter().copied()
    }

    /// The state after `q` on a character of class `c` (DEAD if none).
    #[inline(always)]
    pub(super) fn next(&self, q: u16, c: u8) -> u16 {
        self.next[q as usize * self.classes + c as usize]
    }

    pub(super) fn matches(&self, q: u16) -> bool {
        self.matches[q as usize]
    }

    pub(super) fn at_end(&self, q: u16) -> bool {
        self.at_end[q as usize]
    }

    pub(super) fn ended(&self, q: u16) -> bool {
        self.ended[q as usize]
    }

    pub(super) fn sure(&self, q: u16) -> bool {
        self.sure[q as usize]
    }

    /// `sure` for every state: the largest set of states that match at the end and whose every
    /// character leads to a state that reports a match or is in the set (texts are finite, so
    /// every text from such a state ends in a match).
    fn sure_states(&self) -> Vec<bool> {
        let mut sure = self.at_end.clone();
        loop {
            let mut changed = false;
            for q in 0..self.len() {
                if sure[q]
                    && !self
                        .row(q as u16)
                        .all(|t| t != DEAD && (self.matches(t) || sure[t as usize]))
                {
                    sure[q] = false;
                    changed = true;
                }
            }
            if !changed {
                return sure;
            }
        }
    }
}
