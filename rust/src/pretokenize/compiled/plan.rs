//! From a pattern to what the compiled path runs: its top-level alternatives, in order, each a
//! regex-syntax tree (HIR) that a DFA can run, or the reason the pattern stays on fancy-regex.
//!
//! The pattern is parsed by fancy-regex's own parser (`Expr::parse_tree`), so it is read exactly
//! as fancy-regex reads it (flags, escapes, possessive quantifiers, `&&` in classes). A subtree
//! without look-around is printed with `Expr::to_str` and parsed by regex-syntax: the path by
//! which fancy-regex hands such subtrees to regex-automata, so the classes are fancy-regex's.
//! Beyond regular subtrees, two constructs are taken, each shown equal to a regular one:
//! `X+(?!Y)` (X, Y one-character classes) and atomic groups that cannot be backtracked into.
//! All decisions are made on the trees, never on the pattern's text.

use fancy_regex::{Assertion, Expr, LookAround};
use regex_syntax::hir::{
    Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, LookSet, Repetition,
};

use super::Refusal;

/// One top-level alternative.
#[derive(Clone, Debug)]
pub(super) enum Alt {
    /// No look-around (atomic groups already shown equal to plain ones and dropped).
    Regular(Hir),
    /// `X+(?!Y)`: X and Y one-character classes with no character in common.
    LookRun { x: ClassUnicode, y: ClassUnicode },
}

impl Alt {
    /// What a DFA runs for this alternative: itself, or `X+` (the lookahead is added over the
    /// class bytes, `classes.rs`).
    pub(super) fn hir(&self) -> Hir {
        match self {
            Alt::Regular(h) => h.clone(),
            Alt::LookRun { x, .. } => Hir::repetition(Repetition {
                min: 1,
                max: None,
                greedy: true,
                sub: Box::new(Hir::class(Class::Unicode(x.clone()))),
            }),
        }
    }
}

/// The alternatives of `pattern`, or why the compiled path cannot run it.
pub(super) fn plan(pattern: &str) -> Result<Vec<Alt>, Refusal> {
    let tree = Expr::parse_tree(pattern).map_err(|e| Refusal::Parse(e.to_string()))?;
    let mut tops = Vec::new();
    flatten(&tree.expr, &mut tops);
    tops.into_iter().map(alternative).collect()
}

/// Top-level alternatives: `(a|b)|c` is `a|b|c` (ordered choice is associative, and only the
/// whole match counts; capture groups do not change what matches).
fn flatten<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Group(inner) => flatten(inner, out),
        Expr::Alt(v) => v.iter().for_each(|a| flatten(a, out)),
        other => out.push(other),
    }
}

/// Whether `e` holds nothing but what `Expr::to_str` prints for regex-syntax (assertions are
/// checked on the HIR: only `$` is kept).
fn is_regular(e: &Expr) -> bool {
    match e {
        Expr::Empty | Expr::Any { .. } | Expr::Literal { .. } | Expr::Delegate { .. } => true,
        Expr::Assertion(a) => matches!(
            a,
            Assertion::StartText
                | Assertion::EndText
                | Assertion::StartLine { .. }
                | Assertion::EndLine { .. }
                | Assertion::WordBoundary
                | Assertion::NotWordBoundary
        ),
        Expr::Concat(v) | Expr::Alt(v) => v.iter().all(is_regular),
        Expr::Group(c) => is_regular(c),
        Expr::Repeat { child, .. } => is_regular(child),
        _ => false,
    }
}

/// The HIR of a regular subtree, as fancy-regex hands it to regex-automata.
fn to_hir(e: &Expr) -> Result<Hir, Refusal> {
    let mut s = String::new();
    e.to_str(&mut s, 0);
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(&s)
        .map_err(|err| Refusal::Parse(err.to_string()))
}

