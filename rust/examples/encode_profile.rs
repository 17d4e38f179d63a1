//! Times the encoder's stages on one text, for profiling (perf, callgrind) without Python:
//!   cargo run --profile profiling --example encode_profile -- VOCAB.bin TEXT [warm|cold|docs|docs_warm|misses|count|pretok] [reps]
//!   ... VOCAB.bin TEXT [batch1|batch2|batch1_warm|batch2_warm] [reps]: 8 MB batches on 1 or 2 threads
//!   ... VOCAB.bin TEXT count_file THREADS: training's counting of the file, reader and workers
//! VOCAB.bin: `tools/profile_vocab.py` writes one (the format: `common/vocab_file.rs`).
use std::time::Instant;

use bytepair_core::count::CountConfig;
use bytepair_core::encode::Encoder;
use bytepair_core::pretokenize::{Pretokenizer, GPT2_PATTERN};

#[path = "common/vocab_file.rs"]
mod vocab_file;

/// One encode (a function of its own, for `callgrind --toggle-collect`).
#[inline(never)]
fn warm_pass(enc: &Encoder, text: &str) -> Vec<u32> {
    enc.encode(text, &None).unwrap()
}

/// Counts the words of `text` (a function of its own, for `callgrind --toggle-collect`).
#[inline(never)]
fn count_pass(config: &CountConfig, text: &str) -> usize {
    use bytepair_core::count::{Counter, WordCounts};
    let shared = Counter::shared();
    let mut counter = Counter::sharing(&shared);
    let stop = std::sync::atomic::AtomicBool::new(false);
    counter.add_document(text, config, &stop).unwrap();
    counter.finish().unwrap();
    WordCounts::from_shared(shared).len()
}

/// Training's counting options (GPT-2 pattern, `<|endoftext|>`) on `threads` threads.
fn count_config(threads: usize) -> CountConfig {
    CountConfig {
        specials: bytepair_core::pretokenize::Specials::new(&["<|endoftext|>"]).unwrap(),
        pretok: Pretokenizer::new(GPT2_PATTERN).unwrap(),
        strict: false,
        chunk_size: 1 << 20,
        num_threads: threads,
        cuts: None,
        json_field: None,
    }
}

/// This process's resource use so far, all threads.
fn usage() -> libc::rusage {
    // SAFETY: getrusage fills the struct it is given
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage
}

/// CPU time so far, user and system, in seconds.
fn cpu_seconds() -> f64 {
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    let u = usage();
    t(u.ru_utime) + t(u.ru_stime)
}

