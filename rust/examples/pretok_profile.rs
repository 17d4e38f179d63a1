//! Times each preset's scanner alone on one text, for profiling (perf, callgrind) without Python:
//!   cargo run --profile profiling --example pretok_profile -- TEXT [reps] [gpt2,cl100k,o200k]
//! Presets take turns, each rep; the best time of each is printed, with its pretoken count.
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use bytepair_core::pretokenize::gpt4::CL100K_PATTERN;
use bytepair_core::pretokenize::o200k::O200K_PATTERN;
use bytepair_core::pretokenize::{Pretokenizer, GPT2_PATTERN};

/// One pass (a function of its own, for `callgrind --toggle-collect`): pretokens, and a sum of
/// their ends so that nothing is optimised away.
#[inline(never)]
fn pass(pre: &Pretokenizer, text: &str) -> (usize, usize) {
    let (mut n, mut sum) = (0, 0usize);
    let stop = AtomicBool::new(false);
    pre.for_each_span(text, &stop, |_, end| {
        n += 1;
        sum = sum.wrapping_add(end);
    })
    .unwrap();
    (n, sum)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = String::from_utf8(std::fs::read(&args[1]).unwrap()).unwrap();
    let reps: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let names = args.get(3).map_or("gpt2,cl100k,o200k", |s| s.as_str());
    let presets: Vec<(&str, Pretokenizer)> = names
        .split(',')
        .map(|name| {
            let pattern = match name {
                "gpt2" => GPT2_PATTERN,
                "cl100k" => CL100K_PATTERN,
                "o200k" => O200K_PATTERN,
                other => panic!("unknown preset {other}"),
            };
            (name, Pretokenizer::new(pattern).unwrap())
        })
        .collect();
    let mut best = vec![f64::INFINITY; presets.len()];
    let mut counts = vec![0; presets.len()];
    for _ in 0..reps {
        for (k, (_, pre)) in presets.iter().enumerate() {
            let t = Instant::now();
            counts[k] = pass(pre, &text).0;
            best[k] = best[k].min(t.elapsed().as_secs_f64());
        }
    }
    let mb = text.len() as f64 / 1e6;
    for (k, (name, _)) in presets.iter().enumerate() {
        let (s, n) = (best[k], counts[k]);
        println!("{name:7} {s:.3} s {:7.1} MB/s {n} pretokens", mb / s);
    }
}
