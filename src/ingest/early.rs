//! An early look at a large trace: its first steps, read from a part of the file. Kineto writes
//! a trace's events in runs (each host thread's operators; the runtime calls and GPU records),
//! each in time order, so the events of the first steps sit at the start of every run, not at
//! the start of the file. The caller reads [`probes`] (small slices spread over the file);
//! [`plan`] finds the runs from the first timestamp in each probe and the byte ranges that hold
//! every run's events up to one time (and a margin past it), within a budget; the caller reads those ranges, and
//! [`early`] splices them into one JSON document, reads it and keeps the steps it holds whole.
//! What it finds is what those steps say; the whole file's analysis replaces it. Plain JSON
//! only: a gzip stream cannot be read from the middle.

use std::ops::Range;

use memchr::memchr;
use serde::Deserialize;

use super::event::is_ws;
use super::{Ingest, IngestOptions, Ingested, GZIP_MAGIC};

/// Probes per file, and the bytes of each.
pub const PROBES: u64 = 64;
pub const PROBE_BYTES: u64 = 32 << 10;
/// Files under this size get no early look: reading them whole is about as fast.
pub const MIN_FILE_BYTES: u64 = 64 << 20;
/// The most an early look reads: this share of the file (1/8), at most [`MAX_READ`].
const SHARE: u64 = 8;
const MAX_READ: u64 = 128 << 20;
/// A drop in time between two probes of more than this share of the trace's span starts a run.
const NEW_RUN: f64 = 0.25;
/// Each run is read past the cut by this share of the span, at most [`MARGIN_US`], for the
/// records written late (CUPTI's buffers, a GPU running behind its host).
const MARGIN: f64 = 0.05;
const MARGIN_US: f64 = 200_000.0;
/// Steps held whole that an early look needs (a trace with no steps has one, its whole span).
const MIN_STEPS: usize = 2;

/// Whether a file of `len` bytes that starts with `head` can have an early look: large, and
/// not gzip.
pub fn worth(len: u64, head: &[u8]) -> bool {
    len >= MIN_FILE_BYTES && !head.starts_with(&GZIP_MAGIC)
}

/// Where to read the probes of a file of `len` bytes (the first at its start: its head).
pub fn probes(len: u64) -> Vec<Range<u64>> {
    (0..PROBES)
        .map(|k| {
            let at = k * len / PROBES;
            at..(at + PROBE_BYTES).min(len)
        })
        .collect()
}

/// Where a slice starts an element of an array: a `{` after a `,` or `[` (whitespace between).
fn starts_element(bytes: &[u8], p: usize) -> bool {
    bytes[p] == b'{'
        && bytes[..p]
            .iter()
            .rposition(|&b| !is_ws(b))
            .is_some_and(|q| matches!(bytes[q], b',' | b'['))
}

/// The timestamp (µs, as written) of the first complete event (`"ph": "X"`) whole in `bytes`.
pub fn first_timestamp(bytes: &[u8]) -> Option<f64> {
    #[derive(Deserialize)]
    struct Stub {
        ph: Option<String>,
        ts: Option<serde_json::Value>,
    }
    let mut i = 0;
    while let Some(p) = memchr(b'{', &bytes[i..]).map(|p| p + i) {
        i = p + 1;
        if !starts_element(bytes, p) {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_slice(&bytes[p..]).into_iter::<Stub>();
        let Some(Ok(stub)) = stream.next() else {
            continue;
        };
        // Past the whole element: the objects nested in it are no events.
        i = p + stream.byte_offset();
        let ts = stub
            .ts
            .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()));
        if let (Some("X"), Some(ts)) = (stub.ph.as_deref(), ts.filter(|t| t.is_finite())) {
            return Some(ts);
        }
    }
    None
}

/// What an early look reads: byte ranges (sorted, apart), and the time (µs as written) up to
/// which they hold every run's events.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub ranges: Vec<Range<u64>>,
    pub until_us: f64,
    /// The file's length.
    pub len: u64,
}

impl Plan {
    /// Bytes the plan reads.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }
}

/// A run of probes in time order: `(offset, ts)` each.
type Run = Vec<(u64, f64)>;

/// The ranges that read every run up to `cut` µs: a run from the probe before its first
/// (the file's start for the first run) to its first probe at or past `cut`, else to the next
/// run's first probe (the file's end for the last); overlapping ranges merged.
fn ranges_until(runs: &[Run], cut: f64, len: u64) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let mut before = 0;
    for (k, run) in runs.iter().enumerate() {
        let next = runs.get(k + 1).map_or(len, |r| r[0].0);
        let end = run.iter().find(|p| p.1 >= cut).map_or(next, |p| p.0);
        let range = before..end.max(before);
        before = run.last().map_or(before, |p| p.0);
        match ranges.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => ranges.push(range),
        }
    }
    ranges.retain(|r| r.end > r.start);
    ranges
}

