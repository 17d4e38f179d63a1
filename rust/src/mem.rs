//! Hints to the OS and the CPU, and the thread budget of a call: huge pages for tables that hot
//! loops read all over, prefetches, memory given back to the system, how many threads a call
//! may start. None of them changes a result; what each buys is said where it is used.

/// Asks Linux to back `memory` with huge pages (2 MB), for tables that hot loops read all over:
/// with 4 KB pages nearly every such read missed the TLB too. And for the encoder's id vectors,
/// written once: each new 4 KB page of them was a page fault (with the kernel's bookkeeping,
/// 10% of a warm pass over code; 8 MB batches, one thread: 207 -> 227 MB/s). THP in its common
/// `madvise` mode gives none unless asked. Call it before the memory is first touched; memory
/// without a whole aligned 2 MB in it is left as it is.
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge_pages<T>(memory: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let start = memory.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(memory);
    let from = start.next_multiple_of(4096);
    if end >= from + HUGE {
        // SAFETY: the range lies in memory borrowed mutably here, and MADV_HUGEPAGE changes only
        // how the kernel backs it, never what it holds; a failure (no THP) changes nothing.
        unsafe {
            libc::madvise(from as *mut libc::c_void, end - from, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge_pages<T>(_: &mut [T]) {}

/// Hints the CPU to load the cache line at `at` (a no-op off x86_64).
#[inline(always)]
pub(crate) fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is only a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Returns memory freed inside the allocator's heaps to the system. Why: the word table (hundreds
/// of MB, freed on several threads once the merge loop has laid the words out) otherwise stayed
/// in glibc's per-thread heaps and counted in the process's peak RSS all through the loop. It
/// runs on a thread of its own (inline if none can start): on the large corpus it takes 0.13 s,
/// which the merge loop's first step then overlaps (glibc locks each heap while it trims it).
pub(crate) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only releases free memory of the allocator's own heaps.
        let trim = || unsafe {
            libc::malloc_trim(0);
        };
        if std::thread::Builder::new().spawn(trim).is_err() {
            trim();
        }
    }
}

/// The threads a call actually starts for `requested`: at least 1, at most 4 per core. Each
/// worker holds megabytes of tables, so `num_threads=100000` would otherwise allocate hundreds
/// of gigabytes (and start as many threads) before doing anything.
pub fn worker_count(requested: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    requested.clamp(1, 4 * cores)
}
