//! The two-stream scan of one segment: its second half is scanned from its first character as
//! if a pretoken started there, in the same loop as the first half (two independent chains of
//! dependent loads). Then the first half's stream goes on alone until one of its sure starts is
//! one of the second's: the split from a sure start depends only on the text after it (the
//! compiled path refuses look-behind), so from there the second stream's starts are right, and
//! the scan goes on from its end. A stream that escapes settles the escape itself (the first) or
//! stops (the second: the scan may start again at its last sure start).
//!
//! Performance notes: three or four streams ran slower than two (registers spilled).

use super::scan::{decode, encode, Cursor, Lane, Steps, HIGH, MAX_SPAN, SEG, SLACK};
use super::Compiled;

/// How the first stream met the second's sure starts.
enum Met {
    /// At the start with this index in the second's list.
    At(usize),
    /// Not at all: it went past them, or past the second stream's end.
    No,
    /// It reached the end of the text.
    End,
}

impl Steps {
    /// Both lanes' 8-byte blocks of ASCII in one loop while each has one before its end; stops
    /// before a pair of blocks where either holds a byte beyond ASCII or leads to the escape
    /// row (left undone). Not inlined: its own registers, which the loop needs all of.
    ///
    /// # Safety
    /// As `Steps::blocks`, for each lane.
    #[inline(never)]
    unsafe fn blocks2(
        self,
        b: &[u8],
        (l0, end0): (&mut Lane, usize),
        (l1, end1): (&mut Lane, usize),
    ) {
        let t = b.as_ptr();
        let (mut s0, mut i0, mut o0) = (l0.s, l0.i, l0.out);
        let (mut s1, mut i1, mut o1) = (l1.s, l1.i, l1.out);
        while i0 + 8 <= end0 && i1 + 8 <= end1 {
            let w0 = (t.add(i0) as *const u64).read_unaligned();
            let w1 = (t.add(i1) as *const u64).read_unaligned();
            if (w0 | w1) & HIGH != 0 {
                break;
            }
            let saved = (s0, s1, o0, o1);
            for d in 0..8 {
                self.step(&mut s0, &mut o0, *t.add(i0 + d) as usize, i0 + d);
                self.step(&mut s1, &mut o1, *t.add(i1 + d) as usize, i1 + d);
            }
            if s0 == self.esc || s1 == self.esc {
                (s0, s1, o0, o1) = saved;
                break;
            }
            i0 += 8;
            i1 += 8;
        }
        (l0.s, l0.i, l0.out) = (s0, i0, o0);
        (l1.s, l1.i, l1.out) = (s1, i1, o1);
    }
}