/// The byte ranges to read for an early look at a file of `len` bytes whose probes (at their
/// offsets) began with the given timestamps; `None` where the file is small, its probes show
/// no time, or no cut fits the budget.
pub fn plan(len: u64, probed: &[(u64, Option<f64>)]) -> Option<Plan> {
    if len < MIN_FILE_BYTES {
        return None;
    }
    let timed: Vec<(u64, f64)> = probed
        .iter()
        .filter_map(|&(at, ts)| Some((at, ts?)))
        .collect();
    let lo = timed.iter().map(|p| p.1).reduce(f64::min)?;
    let hi = timed.iter().map(|p| p.1).reduce(f64::max)?;
    let span = hi - lo;
    if span <= 0.0 {
        return None;
    }
    let mut runs: Vec<Run> = Vec::new();
    for &(at, ts) in &timed {
        match runs.last_mut() {
            Some(run) if ts >= run.last().map_or(ts, |p| p.1) - NEW_RUN * span => {
                run.push((at, ts))
            }
            _ => runs.push(vec![(at, ts)]),
        }
    }
    let budget = (len / SHARE).min(MAX_READ);
    let mut cuts: Vec<f64> = timed.iter().map(|p| p.1).filter(|&t| t > lo).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    cuts.into_iter()
        .map(|until| {
            let ranges = ranges_until(&runs, until + (MARGIN * span).min(MARGIN_US), len);
            Plan {
                ranges,
                until_us: until,
                len,
            }
        })
        .take_while(|p| p.bytes() <= budget)
        .last()
}

/// The bytes of a piece held back until it ends, for finding where its last element starts:
/// an element longer than this at a piece's end gives no early look.
const HOLD: usize = 4 << 20;

/// The plan's ranges, read in order, spliced into one document as their bytes arrive and read
/// as they are: the first from the file's start, each other from its first element, each but
/// one that reaches the file's end cut before its last element (which may be cut short); the
/// array and the object closed. It holds a piece's start until its first element shows and
/// its last [`HOLD`] bytes until it ends: never the document.
pub struct Splice<'p> {
    plan: &'p Plan,
    ingest: Ingest,
    /// The piece being read, whether its first element was found, and its bytes not yet read.
    piece: usize,
    started: bool,
    held: Vec<u8>,
}

impl<'p> Splice<'p> {
    pub fn new(plan: &'p Plan) -> Splice<'p> {
        Splice {
            plan,
            ingest: Ingest::new(IngestOptions::default()),
            piece: 0,
            started: false,
            held: Vec::new(),
        }
    }

    /// Whether the piece being read reaches the file's end.
    fn ends_file(&self) -> bool {
        self.plan.ranges.get(self.piece).map(|r| r.end) == Some(self.plan.len)
    }

    fn read(&mut self, bytes: &[u8]) -> Option<()> {
        self.ingest.feed(bytes).ok()
    }

    /// The next bytes of the piece being read. `None` where the document cannot be made.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<()> {
        self.held.extend_from_slice(bytes);
        if !self.started {
            let range = self.plan.ranges.get(self.piece)?;
            let start = if self.piece == 0 {
                (range.start == 0).then_some(0)?
            } else {
                let Some(p) = (0..self.held.len()).find(|&p| starts_element(&self.held, p)) else {
                    return Some(());
                };
                self.read(b",\n")?;
                p
            };
            self.held.drain(..start);
            self.started = true;
        }
        if self.ends_file() || self.held.len() > 2 * HOLD {
            let ready = self.held.len() - if self.ends_file() { 0 } else { HOLD };
            self.ingest.feed(&self.held[..ready]).ok()?;
            self.held.drain(..ready);
        }
        Some(())
    }

    /// The piece being read is whole: read up to the `,` before its last element that starts
    /// in it (all of it, where it reaches the file's end).
    pub fn end_piece(&mut self) -> Option<()> {
        if !self.started {
            return None;
        }
        let held = std::mem::take(&mut self.held);
        let end = if self.ends_file() {
            held.len()
        } else {
            let last = (1..held.len())
                .rev()
                .find(|&p| held[p] == b'{' && starts_element(&held, p))?;
            held[..last].iter().rposition(|&b| b == b',')?
        };
        self.read(&held[..end])?;
        self.piece += 1;
        self.started = false;
        Some(())
    }

    /// The early look the pieces give: `None` where the document does not read, or holds
    /// fewer than two whole steps.
    pub fn finish(mut self) -> Option<Early> {
        if self.piece != self.plan.ranges.len() {
            return None;
        }
        if self.plan.ranges.last().map(|r| r.end) != Some(self.plan.len) {
            self.read(b"\n]}")?;
        }
        let mut ingested = self.ingest.finish().ok()?;
        let t = &mut ingested.trace;
        let until = (self.plan.until_us * 1e3) as i64;
        t.steps.retain(|s| s.end <= until);
        (t.steps.len() >= MIN_STEPS).then_some(Early {
            ingested,
            read: self.plan.bytes(),
            len: self.plan.len,
        })
    }
}

/// An early look: the trace its document holds, with only the steps it holds whole.
pub struct Early {
    pub ingested: Ingested,
    /// Bytes read (probes aside) of the file's.
    pub read: u64,
    pub len: u64,
}

