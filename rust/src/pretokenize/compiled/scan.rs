//! The scan: one step of the table (`table.rs`) per character, no branch per pretoken. A step
//! writes its position to the slot its entry names (past the sure starts: a pending start, or
//! slot 7, which nothing reads) and counts the starts that became sure; the sure starts go to
//! the caller a buffer at a time. ASCII is stepped 8 bytes at a time without a check: the escape
//! row leads to itself, so a block that escaped is redone one character at a time up to the
//! escape, which the exact search (`exact.rs`) settles.
//!
//! Two streams (`streams.rs`): a step's load depends on the one before (`row → entry[row +
//! byte] → row`), so one chain of steps leaves the core mostly waiting; two independent ones
//! run in the same time.
//!
//! Performance notes: a buffer holds the low 32 bits of positions, decoded against its first
//! sure start (one register per stream less than offsets from a base, in a loop that spilled
//! its rows to the stack, which put a store and a load on the chain). 8-byte blocks did as well
//! as 16 on clean text and better with escapes.

use super::Compiled;
use crate::pretokenize::decode_at;

/// The high bit of each byte of a word: bytes beyond ASCII.
pub(super) const HIGH: u64 = 0x8080_8080_8080_8080;

/// Bytes per segment of the two-stream scan, and per chunk of the one-stream scan.
pub(super) const SEG: usize = 4096;
/// A buffer's room past the sure starts a chunk or half segment can make (one per position):
/// the pending starts, slot 7, the character a step may read past the end.
pub(super) const SLACK: usize = 32;
/// A scan that has waited this long for a sure start (a single pretoken of gigabytes) lets the
/// exact search settle it first: positions in a buffer must stay within 2^32 of its first.
pub(super) const MAX_SPAN: usize = 1 << 31;

/// Where a scan is: its row, its position, its last sure start, and its pending starts.
#[derive(Clone, Copy)]
pub(super) struct Cursor {
    pub(super) row: usize,
    pub(super) i: usize,
    pub(super) tok: usize,
    pub(super) pending: [usize; 8],
}

impl Cursor {
    /// A scan that starts at `i` in `row`, nothing pending.
    pub(super) fn at(i: usize, row: usize) -> Self {
        Cursor {
            row,
            i,
            tok: i,
            pending: [0; 8],
        }
    }
}

/// A position in a buffer: its low 32 bits.
#[inline(always)]
pub(super) fn encode(pos: usize) -> u32 {
    pos as u32
}

/// The position of `x` in a buffer whose positions are at most 2^32 past `base`.
#[inline(always)]
pub(super) fn decode(base: usize, x: u32) -> usize {
    base + x.wrapping_sub(base as u32) as usize
}

/// A stream in a loop of blocks: its row, its position, and where its next sure start goes.
pub(super) struct Lane {
    pub(super) s: usize,
    pub(super) i: usize,
    pub(super) out: *mut u32,
}

/// The table's entries, for steps without bounds checks.
#[derive(Clone, Copy)]
pub(super) struct Steps {
    entries: *const u16,
    len: usize,
    pub(super) esc: usize,
}

impl Steps {
    pub(super) fn of(c: &Compiled) -> Self {
        Steps {
            entries: c.table.entries.as_ptr(),
            len: c.table.entries.len() / 2,
            esc: c.table.esc,
        }
    }

    /// The entry of row `s` on column `col`: the next row, and the code.
    #[inline(always)]
    pub(super) fn entry(self, s: usize, col: usize) -> (usize, u16) {
        assert!(s + col < self.len);
        // SAFETY: checked just above
        unsafe {
            let e = self.entries.add(2 * (s + col));
            (*e as usize, *e.add(1))
        }
    }

