//! The time for a cache line written by one core to reach another (and back), for judging
//! designs that share written memory between threads:
//!   cargo run --release --example core_to_core [round trips]
//! Two threads pinned to CPUs 0 and 1 take turns bumping one atomic counter.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Runs this thread on `cpu` only (Linux; elsewhere the OS places it).
fn pin(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: the set is a plain bit mask, zeroed then filled, and passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

fn main() {
    let trips: u64 = std::env::args()
        .nth(1)
        .map_or(2_000_000, |s| s.parse().unwrap());
    let turn = AtomicU64::new(0);
    let start = std::thread::scope(|scope| {
        scope.spawn(|| {
            pin(1);
            for i in 0..trips {
                while turn.load(Ordering::Acquire) != 2 * i + 1 {}
                turn.store(2 * i + 2, Ordering::Release);
            }
        });
        pin(0);
        let start = Instant::now();
        for i in 0..trips {
            turn.store(2 * i + 1, Ordering::Release);
            while turn.load(Ordering::Acquire) != 2 * i + 2 {}
        }
        start
    });
    let ns = start.elapsed().as_nanos() as f64 / trips as f64;
    println!(
        "CPU 0 <-> CPU 1: {ns:.0} ns a round trip, ~{:.0} ns one way",
        ns / 2.0
    );
}