fn alternative(a: &Expr) -> Result<Alt, Refusal> {
    if is_regular(a) {
        return regular(to_hir(a)?);
    }
    if let Some(run) = look_run(a)? {
        return Ok(run);
    }
    // Atomic groups (possessive quantifiers), right to left, so that each one's continuation
    // is already plain when it is checked.
    let items: Vec<&Expr> = match a {
        Expr::Concat(v) => v.iter().collect(),
        other => vec![other],
    };
    let mut rest: Vec<Expr> = Vec::new();
    for (k, item) in items.iter().enumerate().rev() {
        let plain = match item {
            Expr::AtomicGroup(inner) if is_regular(inner) => {
                let last = k + 1 == items.len();
                if !last && !atomic_is_plain(&to_hir(inner)?, &to_hir(&Expr::Concat(rest.clone()))?)
                {
                    return Err(Refusal::Atomic);
                }
                (**inner).clone()
            }
            e if is_regular(e) => (*e).clone(),
            e => return Err(construct(e)),
        };
        rest.insert(0, plain);
    }
    regular(to_hir(&Expr::Concat(rest))?)
}

/// Why a construct is refused.
fn construct(e: &Expr) -> Refusal {
    let found = |p: fn(&Expr) -> bool| e.has_descendant_or_self(p);
    if found(|x| {
        matches!(
            x,
            Expr::LookAround(_, LookAround::LookBehind | LookAround::LookBehindNeg)
        )
    }) {
        Refusal::LookBehind
    } else if found(|x| matches!(x, Expr::LookAround(..))) {
        Refusal::LookAhead
    } else if found(|x| {
        matches!(
            x,
            Expr::Backref { .. } | Expr::BackrefWithRelativeRecursionLevel { .. }
        )
    }) {
        Refusal::Backreference
    } else if found(|x| matches!(x, Expr::AtomicGroup(_))) {
        Refusal::Atomic
    } else {
        Refusal::Construct
    }
}

fn regular(h: Hir) -> Result<Alt, Refusal> {
    if h.properties().minimum_len() == Some(0) {
        // fancy-regex's rules for empty matches (a step of one character after each) would
        // have to be followed; no pattern in use needs them
        return Err(Refusal::EmptyMatch);
    }
    check_looks(&h)?;
    Ok(Alt::Regular(h))
}

/// Only `$` (the end of the text) among assertions: anything that looks behind (`^`, `\b`)
/// would make a pretoken depend on the text before its start, which the scan does not keep.
fn check_looks(h: &Hir) -> Result<(), Refusal> {
    match h.kind() {
        HirKind::Look(Look::End) => Ok(()),
        HirKind::Look(l) if LookSet::singleton(*l).contains_word() => Err(Refusal::WordBoundary),
        HirKind::Look(_) => Err(Refusal::Anchor),
        HirKind::Class(Class::Bytes(_)) => Err(Refusal::Construct),
        HirKind::Repetition(r) => check_looks(&r.sub),
        HirKind::Capture(c) => check_looks(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().try_for_each(check_looks),
        _ => Ok(()),
    }
}

/// The class of a HIR that matches exactly one character from a set.
fn single_class(h: &Hir) -> Option<ClassUnicode> {
    match h.kind() {
        HirKind::Class(Class::Unicode(c)) => Some(c.clone()),
        HirKind::Literal(lit) => {
            let mut chars = std::str::from_utf8(&lit.0).ok()?.chars();
            let c = chars.next()?;
            chars
                .next()
                .is_none()
                .then(|| ClassUnicode::new([ClassUnicodeRange::new(c, c)]))
        }
        HirKind::Capture(c) => single_class(&c.sub),
        _ => None,
    }
}

/// `X+(?!Y)` with X, Y one-character classes and X ∩ Y = ∅ (the whole alternative).
///
/// Why it is regular: let the run of X from the start p end at r. A backtracker tries the
/// lengths r, r-1, …, 1. At r the lookahead holds iff r is the end of the text or its
/// character is not in Y. At r-1 (a run of 2+) the next character is in X, hence not in Y, so
/// it holds. So the alternative takes `[p, r)`, or `[p, r-1)`, or fails at p (a run of one
/// before Y), where the next alternatives are tried: exactly `X+` followed by a one-character
/// lookahead, which the DFA runs as `\b{end-half}` over class bytes (`classes.rs`).
fn look_run(a: &Expr) -> Result<Option<Alt>, Refusal> {
    let Expr::Concat(v) = a else {
        return Ok(None);
    };
    let [Expr::Repeat {
        child,
        lo: 1,
        hi: usize::MAX,
        greedy: true,
    }, Expr::LookAround(y, LookAround::LookAheadNeg)] = v.as_slice()
    else {
        return Ok(None);
    };
    if !is_regular(child) || !is_regular(y) {
        return Ok(None);
    }
    let (Some(x), Some(y)) = (single_class(&to_hir(child)?), single_class(&to_hir(y)?)) else {
        return Ok(None);
    };
    let mut both = x.clone();
    both.intersect(&y);
    if !both.ranges().is_empty() {
        return Err(Refusal::LookAhead);
    }
    Ok(Some(Alt::LookRun { x, y }))
}

/// Whether a continuation can match the empty string, and where.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Empty {
    Never,
    /// Only at the end of the text (`$`).
    AtEnd,
    /// Anywhere.
    Always,
}

