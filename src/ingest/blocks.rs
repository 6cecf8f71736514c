//! One document framed as blocks, each alone, then merged in input order with the result of one
//! pass: the platform-independent half of a parallel ingest (native threads: `parallel`; Web
//! Workers: the web app's worker).
//!
//! The framer is chunk-independent, so a block can be framed alone if it is known where in the
//! document it starts. Blocks are cut just before a `{` that follows a `,` (an element of the
//! event array, in every writer seen), and framed on the guess that they start between two
//! elements ([`frame`]). The guess is checked when blocks are merged, in order ([`merge`]): the
//! framer of everything before must stand between two elements ([`Framer::between_elements`]);
//! when it does not (a `,{` inside an event's arguments, an event longer than a block, a
//! malformed one), the caller frames the block's bytes again, serially, with that framer. So any
//! cut gives the serial result; good cuts only make it fast. [`Builder::merge`] renumbers
//! strings, tracks and details as one pass would have numbered them, and ends open `B` events
//! of earlier blocks with `E` events of later ones.

use memchr::memrchr;

use super::builder::Builder;
use super::event::is_ws;
use super::framer::Framer;

/// Where a block's framing started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// The start of the document (the first block).
    Document,
    /// Between two elements of the event array (inside a top-level object or not): a guess.
    Between(bool),
}

/// A block framed alone: what its framer and builder hold after it.
pub(crate) struct Framed {
    pub start: Start,
    pub framer: Framer,
    pub builder: Builder,
    /// False when framing stopped at a syntax error: framing in order reports it at its place.
    pub ok: bool,
}

/// Frames `bytes`, which start `offset` bytes into the document, from `start`.
pub(crate) fn frame(start: Start, offset: u64, bytes: &[u8]) -> Framed {
    let (mut framer, mut builder) = match start {
        Start::Document => (Framer::default(), Builder::new()),
        Start::Between(in_object) => (Framer::between(offset, in_object), Builder::resumed()),
    };
    let ok = framer.push(bytes, &mut builder).is_ok();
    Framed {
        start,
        framer,
        builder,
        ok,
    }
}

/// Merges `block`, framed alone, after everything `framer` and `builder` read (the blocks before
/// it, in order). False when its guess was wrong or it stopped at a syntax error: nothing was
/// merged, and the caller frames the block's bytes with `framer.push` instead.
#[must_use]
pub(crate) fn merge(framer: &mut Framer, builder: &mut Builder, block: Framed) -> bool {
    let guessed = match block.start {
        Start::Document => true,
        Start::Between(in_object) => framer.between_elements() == Some(in_object),
    };
    if !(guessed && block.ok) {
        return false;
    }
    *framer = block.framer;
    match block.start {
        Start::Document => *builder = block.builder,
        Start::Between(_) => builder.merge(block.builder),
    }
    true
}

/// Where the last block boundary in `bytes` is: the last `{` whose previous non-whitespace byte
/// is `,` (an element of the event array, usually), searched in the second half only.
pub(crate) fn cut_point(bytes: &[u8]) -> Option<usize> {
    let floor = bytes.len() / 2;
    let mut end = bytes.len();
    while let Some(p) = memrchr(b'{', &bytes[floor..end]).map(|p| p + floor) {
        let before = bytes[..p].iter().rposition(|&b| !is_ws(b));
        if before.is_some_and(|q| bytes[q] == b',') {
            return Some(p);
        }
        end = p;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_cut_before_an_element_never_inside_a_value() {
        let text = br#"{"a": {"b": 1}},
  {"c": [{"d": 2}, {"e": 3}], "f": {"g": 4}}"#;
        let cut = cut_point(text).expect("a cut point");
        // The last `,{` pattern is inside the array of "c": a guess the merge checks.
        assert_eq!(text[cut], b'{');
        assert_eq!(&text[cut..cut + 6], br#"{"e": "#);
        assert_eq!(cut_point(br#"{"a": {"b": 1}}"#), None);
    }
}
