//! Times each preset's scanner alone on one text, for profiling (perf, callgrind) without Python:
//!   cargo run --profile profiling --example pretok_profile -- TEXT [reps] [gpt2,cl100k,o200k]
//! Presets take turns, each rep; the best time of each is printed, with its pretoken count.
//! With reps `check`, each preset's scanner is compared instead with the regex engine (the same
//! pattern, as tiktoken runs it) on every `<|endoftext|>`-separated document of TEXT.
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

/// Panics at the first document where the scanner and the regex engine split differently.
fn check(name: &str, pattern: &str, text: &str) {
    let scanner = Pretokenizer::new(pattern).unwrap();
    let engine = Pretokenizer::new(&format!("(?:{pattern})")).unwrap();
    let spans = |pre: &Pretokenizer, doc: &str| {
        let mut out = Vec::new();
        pre.for_each_span(doc, &AtomicBool::new(false), |s, e| out.push((s, e)))
            .unwrap();
        out
    };
    let (mut docs, mut pretokens) = (0, 0);
    for doc in text.split("<|endoftext|>") {
        let got = spans(&scanner, doc);
        assert!(
            got == spans(&engine, doc),
            "{name}: document {docs} differs"
        );
        docs += 1;
        pretokens += got.len();
    }
    println!("{name}: scanner = regex engine on {docs} documents, {pretokens} pretokens");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = String::from_utf8(std::fs::read(&args[1]).unwrap()).unwrap();
    let names = args.get(3).map_or("gpt2,cl100k,o200k", |s| s.as_str());
    let patterns: Vec<(&str, &str)> = names
        .split(',')
        .map(|name| match name {
            "gpt2" => (name, GPT2_PATTERN),
            "cl100k" => (name, CL100K_PATTERN),
            "o200k" => (name, O200K_PATTERN),
            other => panic!("unknown preset {other}"),
        })
        .collect();
    if args.get(2).is_some_and(|s| s == "check") {
        for (name, pattern) in patterns {
            check(name, pattern, &text);
        }
        return;
    }
    let reps: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let presets: Vec<(&str, Pretokenizer)> = patterns
        .into_iter()
        .map(|(name, pattern)| (name, Pretokenizer::new(pattern).unwrap()))
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