/// Page faults so far.
fn page_faults() -> i64 {
    usage().ru_minflt
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(3).map_or("warm", |s| s.as_str());
    // count_file reads the file itself
    let text = match mode {
        "count_file" => String::new(),
        _ => String::from_utf8(std::fs::read(&args[2]).unwrap()).unwrap(),
    };
    let reps: usize = args.get(4).map_or(3, |s| s.parse().unwrap());
    let file = vocab_file::read(&args[1]);
    let pattern = file.pattern;
    let (vocab, merges) = (file.vocab, file.merges);
    let new_encoder = || Encoder::new(vocab.clone(), merges.clone(), vec![], &pattern).unwrap();
    let enc = new_encoder();
    let mb = match mode {
        "count_file" => std::fs::metadata(&args[2]).unwrap().len() as f64 / 1e6,
        _ => text.len() as f64 / 1e6,
    };
    match mode {
        "pretok" => {
            let pre = Pretokenizer::new(&pattern).unwrap();
            for _ in 0..reps {
                let t = Instant::now();
                let mut n = 0usize;
                pre.for_each(&text, |w| n += w.len() & 1).unwrap();
                let s = t.elapsed().as_secs_f64();
                println!("pretok {:.3} s {:.1} MB/s ({n})", s, mb / s);
            }
        }
        "misses" => {
            // BPE alone (no cache) of each distinct pretoken of 2+ bytes, in the order of their
            // first occurrence: the cold path's merging, timed apart from the rest; words of up
            // to 64 bytes and longer ones (runs of CJK or Thai letters) apart
            let pre = Pretokenizer::new(&pattern).unwrap();
            let mut seen = std::collections::HashSet::new();
            let (mut short, mut long): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
            pre.for_each(&text, |w| {
                if w.len() >= 2 && seen.insert(w) {
                    let words = if w.len() <= 64 { &mut short } else { &mut long };
                    words.push(w.as_bytes());
                }
            })
            .unwrap();
            let mut out = Vec::new();
            for _ in 0..reps {
                for (name, words) in [("2-64 B", &short), ("65+ B", &long)] {
                    let t = Instant::now();
                    let mut n = 0;
                    for w in words.iter() {
                        out.clear();
                        enc.merge_word(w, &mut out);
                        n += out.len();
                    }
                    let s = t.elapsed().as_secs_f64();
                    let us = s * 1e6 / words.len().max(1) as f64;
                    println!(
                        "misses {name} {s:.3} s {us:.3} us/word, {} words {n} ids",
                        words.len()
                    );
                }
            }
        }
        "docs" | "docs_warm" => {
            // each document of the text (split at <|endoftext|>) on its own, caches cold (or
            // warmed by one pass first)
            let docs: Vec<&str> = text.split("<|endoftext|>").collect();
            let cold = mode == "docs";
            if !cold {
                docs.iter().for_each(|d| drop(warm_pass(&enc, d)));
            }
            for _ in 0..reps {
                if cold {
                    enc.drop_caches();
                }
                let t = Instant::now();
                let n: usize = docs.iter().map(|d| warm_pass(&enc, d).len()).sum();
                let s = t.elapsed().as_secs_f64();
                println!("{mode} {:.3} s {:.1} MB/s {n} ids", s, mb / s);
            }
        }
        "count_file" => {
            // training's counting of the whole file (reader thread and workers): reps = threads
            let config = count_config(reps);
            let t = Instant::now();
            let path = std::path::Path::new(&args[2]);
            let mut counts = bytepair_core::count::WordCounts::default();
            bytepair_core::count::count_file(
                path,
                (0, u64::MAX),
                bytepair_core::count::Compression::None,
                &config,
                &mut counts,
                &mut |_| true,
            )
            .unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "count_file {:.3} s {:.1} MB/s {} words",
                s,
                mb / s,
                counts.len()
            );
        }
        "count" => {
            // the counting loop of training on one thread, file reading aside
            let config = count_config(1);
            for _ in 0..reps {
                let t = Instant::now();
                let n = count_pass(&config, &text);
                let s = t.elapsed().as_secs_f64();
                println!("count {:.3} s {:.1} MB/s {n} words", s, mb / s);
            }
        }
        "batch1" | "batch2" | "batch1_warm" | "batch2_warm" => {
            // as the benchmark's numpy rows: the documents (split at <|endoftext|>) in batches
            // of ~8 MB on 1 or 2 threads, by a new encoder warmed on the first ~1 MB (or, for
            // _warm, the same encoder each rep); wall and CPU time, and page faults
            let threads = if mode.starts_with("batch1") { 1 } else { 2 };
            let docs: Vec<&str> = text.split("<|endoftext|>").collect();
            // consecutive documents of about `size` bytes each
            let batches_of = |size: usize| {
                let mut batches: Vec<&[&str]> = Vec::new();
                let (mut from, mut bytes) = (0, 0);
                for (k, d) in docs.iter().enumerate() {
                    bytes += d.len();
                    if bytes >= size {
                        batches.push(&docs[from..=k]);
                        (from, bytes) = (k + 1, 0);
                    }
                }
                batches.push(&docs[from..]);
                batches
            };
            let warm_up = batches_of(1_000_000)[0];
            let batches = batches_of(8_000_000);
            let mut fresh = None;
            for _ in 0..reps {
                let enc = match mode.ends_with("warm") {
                    true => &enc,
                    false => fresh.insert(new_encoder()),
                };
                enc.encode_batch(warm_up, &None, threads, &mut || true)
                    .unwrap();
                let (t, cpu, faults) = (Instant::now(), cpu_seconds(), page_faults());
                let (mut n, mut fill_s) = (0, 0.0);
                for b in &batches {
                    let ids = enc.encode_batch(*b, &None, threads, &mut || true).unwrap();
                    // one flat array of the ids, as `encode_batch_to_numpy` makes
                    let total = bytepair_core::encode::text_offsets(&ids).1;
                    let t_fill = Instant::now();
                    let flat = bytepair_core::encode::fill(enc, &ids.runs, total, threads, |id| id);
                    n += flat.unwrap().0.len();
                    fill_s += t_fill.elapsed().as_secs_f64();
                    // as the Python bindings do once the ids are copied out
                    enc.give_back_ids(ids.runs);
                }
                let (s, c) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
                let f = page_faults() - faults;
                println!(
                    "{mode} {s:.3} s {:.1} MB/s cpu {c:.3} s (flat copy {fill_s:.3} s) {f} faults {n} ids",
                    mb / s
                );
            }
        }
        "cold" => {
            for _ in 0..reps {
                enc.drop_caches();
                let t = Instant::now();
                let ids = warm_pass(&enc, &text);
                let s = t.elapsed().as_secs_f64();
                println!("cold {:.3} s {:.1} MB/s {} ids", s, mb / s, ids.len());
            }
        }
        _ => {
            enc.encode(&text, &None).unwrap();
            for _ in 0..reps {
                let t = Instant::now();
                let ids = warm_pass(&enc, &text);
                let s = t.elapsed().as_secs_f64();
                println!("warm {:.3} s {:.1} MB/s {} ids", s, mb / s, ids.len());
            }
        }
    }
}
