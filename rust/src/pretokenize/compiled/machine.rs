//! What the scan keeps between characters, and the table built from it.
//!
//! fancy-regex's `find_iter` takes, from each pretoken's start, the last match the
//! leftmost-first DFA reports before it dies; the next pretoken starts where that one ends. A
//! match reported while the DFA goes on is only *tentative*: a longer one may replace it. So
//! the scan keeps a stack of *levels*: level 0 runs from the last sure start; each further level
//! runs from the end of the previous level's last match, and is what comes next if that match
//! stays the last. When a level reports a match, the levels after it are dropped and a new one
//! starts here; when it dies, its pretoken ends where the next level starts (`Done`). A `Done`
//! level 0 makes that start sure. (`\s*[\r\n]+` in `"\n    x"` holds three levels before the
//! `x` settles them: the newline, the spaces but the last, the last space.)
//!
//! A *configuration* is the levels' DFA states (and, in a sequence of splits, the states of the
//! earlier splits, which force a piece end at their own ends). The configurations reachable
//! from the start are few (tens to a few hundred), so each gets a row of the scan's table: per
//! character class, the next configuration, the slot (after the sure starts) where this
//! position is written as a level's start, and how many starts become sure. Whatever this model
//! leaves out (a level that finds no match where the next candidate start lies behind, too
//! many levels) is a *failure*: the table's escape row, and the exact search (`scan.rs`).
//!
//! With gaps (HF `Split` keeps the text between matches as pieces) a level may also be a
//! `Gap`: no match starts there. A run that dies after one character without a match makes
//! its start a gap character, and the next candidate is the character at hand.

use std::collections::HashMap;

use super::dfa::{ClassDfa, DEAD, START};

/// Levels a configuration may hold (its pending starts take slots 0..MAX_LEVELS - 2; slot 7 is
/// where a step without a start writes).
const MAX_LEVELS: usize = 7;
/// The slot a step writes to when it starts no level: past every pending start.
pub(super) const NO_SLOT: u8 = 7;
/// The most configurations explored.
pub(super) const MAX_CONFIGS: usize = 3000;

/// A run of the pattern from one candidate pretoken start.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum Level {
    /// The DFA in state `q`, having read `age` characters (0, 1, or 2 for more).
    Live { q: u16, age: u8 },
    /// Its pretoken ends where the next level starts.
    Done,
    /// With gaps: no match starts from its start up to the next level's start (or up to here).
    Gap,
    /// Without gaps: no match starts at its start (no alternative starts with that character).
    Dead,
}

/// The levels of a run that has read nothing.
pub(super) const FRESH: Level = Level::Live { q: START, age: 0 };

/// One pattern and whether the text between its matches is kept (HF `Split`) or dropped.
pub(super) struct Stage<'a> {
    pub(super) dfa: &'a ClassDfa,
    pub(super) gaps: bool,
}

/// A step's result: the next levels, the slot of the level started here, sure starts.
pub(super) struct Step {
    pub(super) levels: Vec<Level>,
    pub(super) write: Option<usize>,
    pub(super) confirm: usize,
}

