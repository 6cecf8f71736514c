//! Turns the framer's slices into model rows, one event at a time.
//!
//! Over 600 lines, on purpose (all code but one unit test of its byte comparison;
//! `tests/ingest_cases.rs` tests the rest): it is the one per-event dispatch from a raw event to
//! model rows (categories, tracks, names, complete,
//! begin/end, instant, flow and metadata events), every path writing the same `Builder` state.
//!
//! Everything here is per event and append-only; what needs the whole trace (sorting, nesting,
//! links, steps) happens once at the end, in `assemble`.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::event::{self, parse_event, Raw, RawEvent};
use crate::model::kind::{self, classify, classify_memcpy, EventKind, RuntimeClass};
use crate::model::{
    CollectiveDetail, CopyDetail, CopyDirection, Details, Events, HostMemory, KernelDetail,
    MemoryDetail, OpDetail, RuntimeDetail, StrId, Strings, Track, NONE,
};

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
pub enum Limit {
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
pub struct Limits {
    pub events: usize,
    pub strings: usize,
    pub tracks: usize,
    pub collectives: usize,
    /// The details' offsets: a record may start below it.
    pub detail_bytes: usize,
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
type Counts = [usize; 5];

impl Limits {
    /// The first limit that one more element could pass, with `counts` so far.
    fn passed(&self, counts: Counts) -> Option<Limit> {
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

/// A flow endpoint (`ph` `s`, `t` or `f`), bound to an event once all events are known.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct FlowPoint {
    pub id: u64,
    pub track: u32,
    pub ts: i64,
    pub launch: bool,
    pub start: bool,
}

/// The estimated rows of a column in the whole input, and how many may come before the next
/// estimate ([`Builder::make_room`]).
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub total: usize,
    pub margin: usize,
}

impl Room {
    /// The rows to add to a column of `len` rows that holds `capacity`: none while `margin`
    /// are free (or the column is empty); else room for the estimate and the margin, and at
    /// least an eighth more (an estimate that proved low).
    fn more(self, len: usize, capacity: usize) -> Option<usize> {
        if len == 0 || capacity - len >= self.margin {
            return None;
        }
        let total = self.total.saturating_add(self.total / 32);
        Some(total.max(len + len / 8).saturating_add(self.margin) - len)
    }
}

/// Raw top-level values kept for `assemble`.
#[derive(Default, Serialize, Deserialize)]
pub struct TopLevel {
    pub object: Option<bool>,
    pub keys: Vec<String>,
    #[serde(with = "json_text")]
    pub values: FxHashMap<String, serde_json::Value>,
}

/// JSON values serialized as their text: formats without self-description (bincode) cannot
/// read a `serde_json::Value` back.
mod json_text {
    use rustc_hash::FxHashMap;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        values: &FxHashMap<String, serde_json::Value>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_map(values.iter().map(|(k, v)| (k, v.to_string())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<FxHashMap<String, serde_json::Value>, D::Error> {
        FxHashMap::<String, String>::deserialize(deserializer)?
            .into_iter()
            .map(|(k, text)| Ok((k, serde_json::from_str(&text).map_err(D::Error::custom)?)))
            .collect()
    }
}

/// The top-level keys whose values are read.
pub fn wanted_key(key: &[u8]) -> bool {
    matches!(
        key,
        b"schemaVersion"
            | b"deviceProperties"
            | b"distributedInfo"
            | b"baseTimeNanoseconds"
            | b"displayTimeUnit"
            | b"traceName"
            | b"schema"
    )
}

/// One event's entry in each column.
struct Row {
    start: i64,
    dur: i64,
    name: StrId,
    cat: StrId,
    kind: EventKind,
    track: u32,
    detail: u32,
}

/// What an event's category and name say about it, cached per name.
#[derive(Clone, Copy)]
struct Classified {
    kind: EventKind,
    runtime: RuntimeClass,
    direction: CopyDirection,
    host_memory: HostMemory,
    /// Whether the op's `Concrete Inputs` are kept ([`crate::model::keeps_concrete_inputs`]).
    scalars: bool,
}

/// A category as written, with its count and what it tells about the trace.
#[derive(Serialize, Deserialize)]
pub struct Category {
    raw: Vec<u8>,
    pub id: StrId,
    pub count: u64,
    /// One Kineto writes.
    pub kineto: bool,
    /// One of the capitalised categories of PyTorch 1.8–1.10.
    pub capitalised: bool,
    launch_flow: bool,
    fwdbwd: bool,
}

/// Serializable: a block's builder travels between the web app's workers (`blocks`); the
/// caches of the last event's track, category and names are left out and start empty.
#[derive(Default, Serialize, Deserialize)]
pub struct Builder {
    pub strings: Strings,
    pub events: Events,
    /// Tracks as first seen; names and event ranges are filled in by `assemble`.
    pub tracks: Vec<Track>,
    track_ids: FxHashMap<(StrId, StrId), u32>,
    /// Recently seen tracks, by [`track_slot`].
    #[serde(skip, default = "empty_track_cache")]
    track_cache: Vec<CachedTrack>,
    /// The slot of the last event's track (most events are on the track of the one before).
    #[serde(skip)]
    last_track_slot: usize,
    /// Each event's details, at its `detail` offset.
    pub details: Details,
    pub collectives: Vec<CollectiveDetail>,
    pub flows: Vec<FlowPoint>,
    /// Open `B` events per track.
    open: FxHashMap<u32, Vec<u32>>,
    pub process_names: FxHashMap<StrId, StrId>,
    pub thread_names: FxHashMap<(StrId, StrId), StrId>,
    /// Every category seen, in order of appearance (few: a linear search is fastest).
    pub categories: Vec<Category>,
    #[serde(skip)]
    last_category: usize,
    #[serde(with = "skip::counts")]
    pub skipped: BTreeMap<&'static str, u64>,
    /// Elements of the event array, of any type.
    pub elements: u64,
    /// Elements that were themselves arrays (memory-timeline exports).
    pub array_elements: u64,
    pub metadata_events: u64,
    pub concrete_inputs: bool,
    /// Events read after replacing invalid UTF-8.
    pub repaired_utf8: u64,
    pub top: TopLevel,
    no_category: StrId,
    /// Recently seen names, by [`name_slot`].
    #[serde(skip, default = "empty_name_cache")]
    name_cache: Vec<StrId>,
    /// Indexed by name id: the category and phase kind last seen with it, and what they gave.
    #[serde(skip)]
    classified: Vec<Option<(StrId, bool, Classified)>>,
    /// Set on a builder of a later block of a parallel ingest: an `E` without its `B` may end
    /// a `B` of an earlier block, so it is kept in `deferred_ends` for [`Builder::merge`].
    defer_ends: bool,
    /// The `E` events (track, time) that found no `B`, in order, when `defer_ends`.
    deferred_ends: Vec<(u32, i64)>,
    /// What the model can number; the real limits unless a test sets smaller ones.
    #[serde(skip)]
    limits: Limits,
    /// Elements that can be read before the limits are checked again: none of them can pass
    /// one (0: check at the next).
    #[serde(skip)]
    unchecked: usize,
    /// The limit the next element could have passed, where reading stopped.
    stopped: Option<Limit>,
    /// Elements left unread after the stop.
    pub beyond_limit: u64,
}

/// A track and the `pid` and `tid` as written in its events.
#[derive(Clone, Default)]
struct CachedTrack {
    pid: Vec<u8>,
    tid: Vec<u8>,
    track: u32,
}

fn empty_track_cache() -> Vec<CachedTrack> {
    vec![
        CachedTrack {
            track: NONE,
            ..CachedTrack::default()
        };
        TRACK_CACHE_SLOTS
    ]
}

fn empty_name_cache() -> Vec<StrId> {
    vec![NONE; NAME_CACHE_SLOTS]
}

impl Builder {
    pub fn new() -> Builder {
        let mut b = Builder::default();
        b.no_category = b.strings.intern("");
        b.track_cache = empty_track_cache();
        b.name_cache = empty_name_cache();
        b
    }

    /// A builder for a later block of a parallel ingest (see `defer_ends`).
    pub fn resumed() -> Builder {
        Builder {
            defer_ends: true,
            ..Builder::new()
        }
    }

    /// Appends what `next`, the builder of the input right after this one's, read: the result is
    /// the builder one pass over both inputs would have made (same string ids, track ids, event
    /// and detail order; `E` events of `next` end this builder's open `B` events).
    pub fn merge(&mut self, next: Builder) {
        if self.stopped.is_some() {
            self.beyond_limit += next.elements + next.beyond_limit;
            self.top.keys.extend(next.top.keys);
            self.top.values.extend(next.top.values);
            return;
        }
        let ids: Vec<StrId> = next
            .strings
            .iter()
            .map(|s| self.strings.intern(s))
            .collect();
        let id = |s: StrId| ids[s as usize];
        let tracks: Vec<u32> = next
            .tracks
            .iter()
            .map(|t| {
                let new = self.tracks.len() as u32;
                let at = *self.track_ids.entry((id(t.pid), id(t.tid))).or_insert(new);
                if at == new {
                    self.tracks.push(Track {
                        pid: id(t.pid),
                        tid: id(t.tid),
                        ..t.clone()
                    });
                } else if t.gpu && !self.tracks[at as usize].gpu {
                    let mine = &mut self.tracks[at as usize];
                    (mine.gpu, mine.device, mine.stream) = (true, t.device, t.stream);
                }
                at
            })
            .collect();
        let first_event = self.events.len() as u32;
        for (track, ts) in next.deferred_ends {
            self.close(tracks[track as usize], ts);
        }
        let mut open: Vec<(u32, Vec<u32>)> = next.open.into_iter().collect();
        open.sort_unstable();
        for (track, stack) in open {
            self.open
                .entry(tracks[track as usize])
                .or_default()
                .extend(stack.into_iter().map(|i| i + first_event));
        }
        let collectives = self.collectives.len() as u32;
        let more = |c: Option<u32>| c.map(|c| c + collectives);
        // Column by column: each a tight loop. Details are written again, in event order, with
        // this builder's string and collective ids: the arena one pass would have made.
        let (mine, e) = (&mut self.events, next.events);
        mine.start.extend_from_slice(&e.start);
        mine.dur.extend_from_slice(&e.dur);
        mine.name.extend(e.name.iter().map(|&n| id(n)));
        mine.cat.extend(e.cat.iter().map(|&c| id(c)));
        mine.track
            .extend(e.track.iter().map(|&t| tracks[t as usize]));
        let (details, theirs) = (&mut self.details, &next.details);
        mine.detail
            .extend(e.detail.iter().zip(&e.kind).map(|(&d, &kind)| {
                if d == NONE {
                    return NONE;
                }
                match kind {
                    EventKind::GpuKernel | EventKind::Collective => {
                        let k = theirs.kernel(d);
                        details.push_kernel(&KernelDetail {
                            collective: more(k.collective),
                            ..k
                        })
                    }
                    EventKind::Memcpy | EventKind::Memset => details.push_copy(&theirs.copy(d)),
                    EventKind::RuntimeCall => details.push_runtime(&theirs.runtime(d)),
                    EventKind::CpuOp | EventKind::UserAnnotation | EventKind::ProfilerStep => {
                        let o = theirs.op(d);
                        details.push_op(&OpDetail {
                            input_dims: o.input_dims.map(id),
                            input_types: o.input_types.map(id),
                            concrete_inputs: o.concrete_inputs.map(id),
                            collective: more(o.collective),
                            ..o
                        })
                    }
                    EventKind::Memory => details.push_memory(&theirs.memory(d)),
                    EventKind::GpuUserAnnotation
                    | EventKind::GpuSync
                    | EventKind::PythonFunction
                    | EventKind::Profiler
                    | EventKind::Other => NONE,
                }
            }));
        mine.kind.extend_from_slice(&e.kind);
        self.collectives
            .extend(next.collectives.into_iter().map(|c| CollectiveDetail {
                name: c.name.map(id),
                dtype: c.dtype.map(id),
                process_group: c.process_group.map(id),
                ..c
            }));
        self.flows.extend(next.flows.into_iter().map(|f| FlowPoint {
            track: tracks[f.track as usize],
            ..f
        }));
        for (pid, name) in next.process_names {
            self.process_names.insert(id(pid), id(name));
        }
        for ((pid, tid), name) in next.thread_names {
            self.thread_names.insert((id(pid), id(tid)), id(name));
        }
        for c in next.categories {
            match self.categories.iter_mut().find(|mine| mine.raw == c.raw) {
                Some(mine) => mine.count += c.count,
                None => self.categories.push(Category { id: id(c.id), ..c }),
            }
        }
        for (reason, n) in next.skipped {
            *self.skipped.entry(reason).or_default() += n;
        }
        self.elements += next.elements;
        self.array_elements += next.array_elements;
        self.metadata_events += next.metadata_events;
        self.concrete_inputs |= next.concrete_inputs;
        self.repaired_utf8 += next.repaired_utf8;
        self.top.object = self.top.object.or(next.top.object);
        self.top.keys.extend(next.top.keys);
        self.top.values.extend(next.top.values);
        self.unchecked = 0;
    }

    /// Takes what `first`, the builder of the input's first block, read, keeping these limits.
    pub fn replace_with(&mut self, first: Builder) {
        *self = Builder {
            limits: self.limits,
            unchecked: 0,
            ..first
        };
    }

    /// Whether [`Builder::merge`] of `next` gives what one pass gives: this builder stopped
    /// already, or it cannot reach a limit within `next` (ids are counted as if none repeated).
    pub fn can_take(&self, next: &Builder) -> bool {
        let (mine, theirs) = (self.counts(), next.counts());
        self.stopped.is_some()
            || next.stopped.is_none()
                && (self.limits)
                    .passed(std::array::from_fn(|i| mine[i] + theirs[i]))
                    .is_none()
    }

    fn counts(&self) -> Counts {
        [
            self.events.len(),
            self.strings.len(),
            self.tracks.len(),
            self.collectives.len(),
            self.details.bytes().0,
        ]
    }

    /// Why reading stopped early, for the user, where it did.
    pub fn limit_warning(&self) -> Option<String> {
        let limit = self.stopped?;
        Some(format!(
            "the trace is too large for the model: it was read up to element {} ({} events), and the {} elements after it were left out, as in a cut file, because the model numbers {} with 32-bit ids (at most {}). Split the trace, or profile fewer steps.",
            self.elements,
            self.events.len(),
            self.beyond_limit,
            limit.what(),
            self.limits.limit(limit),
        ))
    }

    /// Makes room for the events and flow points still to come, so that their columns grow to
    /// their final size once instead of doubling (a column that doubles holds up to twice its
    /// rows, and while it moves both copies exist): `events` and `flows` estimate each in the
    /// whole input and say how many may arrive before the next call. The details' bytes are
    /// estimated from the events', in the proportion so far. Room that memory cannot give (a
    /// trace too large for a wasm32 worker) is not taken: the columns then grow as they fill,
    /// and the worker stops reading at its memory limit, as before.
    pub fn make_room(&mut self, events: Room, flows: Room) {
        let len = self.events.len();
        if let Some(rows) = events.more(len, self.events.capacity()) {
            self.events.try_reserve_exact(rows);
        }
        let (details, capacity) = self.details.bytes();
        let per_event = |n: usize| {
            let n = n as u128 * details as u128 / len.max(1) as u128;
            usize::try_from(n).unwrap_or(usize::MAX)
        };
        let details_room = Room {
            total: per_event(events.total),
            margin: per_event(events.margin),
        };
        if let Some(bytes) = details_room.more(details, capacity) {
            self.details.try_reserve_exact(bytes);
        }
        if let Some(more) = flows.more(self.flows.len(), self.flows.capacity()) {
            let _ = self.flows.try_reserve_exact(more);
        }
    }

    /// Whether elements are still read: false from the first that might pass a limit on.
    #[inline(always)]
    fn reading(&mut self) -> bool {
        if self.unchecked == 0 {
            return self.check_limits();
        }
        self.unchecked -= 1;
        self.elements += 1;
        true
    }

    /// [`Builder::reading`] where the limits are checked: at most once per many elements,
    /// and at every element from the first that might pass one.
    #[cold]
    fn check_limits(&mut self) -> bool {
        if self.stopped.is_none() {
            let counts = self.counts();
            self.stopped = self.limits.passed(counts);
            if self.stopped.is_none() {
                self.unchecked = self.limits.unchecked(counts);
            }
        }
        if self.stopped.is_some() {
            self.beyond_limit += 1;
            return false;
        }
        self.elements += 1;
        true
    }

    fn skip(&mut self, reason: &'static str) {
        *self.skipped.entry(reason).or_default() += 1;
    }

    /// An element the reader found malformed; the framer decided where it ends.
    pub fn malformed(&mut self) {
        if self.reading() {
            self.skip(skip::MALFORMED);
        }
    }

    pub fn oversized(&mut self) {
        if self.reading() {
            self.skip(skip::OVERSIZED);
        }
    }

    pub fn top_value(&mut self, key: &[u8], bytes: &[u8]) {
        if let Ok(v) = serde_json::from_slice(bytes) {
            self.top
                .values
                .insert(String::from_utf8_lossy(key).into_owned(), v);
        }
    }

    /// An element of the event array that is not an object (objects go to `element_in_place`).
    pub fn element(&mut self, bytes: &[u8]) {
        if !self.reading() {
            return;
        }
        if bytes.first() == Some(&b'[') {
            self.array_elements += 1;
        }
        self.skip(skip::NOT_AN_OBJECT);
    }

    /// An element read in place from the chunk, if it ends inside `rest` and is well formed.
    pub fn element_in_place(&mut self, rest: &[u8]) -> Result<usize, event::Stopped> {
        let mut ev = RawEvent::default();
        let n = parse_event(rest, &mut ev)?;
        if self.reading() {
            self.event(&ev);
        }
        Ok(n)
    }

    /// Events whose category is one Kineto writes.
    pub fn kineto_events(&self) -> u64 {
        self.categories
            .iter()
            .filter(|c| c.kineto)
            .map(|c| c.count)
            .sum()
    }

    /// Events in the capitalised categories of PyTorch 1.8–1.10.
    pub fn capitalised_events(&self) -> u64 {
        self.categories
            .iter()
            .filter(|c| c.capitalised)
            .map(|c| c.count)
            .sum()
    }

    fn category(&mut self, raw: Option<Raw<'_>>) -> usize {
        let bytes = raw.map_or(&b""[..], |r| r.0);
        if self
            .categories
            .get(self.last_category)
            .is_some_and(|c| same(&c.raw, bytes))
        {
            return self.last_category;
        }
        let slot = match self.categories.iter().position(|c| c.raw == bytes) {
            Some(slot) => slot,
            None => {
                let text = raw.map(event::text).unwrap_or_default();
                let id = if text.is_empty() {
                    self.no_category
                } else {
                    self.strings.intern(&text)
                };
                self.categories.push(Category {
                    raw: bytes.to_vec(),
                    id,
                    count: 0,
                    kineto: kind::is_kineto_category(&text),
                    capitalised: matches!(text.as_ref(), "Operator" | "Kernel" | "Runtime"),
                    launch_flow: kind::is_launch_flow_category(&text),
                    fwdbwd: text == "fwdbwd",
                });
                self.categories.len() - 1
            }
        };
        self.last_category = slot;
        slot
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

    /// The track of an event's `pid` and `tid`. Most events are on the track of the one before,
    /// and events of a few tracks interleave: a small direct-mapped cache of them, checked by
    /// comparing bytes as written, skips the text and the hash maps.
    fn track(&mut self, ev: &RawEvent<'_>) -> u32 {
        let pid = ev.pid.map_or(&b""[..], |r| r.0);
        let tid = ev.tid.map_or(&b""[..], |r| r.0);
        let is = |c: &CachedTrack| c.track != NONE && same(&c.pid, pid) && same(&c.tid, tid);
        let last = &self.track_cache[self.last_track_slot];
        if is(last) {
            return last.track;
        }
        let slot = track_slot(pid, tid);
        self.last_track_slot = slot;
        let cached = &self.track_cache[slot];
        if is(cached) {
            return cached.track;
        }
        let pid_id = self
            .strings
            .intern(&ev.pid.map(event::text).unwrap_or_default());
        let tid_id = self
            .strings
            .intern(&ev.tid.map(event::text).unwrap_or_default());
        let next = self.tracks.len() as u32;
        let id = *self.track_ids.entry((pid_id, tid_id)).or_insert(next);
        if id == next {
            self.tracks.push(Track {
                pid: pid_id,
                tid: tid_id,
                gpu: false,
                device: None,
                stream: None,
                process_name: None,
                thread_name: None,
                events: 0..0,
            });
        }
        let cached = &mut self.track_cache[slot];
        cached.pid.clear();
        cached.pid.extend_from_slice(pid);
        cached.tid.clear();
        cached.tid.extend_from_slice(tid);
        cached.track = id;
        id
    }

    fn name(&mut self, ev: &RawEvent<'_>) -> StrId {
        match ev.name {
            Some(raw) => {
                let content = raw.0.get(1..raw.0.len().saturating_sub(1)).unwrap_or(&[]);
                self.intern_cached(content, || {
                    let name = event::text(raw);
                    let repaired = matches!(name, std::borrow::Cow::Owned(_))
                        && std::str::from_utf8(raw.0).is_err();
                    (name, repaired)
                })
            }
            None => self.no_category,
        }
    }

    /// Interns the text that `bytes` stand for. Most names and argument texts repeat: a small
    /// direct-mapped cache, checked by comparing bytes with the interned text, skips UTF-8
    /// validation, unescaping and the hash map for them. `make` gives the text on a miss, and
    /// whether invalid UTF-8 had to be replaced.
    fn intern_cached<'b>(
        &mut self,
        bytes: &[u8],
        make: impl FnOnce() -> (std::borrow::Cow<'b, str>, bool),
    ) -> StrId {
        let slot = name_slot(bytes);
        let cached = self.name_cache[slot];
        if cached != NONE && same(self.strings.get(cached).as_bytes(), bytes) {
            return cached;
        }
        let (text, repaired) = make();
        if repaired {
            self.repaired_utf8 += 1;
        }
        let id = self.strings.intern(&text);
        self.name_cache[slot] = id;
        id
    }

    /// Interns a raw JSON fragment (`Input Dims`, `Input type`) as written.
    fn intern_raw(&mut self, raw: Raw<'_>) -> StrId {
        self.intern_cached(raw.0, || (event::raw_text(raw), false))
    }

    fn push(&mut self, row: Row) -> u32 {
        let e = &mut self.events;
        let index = e.start.len() as u32;
        e.start.push(row.start);
        e.dur.push(row.dur);
        e.name.push(row.name);
        e.cat.push(row.cat);
        e.kind.push(row.kind);
        e.track.push(row.track);
        e.detail.push(row.detail);
        index
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
        let Classified {
            kind,
            runtime: runtime_class,
            direction,
            host_memory,
            scalars,
        } = self.classify(cat, name_id, instant);
        let args = &ev.args;
        if args.concrete_inputs.is_some() {
            self.concrete_inputs = true;
        }
        let detail = match kind {
            EventKind::GpuKernel | EventKind::Collective => {
                let collective = self.collective(args);
                let k = KernelDetail {
                    device: args.device.and_then(event::int),
                    stream: args.stream.and_then(event::int),
                    correlation: args.correlation.and_then(event::uint),
                    grid: args.grid.and_then(event::dim3),
                    block: args.block.and_then(event::dim3),
                    registers_per_thread: args.registers.and_then(event::uint).map(|v| v as u32),
                    shared_memory: args.shared_memory.and_then(event::uint),
                    occupancy_pct: args.occupancy.and_then(event::float),
                    collective,
                };
                self.mark_gpu(track, ev, k.device, k.stream);
                self.details.push_kernel(&k)
            }
            EventKind::Memcpy | EventKind::Memset => {
                let c = CopyDetail {
                    device: args.device.and_then(event::int),
                    stream: args.stream.and_then(event::int),
                    correlation: args.correlation.and_then(event::uint),
                    bytes: args.bytes.and_then(event::uint),
                    bandwidth_gbps: args.bandwidth.and_then(event::float),
                    direction,
                    host_memory,
                };
                self.mark_gpu(track, ev, c.device, c.stream);
                self.details.push_copy(&c)
            }
            EventKind::GpuUserAnnotation | EventKind::GpuSync => {
                self.mark_gpu(
                    track,
                    ev,
                    args.device.and_then(event::int),
                    args.stream.and_then(event::int),
                );
                NONE
            }
            EventKind::RuntimeCall => self.details.push_runtime(&RuntimeDetail {
                class: runtime_class,
                correlation: args.correlation.and_then(event::uint),
            }),
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::ProfilerStep => {
                let collective = self.collective(args);
                let op = OpDetail {
                    external_id: args.external_id.and_then(event::uint),
                    sequence_number: args.sequence_number.and_then(event::uint),
                    input_dims: args.input_dims.map(|r| self.intern_raw(r)),
                    input_types: args.input_types.map(|r| self.intern_raw(r)),
                    concrete_inputs: args
                        .concrete_inputs
                        .filter(|_| scalars)
                        .map(|r| self.intern_raw(r)),
                    collective,
                };
                self.details.push_op(&op)
            }
            EventKind::Memory => match args.alloc_bytes.and_then(event::int) {
                Some(bytes) => self.details.push_memory(&MemoryDetail {
                    bytes,
                    total_allocated: args.total_allocated.and_then(event::int),
                    total_reserved: args.total_reserved.and_then(event::int),
                    device_type: args.device_type.and_then(event::int),
                    device_id: args.device_id.and_then(event::int),
                }),
                None => NONE,
            },
            EventKind::PythonFunction | EventKind::Profiler | EventKind::Other => NONE,
        };
        self.push(Row {
            start: ts,
            dur,
            name: name_id,
            cat,
            kind,
            track,
            detail,
        })
    }

    fn classify(&mut self, cat: StrId, name_id: StrId, instant: bool) -> Classified {
        let i = name_id as usize;
        if let Some(Some((c, inst, known))) = self.classified.get(i) {
            if *c == cat && *inst == instant {
                return *known;
            }
        }
        let name = self.strings.get(name_id);
        let kind = classify(self.strings.get(cat), name, instant);
        let runtime = match kind {
            EventKind::RuntimeCall => RuntimeClass::of(name),
            _ => RuntimeClass::Other,
        };
        let (direction, host_memory) = match kind {
            EventKind::Memcpy => classify_memcpy(name),
            _ => (CopyDirection::Unknown, HostMemory::NotApplicable),
        };
        let known = Classified {
            kind,
            runtime,
            direction,
            host_memory,
            scalars: crate::model::keeps_concrete_inputs(name),
        };
        if self.classified.len() <= i {
            self.classified.resize(i + 1, None);
        }
        self.classified[i] = Some((cat, instant, known));
        known
    }

    fn collective(&mut self, args: &event::RawArgs<'_>) -> Option<u32> {
        let name = args.collective_name?;
        let c = CollectiveDetail {
            name: Some(self.strings.intern(&event::text(name))),
            in_elements: args.in_nelems.and_then(event::uint),
            out_elements: args.out_nelems.and_then(event::uint),
            group_size: args.group_size.and_then(event::uint),
            dtype: args.dtype.map(|r| self.strings.intern(&event::text(r))),
            process_group: args
                .process_group
                .map(|r| self.strings.intern(&event::text(r))),
        };
        self.collectives.push(c);
        Some(self.collectives.len() as u32 - 1)
    }

    fn mark_gpu(
        &mut self,
        track: u32,
        ev: &RawEvent<'_>,
        device: Option<i64>,
        stream: Option<i64>,
    ) {
        let t = &mut self.tracks[track as usize];
        if !t.gpu {
            t.gpu = true;
            t.device = device.or_else(|| ev.pid.and_then(event::int));
            t.stream = stream.or_else(|| ev.tid.and_then(event::int));
        }
    }

    fn begin(&mut self, ev: &RawEvent<'_>, cat: StrId) {
        let Some(ts) = ev.ts.and_then(event::micros_to_ns) else {
            return self.skip(skip::BAD_TS);
        };
        // The duration is unknown until the matching E; -1 marks it open.
        let index = self.timed(ev, ts, -1, cat, false);
        let track = self.events.track[index as usize];
        self.open.entry(track).or_default().push(index);
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
        match self.open.get_mut(&track).and_then(Vec::pop) {
            Some(index) => {
                let start = self.events.start[index as usize];
                self.events.dur[index as usize] = (ts - start).max(0);
            }
            None if self.defer_ends => self.deferred_ends.push((track, ts)),
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
    pub fn close_open_events(&mut self) -> Vec<u32> {
        let mut unclosed: Vec<u32> = self.open.drain().flat_map(|(_, v)| v).collect();
        unclosed.sort_unstable();
        for _ in &unclosed {
            self.skip(skip::UNMATCHED_BEGIN);
        }
        unclosed
    }
}

const NAME_CACHE_SLOTS: usize = 4096;
const TRACK_CACHE_SLOTS: usize = 64;

/// A cheap hash of a name's length and its first and last eight bytes.
fn cheap_hash(name: &[u8]) -> u64 {
    let n = name.len();
    let (head, tail) = match (name.first_chunk::<8>(), name.last_chunk::<8>()) {
        (Some(head), Some(tail)) => (u64::from_le_bytes(*head), u64::from_le_bytes(*tail)),
        _ => {
            let word = name.iter().fold(0u64, |h, &c| (h << 8) | u64::from(c));
            (word, word)
        }
    };
    (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn name_slot(name: &[u8]) -> usize {
    (cheap_hash(name) >> 52) as usize & (NAME_CACHE_SLOTS - 1)
}

fn track_slot(pid: &[u8], tid: &[u8]) -> usize {
    let h = (cheap_hash(pid) ^ cheap_hash(tid).rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58) as usize & (TRACK_CACHE_SLOTS - 1)
}

/// Whether two byte strings are equal. Most that are compared per event (categories, pids,
/// tids, names) are short: up to 16 bytes they are compared inline as two overlapping words
/// (of 1, 2, 4 or 8 bytes), without calling memcmp.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    fn ends<const N: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<N>() == b.first_chunk::<N>() && a.last_chunk::<N>() == b.last_chunk::<N>()
    }
    match a.len() {
        n if n != b.len() => false,
        0 => true,
        1 => a[0] == b[0],
        2..4 => ends::<2>(a, b),
        4..8 => ends::<4>(a, b),
        8..=16 => ends::<8>(a, b),
        _ => a == b,
    }
}

/// A stable 64-bit id for a non-numeric flow id.
fn fingerprint(raw: Raw<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    raw.0.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::super::blocks::{self, Start};
    use super::super::framer::Framer;
    use super::*;

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
        b.limits = limits;
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
            assert_eq!(one.stopped, Some(limit));
            // Every event before the stop, as read without a limit; the top level still read.
            assert_eq!(one.events.start, whole.events.start[..kept]);
            let names = |b: &Builder| -> Vec<String> {
                let names = b.events.name.iter();
                names.map(|&s| b.strings.get(s).to_string()).collect()
            };
            assert_eq!(names(&one), names(&whole)[..kept]);
            assert_eq!(one.elements + one.beyond_limit, whole.elements);
            assert!(one.top.values.contains_key("traceName"));
            let warning = one.limit_warning().expect("a warning");
            assert!(
                warning.contains(&format!("up to element {} ({kept} events)", one.elements))
                    && warning.contains(&format!("at most {}", one.limits.limit(limit)))
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

    #[test]
    fn byte_strings_of_every_length_are_equal_only_when_every_byte_is() {
        for n in 0..40u8 {
            let a: Vec<u8> = (0..n).map(|i| b'a' + i % 26).collect();
            assert!(same(&a, &a.clone()), "{n}");
            for at in 0..a.len() {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same(&a, &b), "{n} bytes, differing at {at}");
            }
            assert!(!same(&a, &a[..a.len().saturating_sub(1)]) || n == 0);
        }
    }
}