impl Compiled {
    /// Scans the segment of `SEG` bytes at the cursor (the text goes on at least 64 bytes past
    /// it) and moves the cursor past it.
    pub(super) fn segment(
        &self,
        b: &[u8],
        cur: &mut Cursor,
        buf0: &mut [u32],
        buf1: &mut [u32],
        f: &mut impl FnMut(usize, usize),
    ) {
        let steps = Steps::of(self);
        let a = cur.i;
        let mut m = a + SEG / 2;
        while b[m] & 0xc0 == 0x80 {
            m += 1;
        }
        let (end0, mut end1) = (m, a + SEG);
        if end1 - cur.tok >= MAX_SPAN {
            return self.run(b, cur, end1, buf0, f);
        }
        assert!(buf0.len() >= SEG + SLACK && buf1.len() >= SEG + SLACK && end1 <= b.len());
        // stream 0 from the cursor, stream 1 from m as if a pretoken started there
        self.load(cur, buf0);
        buf1[0] = encode(m);
        let (start0, start1) = (buf0.as_mut_ptr(), buf1.as_mut_ptr());
        let mut l0 = Lane {
            s: cur.row,
            i: a,
            out: start0,
        };
        let mut l1 = Lane {
            s: 0,
            i: m,
            // SAFETY: within buf1, which holds SEG + SLACK entries
            out: unsafe { start1.add(1) },
        };
        let (tok0, mut stopped) = (cur.tok, false);
        'segment: loop {
            // SAFETY: rows are the table's, both ends are within the text, and each half makes
            // at most SEG / 2 + 4 sure starts (room: SLACK)
            unsafe { steps.blocks2(b, (&mut l0, end0), (&mut l1, end1)) };
            // then 8 characters of each one at a time (beyond ASCII, or through an escape)
            for _ in 0..8 {
                if l0.i >= end0 || l1.i >= end1 {
                    break 'segment;
                }
                let (col, len) = self.column(b, l0.i);
                if !steps.careful(&mut l0, col, len) {
                    // stream 0 is the text's own: its escape is settled here, and it goes on
                    // alone to the end of its half
                    // SAFETY: `out` only moved forward from `start0`, within `buf0`
                    let k0 = unsafe { l0.out.offset_from(start0) } as usize;
                    self.unload(buf0, k0, (l0.s, l0.i, tok0), cur, f);
                    let (r, row) = self.resolve(b, cur.tok, l0.i, l0.s, f);
                    *cur = Cursor::at(r, row);
                    if r >= end0 {
                        return;
                    }
                    self.run(b, cur, end0, buf0, f);
                    // SAFETY: as for stream 0
                    let k1 = unsafe { l1.out.offset_from(start1) } as usize;
                    return self.meet(b, cur, &buf1[..k1 + 8], k1, (l1.s, l1.i, m, stopped), f);
                }
                let (col, len) = self.column(b, l1.i);
                if !steps.careful(&mut l1, col, len) {
                    // stream 1 stops: its sure starts stand
                    stopped = true;
                    end1 = l1.i;
                }
            }
        }
        // SAFETY: `out` only moved forward from the buffers' starts, within them
        let (k0, k1) = unsafe { (l0.out.offset_from(start0), l1.out.offset_from(start1)) };
        self.unload(buf0, k0 as usize, (l0.s, l0.i, tok0), cur, f);
        self.run(b, cur, end0, buf0, f);
        let k1 = k1 as usize;
        self.meet(b, cur, &buf1[..k1 + 8], k1, (l1.s, l1.i, m, stopped), f);
    }

    /// Stream 0 (the cursor) goes on alone until one of its sure starts is one of stream 1's
    /// (`buf1[..k1]`); from there on stream 1's starts are emitted and the cursor takes stream
    /// 1's place (row `s1` at `i1`, pending starts after `k1`), or, if stream 1 stopped, starts
    /// again at its last sure start.
    fn meet(
        &self,
        b: &[u8],
        cur: &mut Cursor,
        buf1: &[u32],
        k1: usize,
        (s1, i1, m, stopped): (usize, usize, usize, bool),
        f: &mut impl FnMut(usize, usize),
    ) {
        let list = &buf1[..k1];
        let at = |j: usize| decode(m, list[j]);
        let mut ptr = 0;
        let mut check = |x: usize| -> Option<Met> {
            while ptr < list.len() && at(ptr) < x {
                ptr += 1;
            }
            match ptr < list.len() {
                true if at(ptr) == x => Some(Met::At(ptr)),
                true => None,
                false => Some(Met::No),
            }
        };
        let mut met = check(cur.tok);
        while met.is_none() {
            if cur.i >= b.len() {
                met = Some(Met::End);
            } else if cur.i >= i1 {
                met = Some(Met::No);
            } else {
                self.step(b, cur, f, |x| {
                    met = check(x);
                    met.is_some()
                });
            }
        }
        let Some(Met::At(ptr)) = met else {
            return;
        };
        for j in ptr + 1..k1 {
            f(at(j - 1), at(j));
        }
        let last = at(k1 - 1);
        if stopped {
            *cur = Cursor::at(last, 0);
            return;
        }
        (cur.row, cur.i, cur.tok) = (s1, i1, last);
        let held = self.pending(s1);
        for (p, &x) in cur.pending.iter_mut().zip(&buf1[k1..k1 + held]) {
            *p = decode(m, x);
        }
    }
}