impl Stage<'_> {
    /// The level that starts at a character of class `c`.
    fn spawn(&self, c: u8) -> Level {
        match self.dfa.next(START, c) {
            DEAD if self.gaps => Level::Gap,
            DEAD => Level::Dead,
            q => Level::Live { q, age: 1 },
        }
    }

    /// The levels after a character of class `c`; None where the model fails.
    pub(super) fn step(&self, levels: &[Level], c: u8) -> Option<Step> {
        let d = self.dfa;
        let mut out: Vec<Level> = Vec::with_capacity(levels.len() + 1);
        let mut write = None;
        for (j, &level) in levels.iter().enumerate() {
            let last = j + 1 == levels.len();
            let Level::Live { q, age } = level else {
                out.push(level);
                if level == Level::Gap && last {
                    // the candidate start at this character
                    if let s @ Level::Live { .. } = self.spawn(c) {
                        out.push(s);
                        write = Some(out.len() - 2);
                    }
                }
                continue;
            };
            let nx = d.next(q, c);
            if nx != DEAD && d.matches(nx) {
                // a match up to here: the levels after this one are dropped, one starts here
                out.push(if d.ended(nx) {
                    Level::Done
                } else {
                    Level::Live { q: nx, age: 2 }
                });
                out.push(self.spawn(c));
                write = Some(out.len() - 2);
                break;
            }
            if nx != DEAD {
                out.push(Level::Live {
                    q: nx,
                    age: (age + 1).min(2),
                });
            } else if !last {
                out.push(Level::Done); // it matched: its pretoken ends at the next level
            } else if self.gaps && age == 0 {
                out.push(Level::Gap); // its first character starts no match
            } else if self.gaps && age == 1 {
                // its start is a gap character, and the next candidate is this character
                if out.last() != Some(&Level::Gap) {
                    out.push(Level::Gap);
                }
                if let s @ Level::Live { .. } = self.spawn(c) {
                    out.push(s);
                    write = Some(out.len() - 2);
                }
            } else {
                return None; // the next candidate lies behind: the exact search decides
            }
        }
        // a gap ends where its successor starts once that one surely matches
        for j in 0..out.len().saturating_sub(1) {
            let settled = j + 2 < out.len()
                || match out[j + 1] {
                    Level::Done => true,
                    Level::Live { q, .. } => d.sure(q),
                    _ => false,
                };
            if out[j] == Level::Gap && settled {
                out[j] = Level::Done;
            }
        }
        let confirm = out.iter().take_while(|&&l| l == Level::Done).count();
        out.drain(..confirm);
        if out[0] == Level::Dead || out.len() > MAX_LEVELS {
            return None;
        }
        Some(Step {
            levels: out,
            write,
            confirm,
        })
    }

    /// At the end of the text: how many pending starts become sure (the last piece then runs
    /// from the last of them to the end); None where the exact search must decide.
    pub(super) fn finish(&self, levels: &[Level]) -> Option<usize> {
        let (d, n) = (self.dfa, levels.len());
        let mut j = 0;
        loop {
            let last = j + 1 == n;
            match levels[j] {
                Level::Done => {}
                Level::Dead => return None,
                Level::Live { q, age } => {
                    if d.at_end(q) || age == 0 {
                        return Some(j);
                    }
                    if last {
                        // no match since its start: a gap character, with the gap before it
                        let gap_before = j > 0 && levels[j - 1] == Level::Gap;
                        return (self.gaps && age == 1).then_some(j - usize::from(gap_before));
                    }
                }
                Level::Gap if last => return Some(j),
                Level::Gap => {
                    let matched = j + 2 < n
                        || match levels[j + 1] {
                            Level::Done => true,
                            Level::Live { q, .. } => d.at_end(q),
                            _ => false,
                        };
                    if !matched {
                        // the successor finds no match: after one character the gap runs on
                        let one = matches!(levels[j + 1], Level::Live { age: 1, .. });
                        return one.then_some(j);
                    }
                }
            }
            j += 1;
        }
    }
}

/// The state of the scan: the earlier splits' levels (in a sequence), and the last split's.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) struct Config {
    pub(super) outer: Vec<Vec<Level>>,
    pub(super) levels: Vec<Level>,
}

/// The splits of a sequence, or one pattern: every split but the last only cuts the text into
/// pieces, which it must do at once (`immediate`); the last one runs on each piece.
pub(super) struct Machine<'a> {
    pub(super) outer: Vec<Stage<'a>>,
    pub(super) inner: Stage<'a>,
}

/// A step of a configuration: the next one, the slot written (None: none), sure starts.
pub(super) type Move = Option<(Config, Option<usize>, usize)>;

