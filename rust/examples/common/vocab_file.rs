//! The vocabulary file of the profiling tools, as `tools/profile_vocab.py` writes it: u32 n,
//! then n × (u32 id, u32 len, bytes); u32 m, then m × (u32 len, bytes) × 2; then, optionally,
//! the pattern (u32 len, bytes; GPT-2's when absent). Read by `encode_profile` and by
//! `benchmarks/new_words` (as a `#[path]` module).

/// A vocabulary file's tokens (id, bytes), merges (left, right) in rank order, and pattern.
pub struct VocabFile {
    pub vocab: Vec<(u32, Vec<u8>)>,
    pub merges: Vec<(Vec<u8>, Vec<u8>)>,
    pub pattern: String,
}

fn read_u32(b: &[u8], at: &mut usize) -> u32 {
    let v = u32::from_le_bytes(b[*at..*at + 4].try_into().unwrap());
    *at += 4;
    v
}

fn read_bytes(b: &[u8], at: &mut usize) -> Vec<u8> {
    let n = read_u32(b, at) as usize;
    *at += n;
    b[*at - n..*at].to_vec()
}

/// The file at `path` (panics on a file that is not one: these are profiling tools).
pub fn read(path: &str) -> VocabFile {
    let raw = std::fs::read(path).unwrap();
    let mut at = 0;
    let vocab = (0..read_u32(&raw, &mut at))
        .map(|_| (read_u32(&raw, &mut at), read_bytes(&raw, &mut at)))
        .collect();
    let merges = (0..read_u32(&raw, &mut at))
        .map(|_| (read_bytes(&raw, &mut at), read_bytes(&raw, &mut at)))
        .collect();
    let pattern = match at < raw.len() {
        true => String::from_utf8(read_bytes(&raw, &mut at)).unwrap(),
        false => bytepair_core::pretokenize::GPT2_PATTERN.to_string(),
    };
    VocabFile {
        vocab,
        merges,
        pattern,
    }
}
