//! The BPE of the words a cold pass must merge, one at a time: bytepair's `Encoder::merge_word`
//! against rust-gems' `bpe` (its backtracking encoder over an Aho-Corasick automaton of the
//! vocabulary, and its table and bitfield encoders). The words are the distinct pretokens of
//! 2+ bytes of each text (its first 30 MB), by length class; every word's ids are checked
//! equal first, then each encoder is timed over the class, best of `REPS`.
//!
//!   cargo run --release -- NAME VOCAB.bin REPS TEXT...
//!
//! NAME: cl100k or o200k (rust-gems' own, from bpe-openai) or any other (built here from
//! VOCAB.bin's tokens in id order, as for gpt2). VOCAB.bin: `tools/profile_vocab.py` writes it.
use std::collections::HashSet;
use std::io::Read;
use std::time::Instant;

use bpe::byte_pair_encoding::{find_hash_factor_for_dictionary, BytePairEncoding};
use bytepair_core::encode::Encoder;
use bytepair_core::pretokenize::Pretokenizer;

#[path = "../../../rust/examples/common/vocab_file.rs"]
mod vocab_file;

const MAX_TEXT: u64 = 30_000_000;
const CLASSES: [(usize, usize); 7] = [
    (2, 8),
    (9, 16),
    (17, 32),
    (33, 64),
    (65, 128),
    (129, 512),
    (513, usize::MAX),
];

/// The first 30 MB of `path`, cut at a character's start.
fn read_text(path: &str) -> String {
    let mut buf = Vec::new();
    let file = std::fs::File::open(path).unwrap();
    file.take(MAX_TEXT).read_to_end(&mut buf).unwrap();
    if let Err(e) = std::str::from_utf8(&buf) {
        buf.truncate(e.valid_up_to());
    }
    String::from_utf8(buf).unwrap()
}

/// rust-gems' BPE of `vocab`: bpe-openai's for cl100k and o200k, else built from the tokens.
fn gems_bpe(name: &str, vocab: &[(u32, Vec<u8>)]) -> &'static BytePairEncoding {
    match name {
        "cl100k" => &bpe_openai::cl100k_base().bpe,
        "o200k" => &bpe_openai::o200k_base().bpe,
        _ => {
            let mut tokens = vocab.to_vec();
            tokens.sort_by_key(|t| t.0);
            assert!(tokens.iter().enumerate().all(|(i, t)| t.0 as usize == i));
            let tokens: Vec<Vec<u8>> = tokens.into_iter().map(|t| t.1).collect();
            let factor = find_hash_factor_for_dictionary(tokens.clone());
            Box::leak(Box::new(BytePairEncoding::from_dictionary(
                tokens,
                Some(factor),
            )))
        }
    }
}

type Encode<'a> = Box<dyn Fn(&[u8], &mut Vec<u32>) + 'a>;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, reps) = (args[1].as_str(), args[3].parse::<usize>().unwrap());
    let vocab_file::VocabFile {
        vocab,
        merges,
        pattern,
    } = vocab_file::read(&args[2]);
    let enc = Encoder::new(vocab.clone(), merges, vec![], &pattern).unwrap();
    let t = Instant::now();
    let gems = gems_bpe(name, &vocab);
    println!(
        "{name}: rust-gems' BPE ready in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let encoders: [(&str, Encode); 4] = [
        ("bytepair", Box::new(|w, out| enc.merge_word(w, out))),
        (
            "backtracking",
            Box::new(|w, out| out.extend(gems.encode_via_backtracking(w))),
        ),
        (
            "table",
            Box::new(|w, out| out.extend(gems.encode_via_table(w))),
        ),
        (
            "bitfield",
            Box::new(|w, out| out.extend(gems.encode_via_bitfield(w))),
        ),
    ];
    let pretok = Pretokenizer::new(&pattern).unwrap();
    println!("vocabulary | text | bytes | words | ns per word: bytepair | backtracking | table | bitfield | differ");
    for path in &args[4..] {
        let text = read_text(path);
        let stem = std::path::Path::new(path)
            .file_stem()
            .unwrap()
            .to_string_lossy();
        let mut seen = HashSet::new();
        let mut words: Vec<&[u8]> = Vec::new();
        pretok
            .for_each(&text, |w| {
                if w.len() >= 2 && seen.insert(w) {
                    words.push(w.as_bytes());
                }
            })
            .unwrap();
        for (lo, hi) in CLASSES {
            let class: Vec<&[u8]> = words
                .iter()
                .copied()
                .filter(|w| (lo..=hi).contains(&w.len()))
                .collect();
            if class.is_empty() {
                continue;
            }
            let (mut want, mut got, mut differ) = (Vec::new(), Vec::new(), 0);
            for w in &class {
                want.clear();
                enc.merge_word(w, &mut want);
                for (_, encode) in &encoders[1..] {
                    got.clear();
                    encode(w, &mut got);
                    differ += usize::from(got != want);
                }
            }
            let bytes = match hi {
                usize::MAX => format!("{lo}+"),
                _ => format!("{lo}-{hi}"),
            };
            let mut line = format!("{name} | {stem} | {bytes} | {}", class.len());
            for (_, encode) in &encoders {
                let best = (0..reps)
                    .map(|_| {
                        let t = Instant::now();
                        for w in &class {
                            got.clear();
                            encode(w, &mut got);
                        }
                        t.elapsed().as_secs_f64()
                    })
                    .fold(f64::MAX, f64::min);
                line += &format!(" | {:.0}", best * 1e9 / class.len() as f64);
            }
            println!("{line} | {differ}");
        }
    }
}
