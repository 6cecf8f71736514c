//! The limits and the statistics: what the model can number (its ids are 32-bit), where
//! reading stops before it would pass one, and the elements skipped, per reason.

use serde::{Deserialize, Serialize};

use super::Builder;
use crate::model::NONE;

/// Why an event was skipped; counted per reason in the ingest report.
pub mod skip {
    pub const NOT_AN_OBJECT: &str = "element of traceEvents is not a JSON object";
    pub const MALFORMED: &str = "malformed JSON inside the event";
    pub const NO_PHASE: &str = "no \"ph\" (phase)";
    pub const UNSUPPORTED_PHASE: &str =
        "phase not used by PyTorch traces (async b/e/n, objects, samples)";
    pub const BAD_TS: &str = "missing or unreadable \"ts\"";
    pub const BAD_DUR: &str = "missing or unreadable \"dur\" on a complete (X) event";
    pub const NEGATIVE_DUR: &str = "negative \"dur\"";
    pub const UNMATCHED_END: &str = "E (end) event without a matching B (begin)";
    pub const UNMATCHED_BEGIN: &str = "B (begin) event never ended";
    pub const OVERSIZED: &str = "event larger than 64 MiB";
    /// Every reason, for reading a serialized builder back.
    pub const ALL: [&str; 10] = [
        NOT_AN_OBJECT,
        MALFORMED,
        NO_PHASE,
        UNSUPPORTED_PHASE,
        BAD_TS,
        BAD_DUR,
        NEGATIVE_DUR,
        UNMATCHED_END,
        UNMATCHED_BEGIN,
        OVERSIZED,
    ];

    /// The counts per reason, serialized by text and read back as the constants above.
    pub(crate) mod counts {
        use std::collections::BTreeMap;

        use serde::{de::Error, Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer>(
            counts: &BTreeMap<&'static str, u64>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            counts.serialize(serializer)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<BTreeMap<&'static str, u64>, D::Error> {
            BTreeMap::<String, u64>::deserialize(deserializer)?
                .into_iter()
                .map(
                    |(reason, n)| match super::ALL.iter().find(|r| **r == reason) {
                        Some(r) => Ok((*r, n)),
                        None => Err(D::Error::custom(format!(
                            "an unknown skip reason: {reason}"
                        ))),
                    },
                )
                .collect()
        }
    }
}

/// A 32-bit id of the model that can run out on a trace too large for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Limit {
    Events,
    Strings,
    Tracks,
    Collectives,
    DetailBytes,
}

impl Limit {
    fn what(self) -> &'static str {
        match self {
            Limit::Events => "events",
            Limit::Strings => "distinct strings (names, categories, ids, shapes)",
            Limit::Tracks => "tracks (pid and tid pairs)",
            Limit::Collectives => "collective calls",
            Limit::DetailBytes => "bytes of event details",
        }
    }
}

/// How many of each the model can number: ids are `u32`, and `NONE` (`u32::MAX`) marks a
/// missing one. Smaller only in tests.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    events: usize,
    strings: usize,
    tracks: usize,
    collectives: usize,
    /// The details' offsets: a record may start below it.
    detail_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        let ids = NONE as usize;
        Limits {
            events: ids,
            strings: ids,
            tracks: ids,
            collectives: ids,
            detail_bytes: ids,
        }
    }
}

/// The most one element adds: an event; strings for its category, name, pid, tid, input dims
/// and types, and a collective's name, dtype and group; a track; a collective; a details record
/// (a kernel's, the longest, takes at most 86 bytes).
const STRINGS_PER_ELEMENT: usize = 9;
const DETAIL_BYTES_PER_ELEMENT: usize = 128;

/// Events, strings, tracks, collectives and bytes of details held ([`Builder::counts`]).
pub(super) type Counts = [usize; 5];

impl Limits {
    /// The first limit that one more element could pass, with `counts` so far.
    pub(super) fn passed(&self, counts: Counts) -> Option<Limit> {
        let [events, strings, tracks, collectives, detail_bytes] = counts;
        if events >= self.events {
            Some(Limit::Events)
        } else if strings + STRINGS_PER_ELEMENT > self.strings {
            Some(Limit::Strings)
        } else if tracks >= self.tracks {
            Some(Limit::Tracks)
        } else if collectives >= self.collectives {
            Some(Limit::Collectives)
        } else if detail_bytes >= self.detail_bytes {
            Some(Limit::DetailBytes)
        } else {
            None
        }
    }

