//! Patterns compiled into one automaton over their character classes, run as one scan over the
//! text: any pattern that is not a preset runs at nearly a preset scanner's speed, and splits
//! exactly as fancy-regex 0.20.2's `find_iter` does (empty matches skipped, as everywhere in the
//! project).
//!
//! The stages: `plan.rs` reads the pattern with fancy-regex's parser into its top-level
//! alternatives; `classes.rs` cuts Unicode into the classes the pattern can tell apart;
//! `dfa.rs` compiles the alternatives over class bytes with regex-automata (leftmost-first,
//! anchored); `machine.rs` follows the pending pretokens a text can leave open and `table.rs`
//! makes them a table; `scan.rs` and `streams.rs` run it, `exact.rs` settles what the table does
//! not. Built in a few milliseconds at load time: nothing is stored.
//!
//! What stays on fancy-regex (`Refusal`): look-behind and anything that looks back (`^`, `\b`,
//! `(?m)` anchors: a pretoken would depend on the text before its start, which the scan and its
//! restarts do not keep); backreferences and conditionals (not regular); look-aheads but
//! `X+(?!Y)` with X, Y one-character classes (a lookahead of more characters, or inside a
//! repetition, is not one step of lookahead); atomic groups that can be backtracked into;
//! alternatives that can match the empty string (fancy-regex's rules for empty matches);
//! lookaheads of different classes in one pattern; more than 127 classes or 4096 DFA states.

mod classes;
mod dfa;
pub mod exact;
mod machine;
mod plan;
mod scan;
mod streams;
mod table;
#[cfg(test)]
pub(crate) mod tests;

use classes::{collect, Classes};
use dfa::ClassDfa;
use exact::Outer;
use machine::{Machine, Stage, MAX_CONFIGS};
use plan::{plan, Alt};
use table::Table;

/// Why a pattern is not compiled (it then runs on fancy-regex).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it does not parse: {0}")]
    Parse(String),
    #[error("it has a look-behind")]
    LookBehind,
    #[error("it has a look-ahead other than X+(?!Y) over one-character classes")]
    LookAhead,
    #[error("it has a backreference")]
    Backreference,
    #[error("it has an atomic group or possessive quantifier that can be backtracked into")]
    Atomic,
    #[error("it has an anchor other than $ (start of text or line)")]
    Anchor,
    #[error("it has a word boundary")]
    WordBoundary,
    #[error("an alternative can match the empty string")]
    EmptyMatch,
    #[error("it has a construct only a backtracking engine runs")]
    Construct,
    #[error("an earlier split of a sequence does not settle its pieces at once")]
    Sequence,
    #[error("{0} would be too large")]
    TooLarge(&'static str),
}

/// A pattern (or a sequence of splits, `sequence.rs`) compiled into one scan.
pub struct Compiled {
    classes: Classes,
    /// The splits' DFAs: those of the earlier splits of a sequence, then the last one's.
    dfas: Vec<ClassDfa>,
    /// The text between matches is kept as pieces (HF `Split`), not dropped.
    gaps: bool,
    /// Two streams (a pattern alone: its sure starts are places to start again).
    streams: bool,
    table: Table,
    outer: Outer,
    /// Every character is in some match: the text between matches is always empty.
    total: bool,
}

impl Compiled {
    /// `pattern` compiled, its unmatched text dropped as `find_iter` drops it.
    pub fn new(pattern: &str) -> Result<Self, Refusal> {
        Self::build(&[pattern], false)
    }

    /// A sequence of HF `Split`s that keep every piece (`Isolated`), each running on the pieces
    /// of the one before, compiled into one scan: every split but the last must settle its
    /// pieces at once (`Machine::immediate`), and all must fit one table.
    pub(crate) fn sequence(patterns: &[&str]) -> Result<Self, Refusal> {
        Self::build(patterns, true)
    }

    fn build(patterns: &[&str], gaps: bool) -> Result<Self, Refusal> {
        let plans = patterns
            .iter()
            .map(|p| plan(p))
            .collect::<Result<Vec<_>, _>>()?;
        let (mut sets, mut ys) = (Vec::new(), Vec::new());
        for alt in plans.iter().flatten() {
            collect(&alt.hir(), &mut sets);
            if let Alt::LookRun { y, .. } = alt {
                if !ys.contains(y) {
                    ys.push(y.clone());
                }
            }
        }
        if ys.len() > 1 {
            return Err(Refusal::LookAhead);
        }
        sets.extend(ys.iter().cloned());
        let mut classes = Classes::new(&sets)?;
        if let Some(y) = ys.first() {
            if !classes.encode_lookahead(y) {
                return Err(Refusal::TooLarge("the classes of the lookahead"));
            }
        }
        let dfas = plans
            .iter()
            .map(|alts| {
                let hirs: Vec<_> = alts
                    .iter()
                    .map(|alt| match alt {
                        Alt::Regular(h) => classes.rewrite(h),
                        Alt::LookRun { .. } => classes.rewrite_with_lookahead(&alt.hir()),
                    })
                    .collect();
                ClassDfa::new(&hirs, &classes.code)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (last, earlier) = dfas.split_last().ok_or(Refusal::Construct)?;
        let machine = Machine {
            outer: earlier
                .iter()
                .map(|dfa| Stage { dfa, gaps: true })
                .collect(),
            inner: Stage { dfa: last, gaps },
        };
        if !machine.outer.iter().all(Machine::immediate) {
            return Err(Refusal::Sequence);
        }
        let explored = machine.explore(classes.count);
        let table = Table::new(&machine, &explored, classes.ascii());
        let all = explored.configs.len();
        if patterns.len() > 1 && (table.configs.len() < all || all >= MAX_CONFIGS) {
            return Err(Refusal::TooLarge("the sequence's table"));
        }
        let outer = Outer::new(&machine, &table.configs, classes.count).ok_or(Refusal::Sequence)?;
        let total = explored.closed && table.finish.iter().all(Option::is_some);
        drop(machine);
        Ok(Compiled {
            classes,
            dfas,
            gaps,
            streams: patterns.len() == 1,
            table,
            outer,
            total,
        })
    }

    /// The last split's DFA (the pattern's own).
    fn last(&self) -> &ClassDfa {
        &self.dfas[self.dfas.len() - 1]
    }

    /// Whether every character of every text is in some match: then keeping the text between
    /// matches (HF `Split` with `Isolated`) splits as dropping it does.
    pub fn total(&self) -> bool {
        self.total
    }

    /// Calls `f(start, end)` on each piece of `text`, in order.
    #[inline]
    pub fn for_each_span(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        self.scan(text.as_bytes(), &mut f);
    }

    /// Whether a cut before byte `p` (a character boundary, 0 < p < len) keeps the pieces:
    /// by the classes of the characters on either side (`table.rs` has the proof).
    #[inline]
    pub fn can_cut_before(&self, b: &[u8], p: usize) -> bool {
        let x = crate::pretokenize::gpt4::char_before(b, p);
        self.table
            .cut(self.classes.at(b, x).0, self.classes.at(b, p).0)
    }

    /// Its sizes, for profiling: classes, DFA states, table rows and bytes.
    pub fn stats(&self) -> String {
        let states: Vec<usize> = self.dfas.iter().map(ClassDfa::len).collect();
        let t = &self.table;
        format!(
            "{} classes, DFA states {states:?}, {} rows ({} KiB)",
            self.classes.count,
            t.configs.len(),
            (t.entries.len() * 2) >> 10
        )
    }

    /// Whether any cut can be allowed.
    pub fn cuts_anywhere(&self) -> bool {
        self.table.cuts_anywhere()
    }
}
