//! Every Python binding of the core, one file per exposed component as the core lays out its
//! stages: coarse calls (a file, a batch, a whole table), inputs extracted before the GIL is
//! released, no Python object touched while it is released (but for a batch's strings and lists,
//! read and made by each worker with the GIL: `PyTexts`, `PyEncoder::encode_batch`). What the
//! bindings compute lives in the core, where `cargo test` reaches it; this file registers them.

mod count;
mod counts_file;
mod cuts;
mod encode;
mod errors;
mod ffi;
mod pretokenize;
mod progress;
mod train;

use pyo3::prelude::*;

use crate::pretokenize::GPT2_PATTERN;

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GPT2_PATTERN", GPT2_PATTERN)?;
    m.add("CL100K_PATTERN", crate::pretokenize::gpt4::CL100K_PATTERN)?;
    m.add("O200K_PATTERN", crate::pretokenize::o200k::O200K_PATTERN)?;
    m.add(
        "SUPERWORD_GPT2_PATTERN",
        crate::pretokenize::SUPERWORD_GPT2_PATTERN,
    )?;
    m.add(
        "SUPERWORD_GPT4_PATTERN",
        crate::pretokenize::SUPERWORD_GPT4_PATTERN,
    )?;
    m.add("UNICODE_VERSION", crate::UNICODE_VERSION)?;
    // The package's one version: Cargo.toml's, which maturin also writes into the metadata.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<count::PyWordCounts>()?;
    m.add_class::<encode::PyEncoder>()?;
    m.add_function(wrap_pyfunction!(count::count_file, m)?)?;
    m.add_function(wrap_pyfunction!(count::count_texts, m)?)?;
    m.add_function(wrap_pyfunction!(count::count_rows, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_bpe, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::pretokenizer_kind, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode_block, m)?)?;
    m.add_function(wrap_pyfunction!(encode::canonical_merges, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file::counts_file_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file::sum_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file::table_of_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file::read_counts_header, m)?)?;
    m.add_function(wrap_pyfunction!(counts_file::read_counts_file, m)?)?;
    m.add_function(wrap_pyfunction!(cuts::find_cuts, m)?)?;
    Ok(())
}