    /// How many elements after one that `passed` none, with the same counts, cannot pass one.
    fn unchecked(&self, counts: Counts) -> usize {
        let [events, strings, tracks, collectives, detail_bytes] = counts;
        (self.events - events - 1)
            .min((self.strings - strings - STRINGS_PER_ELEMENT) / STRINGS_PER_ELEMENT)
            .min(self.tracks - tracks - 1)
            .min(self.collectives - collectives - 1)
            .min((self.detail_bytes - detail_bytes - 1) / DETAIL_BYTES_PER_ELEMENT)
    }

    fn limit(&self, limit: Limit) -> usize {
        match limit {
            Limit::Events => self.events,
            Limit::Strings => self.strings,
            Limit::Tracks => self.tracks,
            Limit::Collectives => self.collectives,
            Limit::DetailBytes => self.detail_bytes,
        }
    }
}

/// What the model can number, and where reading stopped against it.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct Bounds {
    /// The real limits unless a test sets smaller ones.
    #[serde(skip)]
    pub(super) limits: Limits,
    /// Elements that can be read before the limits are checked again: none of them can pass
    /// one (0: check at the next).
    #[serde(skip)]
    pub(super) unchecked: usize,
    /// The limit the next element could have passed, where reading stopped.
    pub(super) stopped: Option<Limit>,
    /// Elements left unread after the stop.
    pub(super) beyond_limit: u64,
}

impl Builder {
    pub(super) fn counts(&self) -> Counts {
        [
            self.events.len(),
            self.strings.len(),
            self.tracks.len(),
            self.collectives.len(),
            self.details.bytes().0,
        ]
    }

    /// Why reading stopped early, for the user, where it did.
    pub(in crate::ingest) fn limit_warning(&self) -> Option<String> {
        let limit = self.bounds.stopped?;
        Some(format!(
            "the trace is too large for the model: it was read up to element {} ({} events), and the {} elements after it were left out, as in a cut file, because the model numbers {} with 32-bit ids (at most {}). Split the trace, or profile fewer steps.",
            self.elements,
            self.events.len(),
            self.bounds.beyond_limit,
            limit.what(),
            self.bounds.limits.limit(limit),
        ))
    }

    /// Whether elements are still read: false from the first that might pass a limit on.
    #[inline(always)]
    pub(super) fn reading(&mut self) -> bool {
        if self.bounds.unchecked == 0 {
            return self.check_limits();
        }
        self.bounds.unchecked -= 1;
        self.elements += 1;
        true
    }

    /// [`Builder::reading`] where the limits are checked: at most once per many elements,
    /// and at every element from the first that might pass one.
    #[cold]
    fn check_limits(&mut self) -> bool {
        if self.bounds.stopped.is_none() {
            let counts = self.counts();
            let bounds = &mut self.bounds;
            bounds.stopped = bounds.limits.passed(counts);
            if bounds.stopped.is_none() {
                bounds.unchecked = bounds.limits.unchecked(counts);
            }
        }
        if self.bounds.stopped.is_some() {
            self.bounds.beyond_limit += 1;
            return false;
        }
        self.elements += 1;
        true
    }

    pub(super) fn skip(&mut self, reason: &'static str) {
        *self.skipped.entry(reason).or_default() += 1;
    }

    /// Events whose category is one Kineto writes.
    pub(in crate::ingest) fn kineto_events(&self) -> u64 {
        self.categories
            .iter()
            .filter(|c| c.kineto)
            .map(|c| c.count)
            .sum()
    }