/// The characters a match of `h` can start with, and where it can be empty (None: an
/// assertion this analysis does not follow).
fn first(h: &Hir) -> Option<(ClassUnicode, Empty)> {
    let one = |c: char| ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
    Some(match h.kind() {
        HirKind::Empty => (ClassUnicode::empty(), Empty::Always),
        HirKind::Literal(lit) => (
            one(std::str::from_utf8(&lit.0).ok()?.chars().next()?),
            Empty::Never,
        ),
        HirKind::Class(Class::Unicode(c)) => (c.clone(), Empty::Never),
        HirKind::Look(Look::End) => (ClassUnicode::empty(), Empty::AtEnd),
        HirKind::Class(Class::Bytes(_)) | HirKind::Look(_) => return None,
        HirKind::Repetition(r) => {
            let (f, e) = first(&r.sub)?;
            (f, if r.min == 0 { Empty::Always } else { e })
        }
        HirKind::Capture(c) => first(&c.sub)?,
        HirKind::Concat(items) => {
            let (mut acc, mut empty) = (ClassUnicode::empty(), Empty::Always);
            for it in items {
                let (f, e) = first(it)?;
                acc.union(&f);
                empty = empty.min(e);
                if empty == Empty::Never {
                    break;
                }
            }
            (acc, empty)
        }
        HirKind::Alternation(alts) => {
            let (mut acc, mut empty) = (ClassUnicode::empty(), Empty::Never);
            for it in alts {
                let (f, e) = first(it)?;
                acc.union(&f);
                empty = empty.max(e);
            }
            (acc, empty)
        }
    })
}

/// Whether `(?>R)K` matches as `RK` does, at the end of a top-level alternative. A backtracker
/// enters R again only when K fails after R's first choice: never when K can match the empty
/// string anywhere. When R is `C{m,n}`, greedy over one class C, its other choices end before
/// a character of C, where K cannot match if it neither starts with a character of C nor
/// matches the empty string there (`$` matches it only at the end of the text).
fn atomic_is_plain(r: &Hir, k: &Hir) -> bool {
    let Some((starts, empty)) = first(k) else {
        return false;
    };
    if empty == Empty::Always {
        return true;
    }
    let HirKind::Repetition(rep) = r.kind() else {
        return false;
    };
    let Some(c) = single_class(&rep.sub).filter(|_| rep.greedy) else {
        return false;
    };
    let mut both = starts;
    both.intersect(&c);
    both.ranges().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::gpt4::CL100K_PATTERN;

    #[test]
    fn plans_take_the_presets_and_refuse_what_they_cannot_run() {
        let alts = plan(CL100K_PATTERN).unwrap();
        assert_eq!(alts.len(), 8);
        assert!(matches!(alts[6], Alt::LookRun { .. }));
        let refused = [
            (r"a(?=b)", Refusal::LookAhead),
            (r"(?<=a)b", Refusal::LookBehind),
            (r"(a)\1", Refusal::Backreference),
            (r"a*", Refusal::EmptyMatch),
            (r"(?>a+)a", Refusal::Atomic),
            (r"^a", Refusal::Anchor),
            (r"(?m)a$", Refusal::Anchor),
            (r"\ba", Refusal::WordBoundary),
            (r"\s+(?!\s)", Refusal::LookAhead),
        ];
        for (pattern, why) in refused {
            assert_eq!(plan(pattern).err(), Some(why), "{pattern}");
        }
        assert!(plan(r"(?>a+)b").is_ok());
        assert!(plan(r"a$|b").is_ok());
    }
}
