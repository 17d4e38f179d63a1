//! The scan's table, from the explored configurations (`machine.rs`), and where a text may be
//! cut (`cuts`).
//!
//! A row per configuration, `width = 128 + classes` entries: one per ASCII byte (an ASCII step
//! needs no class lookup), then one per class (characters beyond ASCII). An entry is two u16:
//! the next row's offset (rows premultiplied by the width: a step's dependent load is one load)
//! and a code: the slot this position is written to and how many pending starts become sure.
//! (One array of pairs, not two arrays: one base register less in the scan's loop, which
//! spilled its rows to the stack with two.) The last row is the escape: it leads to itself, so
//! a block of steps can run without a check and be redone up to the escape.

use std::collections::HashMap;

use super::machine::{Config, Explored, Machine, NO_SLOT};

/// The scan's table (see the module doc).
pub(super) struct Table {
    /// `entries[2 * (row + column)]`: the next row's offset; `+ 1`: the code, the slot written
    /// (`NO_SLOT`: none) | sure starts << 3.
    pub(super) entries: Vec<u16>,
    pub(super) width: usize,
    /// The escape row's offset.
    pub(super) esc: usize,
    /// Per row: how many starts are pending, and how many of them the end of the text makes
    /// sure (None: the exact search decides).
    pub(super) pending: Vec<u8>,
    pub(super) finish: Vec<Option<u8>>,
    /// Per row, its configuration, and back (the exact search starts the scan again at a
    /// configuration it computes).
    pub(super) configs: Vec<Config>,
    pub(super) rows: HashMap<Config, usize>,
    /// `cut[x * classes + y]`: a cut between characters of classes x and y keeps the pieces.
    cut: Vec<bool>,
    classes: usize,
}

impl Table {
    /// The table of `explored` (its first rows, as many as u16 offsets can reach; steps into
    /// the others escape).
    pub(super) fn new(machine: &Machine, explored: &Explored, ascii: &[u8; 128]) -> Self {
        let classes = machine.inner.dfa.classes();
        let width = 128 + classes;
        let rows = explored.configs.len().min(u16::MAX as usize / width - 1);
        let esc = rows * width;
        let entry = |to: Option<(usize, Option<usize>, usize)>| match to {
            Some((to, write, confirm)) if to < rows => {
                let slot = write.map_or(NO_SLOT, |w| w as u8);
                ((to * width) as u16, slot | (confirm as u8) << 3)
            }
            _ => (esc as u16, NO_SLOT),
        };
        let mut entries = Vec::with_capacity(2 * (rows + 1) * width);
        for row in 0..rows {
            let moves = &explored.moves[row * classes..(row + 1) * classes];
            let columns = ascii.iter().map(|&a| a as usize).chain(0..classes);
            for c in columns {
                let (next, code) = entry(moves[c]);
                entries.extend([next, code as u16]);
            }
        }
        for _ in 0..width {
            entries.extend([esc as u16, NO_SLOT as u16]);
        }
        let configs: Vec<Config> = explored.configs[..rows].to_vec();
        let pending = configs.iter().map(|c| c.levels.len() as u8 - 1).collect();
        let finish = configs
            .iter()
            .map(|c| machine.inner.finish(&c.levels).map(|j| j as u8))
            .collect();
        let rows = configs.iter().cloned().zip(0..).collect();
        Table {
            entries,
            width,
            esc,
            pending,
            finish,
            configs,
            rows,
            cut: cuts(machine, explored, classes),
            classes,
        }
    }

    /// Whether any cut keeps the pieces.
    pub(super) fn cuts_anywhere(&self) -> bool {
        self.cut.contains(&true)
    }

    /// Whether a cut between characters of classes `x` and `y` keeps the pieces.
    #[inline]
    pub(super) fn cut(&self, x: u8, y: u8) -> bool {
        self.cut[x as usize * self.classes + y as usize]
    }
}

/// Which cuts keep the pieces, by the classes of the characters on either side.
///
/// A cut before `p`, between `x` and `y`, keeps them when, for every configuration C the scan
/// can be in before `x` (every explored one: all that a text reaches), with C' the
/// configuration after `x` and t1, t2, ... its pending starts:
/// (1) in the whole text, the step on `y` makes some `a` >= 1 starts sure, the last of them `p`
///     itself (so t1..t(a-1) and `p`: it writes `p` to slot a - 1), and leads where the scan of
///     a text that starts with `y` leads (the same configuration, nothing pending);
/// (2) in the text that ends at `p`, the end makes t1..t(a-1) sure (the last piece then ends at
///     `p`, as in the whole).
/// Proof. Both sides scan alike up to `x`. By (1) and (2), the pieces that end at or before
/// `p` are the same in the whole and in the prefix; by (1), from `p` on the whole's scan is in
/// the configuration of the suffix's, with no start pending, and each step depends only on
/// the configuration and the character. The scan's model is the engine's semantics only where
/// it does not fail (`machine.rs`); hence no cut at all unless the exploration is complete and
/// no step fails.
fn cuts(machine: &Machine, explored: &Explored, classes: usize) -> Vec<bool> {
    let mut cut = vec![false; classes * classes];
    if !explored.closed {
        return cut;
    }
    let moves = |row: usize, c: usize| explored.moves[row * classes + c];
    for x in 0..classes {
        for y in 0..classes {
            let fresh = moves(0, y).map(|m| m.0);
            cut[x * classes + y] = (0..explored.configs.len()).all(|row| {
                let Some((after, ..)) = moves(row, x) else {
                    return false;
                };
                let Some((to, write, sure)) = moves(after, y) else {
                    return false;
                };
                let levels = &explored.configs[after].levels;
                sure >= 1
                    && write == Some(sure - 1)
                    && Some(to) == fresh
                    && machine.inner.finish(levels) == Some(sure - 1)
            });
        }
    }
    cut
}