    /// Events in the capitalised categories of PyTorch 1.8–1.10.
    pub(in crate::ingest) fn capitalised_events(&self) -> u64 {
        self.categories
            .iter()
            .filter(|c| c.capitalised)
            .map(|c| c.count)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::blocks::{self, Start};
    use crate::ingest::framer::Framer;

    /// A trace of a metadata event then `n` kernels, each with a new name and collective, on
    /// 40 tracks, with a top-level value after the events; its bytes and the offsets where
    /// blocks of `per_block` kernels start.
    fn trace(n: usize, per_block: usize) -> (Vec<u8>, Vec<usize>) {
        let mut text = String::from(
            r#"{"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "main"}}"#,
        );
        let mut cuts = vec![0];
        for i in 0..n {
            text.push_str(",\n");
            if i > 0 && i % per_block == 0 {
                cuts.push(text.len());
            }
            text.push_str(&format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": {}, "ts": {i}, "dur": 1, "args": {{"correlation": {i}, "stream": 7, "Collective name": "c{i}"}}}}"#,
                i % 40
            ));
        }
        text.push_str(r#"], "traceName": "t"}"#);
        (text.into_bytes(), cuts)
    }

    fn limited(limits: Limits) -> Builder {
        let mut b = Builder::new();
        b.bounds.limits = limits;
        b
    }

    fn serial(bytes: &[u8], limits: Limits) -> Builder {
        let (mut framer, mut b) = (Framer::default(), limited(limits));
        framer.push(bytes, &mut b).expect("valid JSON");
        assert_eq!(framer.finish(&mut b).expect("valid JSON"), Ok(()));
        b
    }

    /// Blocks framed alone and merged in order, as `parallel` and the web app's workers do; the
    /// first read in order instead where `first_in_order` (as after a wrong guess). Gives the
    /// builder and the blocks read in order.
    fn merged(
        bytes: &[u8],
        cuts: &[usize],
        limits: Limits,
        first_in_order: bool,
    ) -> (Builder, usize) {
        let (mut framer, mut b) = (Framer::default(), limited(limits));
        let mut refused = 0;
        for (i, &from) in cuts.iter().enumerate() {
            let block = &bytes[from..cuts.get(i + 1).copied().unwrap_or(bytes.len())];
            let start = if i == 0 {
                Start::Document
            } else {
                Start::Between(true)
            };
            let framed = blocks::frame(start, from as u64, block);
            if i == 0 && first_in_order || !blocks::merge(&mut framer, &mut b, framed) {
                refused += 1;
                framer.push(block, &mut b).expect("valid JSON");
            }
        }
        assert_eq!(framer.finish(&mut b).expect("valid JSON"), Ok(()));
        (b, refused)
    }

    #[test]
    fn a_trace_past_a_limit_keeps_the_events_before_it_in_one_pass_and_in_blocks() {
        let n = 300;
        let (bytes, cuts) = trace(n, 16);
        let whole = serial(&bytes, Limits::default());
        assert_eq!((whole.events.len(), whole.limit_warning()), (n, None));
        let real = Limits::default();
        for (limits, limit) in [
            (
                Limits {
                    events: 100,
                    ..real
                },
                Limit::Events,
            ),
            (
                Limits {
                    strings: 150,
                    ..real
                },
                Limit::Strings,
            ),
            (Limits { tracks: 25, ..real }, Limit::Tracks),
            (
                Limits {
                    collectives: 120,
                    ..real
                },
                Limit::Collectives,
            ),
            (
                Limits {
                    detail_bytes: 1000,
                    ..real
                },
                Limit::DetailBytes,
            ),
        ] {
            let one = serial(&bytes, limits);
            let kept = one.events.len();
            assert!(kept > 0 && kept < n, "{limit:?}: {kept} events kept");
            if limit == Limit::Events {
                assert_eq!(kept, limits.events);
            }
            assert_eq!(one.bounds.stopped, Some(limit));
            // Every event before the stop, as read without a limit; the top level still read.
            assert_eq!(one.events.start, whole.events.start[..kept]);
            let names = |b: &Builder| -> Vec<String> {
                let names = b.events.name.iter();
                names.map(|&s| b.strings.get(s).to_string()).collect()
            };
            assert_eq!(names(&one), names(&whole)[..kept]);
            assert_eq!(one.elements + one.bounds.beyond_limit, whole.elements);
            assert!(one.top.values.contains_key("traceName"));
            let warning = one.limit_warning().expect("a warning");
            assert!(
                warning.contains(&format!("up to element {} ({kept} events)", one.elements))
                    && warning.contains(&format!("at most {}", one.bounds.limits.limit(limit)))
                    && warning.contains("Split the trace"),
                "{warning}"
            );
            // Blocks: those that could pass the limit are framed again in order; same result.
            for first_in_order in [false, true] {
                let (blocks, refused) = merged(&bytes, &cuts, limits, first_in_order);
                assert!(
                    refused > 0 && refused < cuts.len(),
                    "{limit:?}: {refused} refused"
                );
                assert_eq!(blocks.events.start, one.events.start, "{limit:?}");
                assert_eq!(names(&blocks), names(&one));
                assert_eq!(blocks.events.detail, one.events.detail);
                assert_eq!(blocks.details.bytes().0, one.details.bytes().0);
                assert_eq!(
                    (
                        blocks.strings.len(),
                        blocks.tracks.len(),
                        blocks.collectives.len()
                    ),
                    (one.strings.len(), one.tracks.len(), one.collectives.len())
                );
                assert_eq!(blocks.limit_warning().as_ref(), Some(&warning));
                assert!(blocks.top.values.contains_key("traceName"));
            }
        }
    }
}
