//! Times the merge loop on the counts of a `.bpc` file, for profiling (perf, callgrind) without
//! Python:  cargo run --profile profiling --example train_profile -- COUNTS.bpc [merges] [threads]
//! (a text file in place of COUNTS.bpc is counted first, and the loop gets counting's table;
//! 0 merges times the counting alone)
//! Prints the time and an FNV-1a hash of the merges (to compare builds).
use std::time::Instant;

use bytepair_core::count::WordCounts;
use bytepair_core::counts_file::read_counts;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let merges: usize = args.get(2).map_or(9743, |s| s.parse().unwrap());
    let threads: usize = args.get(3).map_or(1, |s| s.parse().unwrap());
    let path = std::path::Path::new(&args[1]);
    let mut counts = WordCounts::default();
    if path.extension().is_some_and(|e| e == "bpc") {
        read_counts(path, &mut counts, None).unwrap();
    } else {
        // a text file: counted first (GPT-2 pattern, `<|endoftext|>`), as `bytepair train` does
        let config = bytepair_core::count::CountConfig {
            specials: bytepair_core::pretokenize::Specials::new(&["<|endoftext|>"]).unwrap(),
            pretok: bytepair_core::pretokenize::Pretokenizer::Gpt2,
            strict: false,
            chunk_size: 1 << 20,
            num_threads: threads,
            cuts: Some(
                bytepair_core::cuts::CutFinder::new(
                    &["<|endoftext|>"],
                    bytepair_core::pretokenize::Pretokenizer::Gpt2,
                )
                .unwrap(),
            ),
            json_field: None,
        };
        let t = Instant::now();
        bytepair_core::count::count_file(
            path,
            (0, u64::MAX),
            bytepair_core::count::Compression::None,
            &config,
            &mut counts,
            &mut |_| true,
        )
        .unwrap();
        print!("counted in {:.3} s; ", t.elapsed().as_secs_f64());
    }
    let words = counts.len();
    if merges == 0 {
        println!("{words} words"); // counting alone
        return;
    }
    let t = Instant::now();
    let r = bytepair_core::train::train(counts, merges, threads, &mut |_| true).unwrap();
    let s = t.elapsed().as_secs_f64();
    let mut h: u64 = 0xcbf29ce484222325;
    for &(a, b) in &r.merges {
        for x in [a, b] {
            h = (h ^ x as u64).wrapping_mul(0x100000001b3);
        }
    }
    println!(
        "{words} words, {} merges in {s:.3} s ({:.0}/s), hash {h:016x}",
        r.merges.len(),
        r.merges.len() as f64 / s
    );
}