impl Early {
    /// The numbers of the first and last step it holds whole (it holds at least two).
    pub fn step_range(&self) -> (i64, i64) {
        let steps = &self.ingested.trace.steps;
        (steps[0].number, steps[steps.len() - 1].number)
    }
}

/// Bytes of a range read at a time.
#[cfg(not(target_arch = "wasm32"))]
const SLICE: u64 = 4 << 20;

/// Native: the early look at the file at `path`, read with positioned reads a slice at a time; `None` where it
/// has none (small, compressed, no whole steps in the budget).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_early(path: &std::path::Path) -> std::io::Result<Option<Early>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let read = |r: &Range<u64>| -> std::io::Result<Vec<u8>> {
        let mut bytes = vec![0; (r.end - r.start) as usize];
        file.read_exact_at(&mut bytes, r.start)?;
        Ok(bytes)
    };
    let mut probed = Vec::new();
    for r in probes(len) {
        let bytes = read(&r)?;
        if r.start == 0 && !worth(len, &bytes) {
            return Ok(None);
        }
        probed.push((r.start, first_timestamp(&bytes)));
    }
    let Some(plan) = plan(len, &probed) else {
        return Ok(None);
    };
    let mut splice = Splice::new(&plan);
    for r in &plan.ranges {
        for at in (r.start..r.end).step_by(SLICE as usize) {
            let bytes = read(&(at..r.end.min(at + SLICE)))?;
            if splice.feed(&bytes).is_none() {
                return Ok(None);
            }
        }
        if splice.end_piece().is_none() {
            return Ok(None);
        }
    }
    Ok(splice.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_gives_its_first_complete_event_s_time_whatever_comes_before() {
        // Cut mid-event, a metadata event, a time that is no number, nested objects: skipped.
        let probe = br#"ame": "x", "ts": 1},
  {"ph": "M", "ts": 0, "args": [{"ph": "X", "ts": 3}]},
  {"ph": "X", "ts": "NaN"},
  {"ph": "X", "ts": 12.5, "args": {"a": {"ph": "X", "ts": 4}}},
  {"ph": "X", "ts": 13"#;
        assert_eq!(first_timestamp(probe), Some(12.5));
        assert_eq!(first_timestamp(&probe[..probe.len() - 90]), None);
    }

    #[test]
    fn each_run_is_read_from_its_start_up_to_one_time_within_the_budget() {
        // 1 GiB in two runs (host ops, then runtime calls and GPU records), each over the same
        // 1,000 s in time order: 32 probes each.
        let len = 1u64 << 30;
        let probed: Vec<(u64, Option<f64>)> = probes(len)
            .iter()
            .enumerate()
            .map(|(k, r)| (r.start, Some(1e6 * 1000.0 * (k % 32) as f64 / 32.0)))
            .collect();
        let plan = plan(len, &probed).expect("a plan");
        assert!(plan.bytes() <= MAX_READ, "{plan:?}");
        let probe = len / PROBES;
        // The first run from the file's start; the second from the probe before its first.
        assert_eq!(plan.ranges.len(), 2, "{plan:?}");
        assert_eq!(plan.ranges[0].start, 0);
        assert_eq!(plan.ranges[1].start, 31 * probe);
        // Both up to the same time: the same share of each run.
        assert_eq!(
            plan.ranges[0].end - plan.ranges[0].start,
            plan.ranges[1].end - 32 * probe
        );
        // A small file, or probes with no time, get none.
        assert_eq!(super::plan(MIN_FILE_BYTES - 1, &probed), None);
        assert_eq!(super::plan(len, &[(0, None), (probe, None)]), None);
    }

    #[test]
    fn ranges_spliced_make_one_document_of_their_whole_events() {
        let text = br#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "b", "ts": 2, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "c", "ts": 1, "dur": 1, "args": {"k": [{"x": 1}, {"y": 2}]}},
  {"ph": "X", "cat": "cpu_op", "name": "d", "ts": 2, "dur": 1}
]}"#;
        let at = |name: &str| {
            let needle = format!("\"name\": \"{name}\"");
            text.windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .unwrap() as u64
        };
        // The first range ends inside "b", the second starts inside "b" and ends inside "d".
        let ranges = [0..at("b") + 4, at("b")..at("d") + 4];
        let plan = Plan {
            ranges: ranges.to_vec(),
            until_us: 3.0,
            len: text.len() as u64,
        };
        let mut splice = Splice::new(&plan);
        for r in &ranges {
            // A byte at a time: where a piece's bytes are cut does not matter.
            for b in &text[r.start as usize..r.end as usize] {
                splice.feed(std::slice::from_ref(b)).expect("fed");
            }
            splice.end_piece().expect("a piece's last element");
        }
        splice.read(b"\n]}").expect("closed");
        let t = splice.ingest.finish().expect("the document reads").trace;
        let mut names: Vec<&str> = (0..t.events.len()).map(|e| t.name_of(e)).collect();
        names.sort();
        assert_eq!(names, ["a", "c"]);
    }
}