impl Machine<'_> {
    pub(super) fn initial(&self) -> Config {
        Config {
            outer: vec![vec![FRESH]; self.outer.len()],
            levels: vec![FRESH],
        }
    }

    /// The earlier splits' levels after a character of class `c`, and whether one of their
    /// pieces ends before it (their steps settle at once: `immediate`, so never None).
    pub(super) fn step_outer(&self, outer: &[Vec<Level>], c: u8) -> (Vec<Vec<Level>>, bool) {
        let mut next = Vec::with_capacity(self.outer.len());
        let mut forced = false;
        for (stage, levels) in self.outer.iter().zip(outer) {
            let from = if forced { &[FRESH][..] } else { levels };
            let step = stage.step(from, c);
            forced |= step.as_ref().is_some_and(|s| s.confirm > 0);
            next.push(step.map_or_else(|| vec![FRESH], |s| s.levels));
        }
        (next, forced)
    }

    /// The configuration after a character of class `c`.
    pub(super) fn step(&self, cfg: &Config, c: u8) -> Move {
        let (outer, forced) = self.step_outer(&cfg.outer, c);
        if !forced {
            let step = self.inner.step(&cfg.levels, c)?;
            let next = Config {
                outer,
                levels: step.levels,
            };
            return Some((next, step.write, step.confirm));
        }
        // the piece ends here: the last split finishes it and starts again on this character
        let sure = self.inner.finish(&cfg.levels)?;
        let step = self.inner.step(&[FRESH], c)?;
        let next = Config {
            outer,
            levels: step.levels,
        };
        Some(match cfg.levels[..] {
            [FRESH] => (next, None, 0),
            _ => (next, Some(sure), sure + 1),
        })
    }

    /// Whether a split used as an earlier one cuts its pieces at once: every piece end is
    /// known on reading the character after it, as the position of that character, and at the
    /// end of a text nothing pending becomes sure.
    pub(super) fn immediate(stage: &Stage) -> bool {
        let (mut seen, mut todo) = (vec![vec![FRESH]], vec![vec![FRESH]]);
        while let Some(levels) = todo.pop() {
            if stage.finish(&levels) != Some(0) || seen.len() > MAX_CONFIGS {
                return false;
            }
            for c in 0..stage.dfa.classes() as u8 {
                let Some(step) = stage.step(&levels, c) else {
                    return false;
                };
                if !matches!((step.confirm, step.write), (0, _) | (1, Some(0))) {
                    return false;
                }
                if !seen.contains(&step.levels) {
                    seen.push(step.levels.clone());
                    todo.push(step.levels);
                }
            }
        }
        true
    }
}

/// The configurations reachable from the start, and their steps.
pub(super) struct Explored {
    pub(super) configs: Vec<Config>,
    /// `moves[row * classes + c]`: the next row, the slot written, the sure starts; None for a
    /// failure (or a configuration past the limit).
    pub(super) moves: Vec<Option<(usize, Option<usize>, usize)>>,
    /// Every configuration was explored and none fails: the exact search is never needed
    /// before the end of a text (what safe cuts rely on).
    pub(super) closed: bool,
}

impl Machine<'_> {
    /// Explores the configurations from the start (and, in a sequence, from a fresh last split
    /// under each configuration of the earlier ones: where the scan starts again after the
    /// exact search).
    pub(super) fn explore(&self, classes: usize) -> Explored {
        let first = self.initial();
        let mut configs = vec![first.clone()];
        let mut index = HashMap::from([(first, 0)]);
        let mut moves = Vec::new();
        let mut closed = true;
        let mut row = 0;
        while row < configs.len() {
            for c in 0..classes as u8 {
                let restart = Config {
                    outer: self.step_outer(&configs[row].outer, c).0,
                    levels: vec![FRESH],
                };
                let step = self.step(&configs[row], c);
                let mut add = |cfg: Config| match index.get(&cfg) {
                    Some(&at) => Some(at),
                    None if configs.len() < MAX_CONFIGS => {
                        index.insert(cfg.clone(), configs.len());
                        configs.push(cfg);
                        Some(configs.len() - 1)
                    }
                    None => None,
                };
                add(restart);
                let Some((next, write, confirm)) = step else {
                    closed = false;
                    moves.push(None);
                    continue;
                };
                let to = add(next);
                closed &= to.is_some();
                moves.push(to.map(|to| (to, write, confirm)));
            }
            row += 1;
        }
        Explored {
            configs,
            moves,
            closed,
        }
    }
}
