//! `src/tables.rs` is exactly what `examples/gen_tables.rs` writes from the pinned regex-syntax.

#[allow(dead_code)]
#[path = "../examples/gen_tables.rs"]
mod gen_tables;

#[test]
fn tables_are_generated_from_the_pinned_regex_syntax() {
    let committed = include_str!("../src/tables.rs");
    assert!(
        gen_tables::render() == committed,
        "src/tables.rs is stale: run `cd rust && cargo run --example gen_tables`"
    );
}

#[test]
fn unicode_version_is_16() {
    // tiktoken's (and bytepair's regex-engine path's) version today; a change is a decision
    // (docs/unicode.md), not a side effect of a dependency bump.
    assert_eq!(gen_tables::unicode_version(), "16.0.0");
}
