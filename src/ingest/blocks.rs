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
//!
//! A [`Framed`] block serializes with serde, so that a Web Worker can frame a block and post it
//! to the worker that merges ([`Ingest::merge`](super::Ingest::merge)). Such workers cut byte
//! ranges of a file each alone, so they need a rule that two neighbours apply to the same
//! bytes with the same answer: [`range_start`].

use memchr::memchr;
use serde::{Deserialize, Serialize};

use super::builder::Builder;
use super::event::is_ws;
use super::framer::Framer;

/// Where a block's framing started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Start {
    /// The start of the document (the first block).
    Document,
    /// Between two elements of the event array (inside a top-level object or not): a guess.
    Between(bool),
}

/// A block framed alone: what its framer and builder hold after it.
#[derive(Serialize, Deserialize)]
pub struct Framed {
    start: Start,
    framer: Framer,
    builder: Builder,
    /// False when framing stopped at a syntax error: framing in order reports it at its place.
    ok: bool,
}

impl Framed {
    /// Elements of the event array read in the block.
    pub fn elements(&self) -> u64 {
        self.builder.elements
    }
}

/// Frames `bytes`, which start `offset` bytes into the document, from `start`.
pub fn frame(start: Start, offset: u64, bytes: &[u8]) -> Framed {
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
/// it, in order). False when its guess was wrong, it stopped at a syntax error, or the model
/// could reach one of its limits inside it (`Builder::can_take`): nothing was merged, and the
/// caller frames the block's bytes with `framer.push` instead.
#[must_use]
pub(super) fn merge(framer: &mut Framer, builder: &mut Builder, block: Framed) -> bool {
    let guessed = match block.start {
        Start::Document => true,
        Start::Between(in_object) => framer.between_elements() == Some(in_object),
    };
    if !(guessed && block.ok && builder.can_take(&block.builder)) {
        return false;
    }
    *framer = block.framer;
    match block.start {
        Start::Document => builder.replace_with(block.builder),
        Start::Between(_) => builder.merge(block.builder),
    }
    true
}

/// Where the last block boundary in `bytes` is: the last `{` whose previous non-whitespace byte
/// is `,` (an element of the event array, usually), searched in the second half only. Native:
/// for `parallel`'s mapped files.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn cut_point(bytes: &[u8]) -> Option<usize> {
    let floor = bytes.len() / 2;
    let mut end = bytes.len();
    while let Some(p) = memchr::memrchr(b'{', &bytes[floor..end]).map(|p| p + floor) {
        let before = bytes[..p].iter().rposition(|&b| !is_ws(b));
        if before.is_some_and(|q| bytes[q] == b',') {
            return Some(p);
        }
        end = p;
    }
    None
}

/// Bytes before a `{` in which [`range_start`] looks for the `,` before it.
pub const LOOKBACK: u64 = 64;

/// Where the block of a byte range that nominally starts at document offset `from` starts: at
/// the first `{` at or after `from`, before `limit`, whose previous non-whitespace byte within
/// [`LOOKBACK`] bytes is `,`; else at `limit` (a cut the merge's check will catch). The answer
/// depends on the document's bytes only, so the workers of two neighbouring ranges agree on
/// their common boundary. `window` holds the document's bytes from offset `window_start`, at
/// most `from - LOOKBACK`; `None` when it ends before the answer is known.
pub fn range_start(window: &[u8], window_start: u64, from: u64, limit: u64) -> Option<u64> {
    debug_assert!(window_start <= from.saturating_sub(LOOKBACK));
    let at = |offset: u64| (offset - window_start) as usize;
    let end = at(limit.max(from)).min(window.len());
    let mut i = at(from).min(end);
    while let Some(p) = memchr(b'{', &window[i..end]).map(|p| p + i) {
        let lo = at((window_start + p as u64).saturating_sub(LOOKBACK));
        let before = window[lo..p].iter().rposition(|&b| !is_ws(b));
        if before.is_some_and(|q| window[lo + q] == b',') {
            return Some(window_start + p as u64);
        }
        i = p + 1;
    }
    (window_start + window.len() as u64 >= limit).then_some(limit.max(from))
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

    #[test]
    fn a_range_starts_where_the_bytes_say_whatever_window_was_read() {
        let text: &[u8] = b"[{\"a\": 1},\n  {\"b\": {\"c\": 2}},{\"d\": [3, {\"e\": 4}]}]";
        let len = text.len() as u64;
        for from in 1..len {
            let whole = range_start(text, 0, from, len).unwrap();
            assert!(whole >= from && whole <= len);
            if whole < len {
                assert_eq!(text[whole as usize], b'{');
            }
            // Any window from `from - LOOKBACK` on that reaches the answer gives it; a shorter
            // one says it cannot tell.
            let begin = from.saturating_sub(LOOKBACK);
            for end in from..=len {
                let got = range_start(&text[begin as usize..end as usize], begin, from, len);
                assert_eq!(
                    got,
                    (end > whole || end == len).then_some(whole),
                    "{from}..{end}"
                );
            }
        }
        // No cut point before the limit: the limit.
        assert_eq!(range_start(b"[1, 2, 3, 4]", 0, 2, 8), Some(8));
    }
}