    /// One step from row `s` on column `col` at position `pos`: writes the position to its slot
    /// past `out` and moves `out` past the starts that became sure.
    ///
    /// # Safety
    /// `s` is a row offset of the table (every entry is one, and so are the start and escape
    /// rows), `col` < 128 + classes, and `out` has room for 8 entries.
    #[inline(always)]
    pub(super) unsafe fn step(self, s: &mut usize, out: &mut *mut u32, col: usize, pos: usize) {
        let e = self.entries.add(2 * (*s + col));
        let code = *e.add(1) as usize;
        *out.add(code & 7) = encode(pos);
        *out = out.add(code >> 3);
        *s = *e as usize;
    }

    /// One step of the lane on the character at its position (of `len` bytes, table column
    /// `col`); false, and nothing done, where it leads to the escape row.
    #[inline(always)]
    pub(super) fn careful(self, lane: &mut Lane, col: usize, len: usize) -> bool {
        let (next, _) = self.entry(lane.s, col);
        if next == self.esc {
            return false;
        }
        // SAFETY: `entry` checked the index; the caller's buffer has room for 8 entries at
        // `out` (as for `blocks`)
        unsafe { self.step(&mut lane.s, &mut lane.out, col, lane.i) };
        lane.i += len;
        true
    }

    /// 8-byte blocks of ASCII from the lane while one ends before `end`; stops before a block
    /// that holds a byte beyond ASCII or leads to the escape row (that one is left undone).
    ///
    /// # Safety
    /// As `step`, with room at `out` for `end - i + 8` entries, and `end <= b.len()`.
    #[inline(always)]
    pub(super) unsafe fn blocks(self, b: &[u8], lane: &mut Lane, end: usize) {
        let (mut s, mut i, mut out) = (lane.s, lane.i, lane.out);
        let t = b.as_ptr();
        while i + 8 <= end {
            let w = (t.add(i) as *const u64).read_unaligned();
            if w & HIGH != 0 {
                break;
            }
            let (s0, out0) = (s, out);
            for d in 0..8 {
                self.step(&mut s, &mut out, *t.add(i + d) as usize, i + d);
            }
            if s == self.esc {
                (s, out) = (s0, out0);
                break;
            }
            i += 8;
        }
        (lane.s, lane.i, lane.out) = (s, i, out);
    }
}

impl Compiled {
    /// Calls `f(start, end)` on each piece of `b`, in order.
    pub(super) fn scan(&self, b: &[u8], f: &mut impl FnMut(usize, usize)) {
        let mut cur = Cursor::at(0, 0);
        let mut buf0 = vec![0u32; SEG + SLACK];
        if self.streams && b.len() >= SEG + 64 {
            let mut buf1 = vec![0u32; SEG + SLACK];
            while b.len() - cur.i >= SEG + 64 {
                self.segment(b, &mut cur, &mut buf0, &mut buf1, f);
            }
        }
        self.run(b, &mut cur, b.len(), &mut buf0, f);
        self.finish(b, cur, f);
    }

    /// The table's column of the character at `i`, and its length.
    #[inline(always)]
    pub(super) fn column(&self, b: &[u8], i: usize) -> (usize, usize) {
        if b[i] < 0x80 {
            return (b[i] as usize, 1);
        }
        let (cp, len) = decode_at(b, i);
        (128 + self.classes.of(cp) as usize, len)
    }

    /// How many starts are pending in the row at `offset`.
    #[inline(always)]
    pub(super) fn pending(&self, offset: usize) -> usize {
        self.table.pending[offset / self.table.width] as usize
    }

    /// The pieces of the text's end, from the cursor at the end.
    fn finish(&self, b: &[u8], cur: Cursor, f: &mut impl FnMut(usize, usize)) {
        let Some(sure) = self.table.finish[cur.row / self.table.width] else {
            self.resolve(b, cur.tok, b.len(), cur.row, f);
            return;
        };
        let mut tok = cur.tok;
        for &x in &cur.pending[..sure as usize] {
            f(tok, x);
            tok = x;
        }
        if tok < b.len() {
            f(tok, b.len());
        }
    }

    /// Loads the cursor's pending starts into `buf`, for a chunk that starts at the cursor.
    pub(super) fn load(&self, cur: &Cursor, buf: &mut [u32]) {
        let held = self.pending(cur.row);
        for (slot, &p) in buf.iter_mut().zip(&cur.pending[..held]) {
            *slot = encode(p);
        }
    }

