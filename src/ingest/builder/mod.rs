//! Turns the framer's slices into model rows, one event at a time: the one per-event dispatch
//! from a raw event (complete, begin/end, instant, flow and metadata events) to model rows,
//! every path writing the same `Builder` state. Its parts, one job each:
//! - `columns`: what it writes (rows, details, flow points, top-level values, room ahead);
//! - `caches`: what it keeps while reading (the last tracks, names, category, classes seen);
//! - `merge`: a later block's builder appended as one pass would have built it;
//! - `limits`: what the model can number, where reading stops, and what was skipped.
//!
//! Everything here is per event and append-only; what needs the whole trace (sorting, nesting,
//! links, steps) happens once at the end, in `assemble`.

mod caches;
mod columns;
mod limits;
mod merge;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::event::{self, parse_event, Raw, RawEvent};
use crate::model::{CollectiveDetail, Details, Events, StrId, Strings, Track};
use caches::Caches;
pub(super) use columns::{wanted_key, FlowPoint, Room};
use columns::{Category, Row, TopLevel};
pub use limits::skip;
use limits::Bounds;
use merge::Open;

/// Serializable: a block's builder travels between the web app's workers (`blocks`); its
/// caches are left out and start empty.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct Builder {
    pub(super) strings: Strings,
    pub(super) events: Events,
    /// Tracks as first seen; names and event ranges are filled in by `assemble`.
    pub(super) tracks: Vec<Track>,
    track_ids: FxHashMap<(StrId, StrId), u32>,
    /// Each event's details, at its `detail` offset.
    pub(super) details: Details,
    pub(super) collectives: Vec<CollectiveDetail>,
    pub(super) flows: Vec<FlowPoint>,
    pub(super) process_names: FxHashMap<StrId, StrId>,
    pub(super) thread_names: FxHashMap<(StrId, StrId), StrId>,
    /// Every category seen, in order of appearance (few: a linear search is fastest).
    pub(super) categories: Vec<Category>,
    pub(super) top: TopLevel,
    no_category: StrId,
    #[serde(with = "skip::counts")]
    pub(super) skipped: BTreeMap<&'static str, u64>,
    /// Elements of the event array, of any type.
    pub(super) elements: u64,
    /// Elements that were themselves arrays (memory-timeline exports).
    pub(super) array_elements: u64,
    pub(super) metadata_events: u64,
    pub(super) concrete_inputs: bool,
    /// Events read after replacing invalid UTF-8.
    pub(super) repaired_utf8: u64,
    /// `B` events not ended yet, and a later block's `E` events kept for the merge.
    open: Open,
    /// What the model can number, and where reading stopped.
    bounds: Bounds,
    #[serde(skip)]
    caches: Caches,
}

impl Builder {
    pub(super) fn new() -> Builder {
        let mut b = Builder::default();
        b.no_category = b.strings.intern("");
        b
    }

    /// A builder for a later block of a parallel ingest (see [`Open::defer_ends`]).
    pub(super) fn resumed() -> Builder {
        Builder {
            open: Open {
                defer_ends: true,
                ..Open::default()
            },
            ..Builder::new()
        }
    }

    /// An element the reader found malformed; the framer decided where it ends.
    pub(super) fn malformed(&mut self) {
        if self.reading() {
            self.skip(skip::MALFORMED);
        }
    }

    pub(super) fn oversized(&mut self) {
        if self.reading() {
            self.skip(skip::OVERSIZED);
        }
    }

    /// An element of the event array that is not an object (objects go to `element_in_place`).
    pub(super) fn element(&mut self, bytes: &[u8]) {
        if !self.reading() {
            return;
        }
        if bytes.first() == Some(&b'[') {
            self.array_elements += 1;
        }
        self.skip(skip::NOT_AN_OBJECT);
    }

    /// An element read in place from the chunk, if it ends inside `rest` and is well formed.
    pub(super) fn element_in_place(&mut self, rest: &[u8]) -> Result<usize, event::Stopped> {
        let mut ev = RawEvent::default();
        let n = parse_event(rest, &mut ev)?;
        if self.reading() {
            self.event(&ev);
        }
        Ok(n)
    }

    fn event(&mut self, ev: &RawEvent<'_>) {
        let slot = self.category(ev.cat);
        let c = &mut self.categories[slot];
        c.count += 1;
        let (cat, launch_flow, fwdbwd) = (c.id, c.launch_flow, c.fwdbwd);
        let Some(ph) = ev.ph else {
            return self.skip(skip::NO_PHASE);
        };
        match ph.0 {
            b"\"X\"" => self.complete(ev, cat),
            b"\"B\"" => self.begin(ev, cat),
            b"\"E\"" => self.end(ev),
            b"\"i\"" | b"\"I\"" | b"\"C\"" => self.instant(ev, cat),
            b"\"s\"" | b"\"t\"" | b"\"f\"" if launch_flow || fwdbwd => {
                self.flow(ev, launch_flow, ph.0 == b"\"s\"")
            }
            b"\"s\"" | b"\"t\"" | b"\"f\"" => {}
            b"\"M\"" => self.metadata(ev),
            _ => self.skip(skip::UNSUPPORTED_PHASE),
        }
    }

    fn complete(&mut self, ev: &RawEvent<'_>, cat: StrId) {
        let Some(ts) = ev.ts.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_TS);
        };
        let Some(dur) = ev.dur.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_DUR);
        };
        if dur < 0 {
            return self.skip(skip::NEGATIVE_DUR);
        }
        self.timed(ev, ts, dur, cat, false);
    }

    /// Adds a timed event with its details; returns its index.
    fn timed(&mut self, ev: &RawEvent<'_>, ts: i64, dur: i64, cat: StrId, instant: bool) -> u32 {
        let name_id = self.name(ev);
        let track = self.track(ev);
        let known = self.classify(cat, name_id, instant);
        if ev.args.concrete_inputs.is_some() {
            self.concrete_inputs = true;
        }
        let detail = self.detail(ev, track, known);
        self.push(Row {
            start: ts,
            dur,
            name: name_id,
            cat,
            kind: known.kind,
            track,
            detail,
        })
    }

    fn begin(&mut self, ev: &RawEvent<'_>, cat: StrId) {
        let Some(ts) = ev.ts.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_TS);
        };
        // The duration is unknown until the matching E; -1 marks it open.
        let index = self.timed(ev, ts, -1, cat, false);
        let track = self.events.track[index as usize];
        self.open.begins.entry(track).or_default().push(index);
    }

    fn end(&mut self, ev: &RawEvent<'_>) {
        let Some(ts) = ev.ts.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_TS);
        };
        let track = self.track(ev);
        self.close(track, ts);
    }

    /// An `E` at `ts` on `track`: ends the innermost open `B` there; without one, it is kept for
    /// a merge (`defer_ends`) or counted as unmatched.
    fn close(&mut self, track: u32, ts: i64) {
        match self.open.begins.get_mut(&track).and_then(Vec::pop) {
            Some(index) => {
                let start = self.events.start[index as usize];
                self.events.dur[index as usize] = (ts - start).max(0);
            }
            None if self.open.defer_ends => self.open.deferred_ends.push((track, ts)),
            None => self.skip(skip::UNMATCHED_END),
        }
    }

    fn instant(&mut self, ev: &RawEvent<'_>, cat: StrId) {
        let Some(ts) = ev.ts.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_TS);
        };
        self.timed(ev, ts, 0, cat, true);
    }

    /// A flow endpoint of a launch (`ac2g`, …) or forward→backward (`fwdbwd`) flow.
    fn flow(&mut self, ev: &RawEvent<'_>, launch: bool, start: bool) {
        let (Some(ts), Some(id)) = (ev.ts.and_then(event::micros_to_ns), ev.id) else {
            return self.skip(skip::BAD_TS);
        };
        let id = event::uint(id).unwrap_or_else(|| fingerprint(id));
        let track = self.track(ev);
        self.flows.push(FlowPoint {
            id,
            track,
            ts,
            launch,
            start,
        });
    }

    fn metadata(&mut self, ev: &RawEvent<'_>) {
        self.metadata_events += 1;
        let Some(value) = ev.args.name else {
            return;
        };
        let name = ev.name.map(event::text);
        let pid = self
            .strings
            .intern(&ev.pid.map(event::text).unwrap_or_default());
        let value = self.strings.intern(&event::text(value));
        match name.as_deref() {
            Some("process_name") => {
                self.process_names.insert(pid, value);
            }
            Some("thread_name") => {
                let tid = self
                    .strings
                    .intern(&ev.tid.map(event::text).unwrap_or_default());
                self.thread_names.insert((pid, tid), value);
            }
            _ => {}
        }
    }

    /// Closes the build: events still open (B without E) are dropped and counted.
    pub(super) fn close_open_events(&mut self) -> Vec<u32> {
        let mut unclosed: Vec<u32> = self.open.begins.drain().flat_map(|(_, v)| v).collect();
        unclosed.sort_unstable();
        for _ in &unclosed {
            self.skip(skip::UNMATCHED_BEGIN);
        }
        unclosed
    }
}

/// A stable 64-bit id for a non-numeric flow id.
fn fingerprint(raw: Raw<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    raw.0.hash(&mut h);
    h.finish()
}