    /// Calls `f` on the sure starts of `buf[..k]` (the first sure start before them: `tok`),
    /// and leaves the cursor in row `s` at `i` with the pending starts after them.
    pub(super) fn unload(
        &self,
        buf: &[u32],
        k: usize,
        (s, i, tok): (usize, usize, usize),
        cur: &mut Cursor,
        f: &mut impl FnMut(usize, usize),
    ) {
        let mut last = tok;
        for &x in &buf[..k] {
            let x = decode(tok, x);
            f(last, x);
            last = x;
        }
        let held = self.pending(s);
        for (p, &x) in cur.pending.iter_mut().zip(&buf[k..k + held]) {
            *p = decode(tok, x);
        }
        (cur.row, cur.i, cur.tok) = (s, i, last);
    }

    /// One stream from the cursor up to `end` (or just past, within a character).
    pub(super) fn run(
        &self,
        b: &[u8],
        cur: &mut Cursor,
        end: usize,
        buf: &mut [u32],
        f: &mut impl FnMut(usize, usize),
    ) {
        let steps = Steps::of(self);
        assert!(buf.len() >= SEG + SLACK && end <= b.len());
        while cur.i < end {
            if cur.i + SEG - cur.tok >= MAX_SPAN {
                let (r, row) = self.resolve(b, cur.tok, cur.i, cur.row, f);
                *cur = Cursor::at(r, row);
                continue;
            }
            let stop = end.min(cur.i + SEG);
            self.load(cur, buf);
            let start = buf.as_mut_ptr();
            let mut lane = Lane {
                s: cur.row,
                i: cur.i,
                out: start,
            };
            let escaped = loop {
                // SAFETY: the cursor's row is the table's, `stop <= b.len()`, and a chunk of at
                // most SEG positions makes at most SEG sure starts (room: SLACK)
                unsafe { steps.blocks(b, &mut lane, stop) };
                // then 8 characters one at a time (beyond ASCII, or through an escape)
                let mut go = true;
                for _ in 0..8 {
                    if lane.i >= stop {
                        break;
                    }
                    let (col, len) = self.column(b, lane.i);
                    go = steps.careful(&mut lane, col, len);
                    if !go {
                        break;
                    }
                }
                if !go || lane.i >= stop {
                    break !go;
                }
            };
            // SAFETY: `out` only moved forward from `start`, within `buf`
            let k = unsafe { lane.out.offset_from(start) } as usize;
            self.unload(buf, k, (lane.s, lane.i, cur.tok), cur, f);
            if escaped {
                let (r, row) = self.resolve(b, cur.tok, lane.i, lane.s, f);
                *cur = Cursor::at(r, row);
            }
        }
    }

    /// One careful step of the cursor; calls `sure` on each start that becomes sure, in order,
    /// and stops when it returns true (the cursor is then left as it was after the step's
    /// earlier starts: the caller drops it).
    pub(super) fn step(
        &self,
        b: &[u8],
        cur: &mut Cursor,
        f: &mut impl FnMut(usize, usize),
        mut sure: impl FnMut(usize) -> bool,
    ) -> bool {
        let (col, len) = self.column(b, cur.i);
        let (next, code) = Steps::of(self).entry(cur.row, col);
        if next == self.table.esc {
            let (r, row) = self.resolve(b, cur.tok, cur.i, cur.row, f);
            *cur = Cursor::at(r, row);
            return sure(r);
        }
        if let Some(p) = cur.pending.get_mut((code & 7) as usize) {
            *p = cur.i;
        }
        let confirm = (code >> 3) as usize;
        for j in 0..confirm {
            let x = cur.pending[j];
            f(cur.tok, x);
            cur.tok = x;
            if sure(x) {
                return true;
            }
        }
        cur.pending.copy_within(confirm.., 0);
        cur.row = next;
        cur.i += len;
        false
    }
}
