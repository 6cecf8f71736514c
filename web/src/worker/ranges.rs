//! One trace read by several workers: the file's worker (the coordinator) starts helper workers
//! (the same worker bundle, one per worker asked for), hands each [`DEPTH`] byte ranges of the
//! same `Blob` at a time, and merges their framed blocks in order, as they arrive, into one
//! `Ingest`: the result of one pass.
//!
//! ```text
//! coordinator ──Parse {blob, range i}──▶ helper: read (range and a little more), cut points
//!      ▲                                    (range_start), frame alone
//!      └──Parsed {start, end, state (bincode, transferred)}
//! merge i in order; a wrong guess: read start..end again here and frame it serially
//! ```
//!
//! The coordinator frames nothing ahead: merging a range costs about a tenth of framing it, so
//! it stays free to hand out the next range as soon as a helper posts one (a coordinator that
//! framed too kept its helpers waiting for their next range for as long as its own framing
//! took). It reads in place only a range no helper has taken (the first ones, while helpers
//! start). A helper holds [`DEPTH`] ranges, so that the browser reads one while it frames the
//! other (a read's bytes arrive through a stream, `read`: most of its cost is on the
//! browser's threads, about a quarter on the helper's).
//!
//! Each helper finds its block's ends with `ingest::blocks::range_start` from the range's
//! nominal bounds, in the same read as the range's bytes (and [`TAIL`] bytes past it), so two
//! neighbours agree on their common boundary without talking. A block's
//! state crosses as bincode in an `ArrayBuffer` that is transferred, not copied (the page's
//! messages stay `serde-wasm-bindgen` values). Measured (`web/tests/browser.rs`, a state of
//! 18,647 events, debug build): bincode written and read back in 53 ms, 942 KB;
//! `serde-wasm-bindgen` to a JS value and back 92 ms, before the structured clone that a JS
//! value costs and a transferred buffer does not. In the release worker, a 16 MiB range's
//! 3.4 MB state is written in about 1 ms and read and merged in about 11 ms (ranges are 8 MiB
//! now: [`RANGE_BYTES`]). Memory: each helper holds one range (its bytes,
//! then its state) and at most [`AHEAD`] ranges per helper are handed out beyond the one being
//! merged. A helper that stops (out of memory, a bug) loses only its range, which the
//! coordinator then reads itself; so does any range when no helper is left.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use js_sys::Uint8Array;
use torchtraceap::ingest::blocks::{self, Framed, Start, LOOKBACK};
use torchtraceap::ingest::{Ingest, IngestOptions};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DedicatedWorkerGlobalScope};

use super::read;
use crate::js::{self, memory_bytes, phase_end, phase_start, Started};
use crate::protocol::{
    self, FileError, FromWorker, Parse, Parsed, ParsedBlock, Progress, ToWorker,
};

/// Nominal bytes per range: large enough that a block's state and its merge cost little next
/// to framing it, small enough that the [`DEPTH`] ranges a helper holds stay a small part of
/// the tab's memory. Measured on a 1 GiB generated trace (`e2e/big-bench.mjs`, 2 workers):
/// 16 MiB ranges, the tab's own memory peaked at 0.51–0.54× the JSON; 8 MiB, 0.45–0.46×, in
/// the same time to the report.
pub const RANGE_BYTES: u64 = 8 << 20;
/// Traces smaller than this are read by their worker alone (starting helpers costs more).
pub const MIN_BYTES: f64 = 32.0 * (1 << 20) as f64;
/// Ranges a helper holds at once: it reads one while it frames another.
const DEPTH: usize = 2;
/// Ranges handed out per helper beyond the one being merged: the [`DEPTH`] it holds, and one
/// parsed and waiting for its turn.
const AHEAD: usize = DEPTH + 1;
/// Bytes read past a range's nominal end, in the same read, where its block's end is found
/// (the first event that starts there: a few hundred bytes on, in every trace seen).
const TAIL: u64 = 64 << 10;

/// Whether `blob` is worth reading with `workers` workers: large, plain JSON (gzip is one
/// stream). `Some(in_object)`, the guess where its event array sits, when it is.
pub async fn worth(blob: &Blob, workers: usize) -> Result<Option<bool>, FileError> {
    if workers <= 1 || blob.size() < MIN_BYTES {
        return Ok(None);
    }
    let head = read::bytes(blob, 0, 512).await?;
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok(None);
    }
    Ok(Some(
        head.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'['),
    ))
}

/// Where the block of the range that nominally starts at `from` (in a trace of `size` bytes)
/// starts, if `window`, the bytes from `window_start` (at most `from - LOOKBACK`), tells.
fn cut(window: &[u8], window_start: u64, from: u64, size: u64) -> Option<u64> {
    if from == 0 || from >= size {
        return Some(from.min(size));
    }
    blocks::range_start(window, window_start, from, (from + RANGE_BYTES).min(size))
}

/// Where the block of the range that nominally starts at `from` starts: read in growing
/// windows until [`cut`] can tell.
async fn boundary(blob: &Blob, from: u64) -> Result<u64, FileError> {
    let size = blob.size() as u64;
    let begin = from.saturating_sub(LOOKBACK);
    let mut window = Vec::new();
    let mut ahead = 0;
    loop {
        if let Some(at) = cut(&window, begin, from, size) {
            return Ok(at);
        }
        ahead = (ahead * 16).max(4096);
        window = read::bytes(blob, begin, from + ahead.min(RANGE_BYTES)).await?;
    }
}

/// The block of range `index` (nominally `from..to`): where it starts and ends, and what it
/// holds framed alone. One read holds both cut points but where the block ends more than
/// [`TAIL`] bytes past `to`.
async fn frame_range(
    blob: &Blob,
    index: usize,
    (from, to): (u64, u64),
    in_object: bool,
) -> Result<(u64, u64, Framed), FileError> {
    let size = blob.size() as u64;
    let begin = from.saturating_sub(LOOKBACK);
    let bytes = read::bytes(blob, begin, to + TAIL).await?;
    let start = match cut(&bytes, begin, from, size) {
        Some(start) => start,
        None => boundary(blob, from).await?,
    };
    let end = match cut(&bytes, begin, to, size) {
        Some(end) => end,
        None => boundary(blob, to).await?,
    }
    .max(start);
    let how = match index {
        0 => Start::Document,
        _ => Start::Between(in_object),
    };
    let framed = match bytes.get((start - begin) as usize..(end - begin) as usize) {
        Some(block) => blocks::frame(how, start, block),
        None => blocks::frame(how, start, &read::bytes(blob, start, end).await?),
    };
    Ok((start, end, framed))
}

/// The nominal bytes of range `index` of a trace of `size` bytes.
fn nominal(index: usize, size: u64) -> (u64, u64) {
    let from = index as u64 * RANGE_BYTES;
    (from.min(size), (from + RANGE_BYTES).min(size))
}

/// A helper's work: the range's block read, framed alone and serialized.
pub async fn parse(job: &Parse) -> Parsed {
    let result = async {
        let (start, end, framed) =
            frame_range(&job.blob, job.index, (job.from, job.to), job.in_object).await?;
        // Written once, growing the buffer (`bincode::serialize` would walk it twice).
        let mut state = Vec::new();
        bincode::serialize_into(&mut state, &framed).map_err(|e| FileError::State {
            detail: e.to_string(),
        })?;
        Ok(ParsedBlock {
            start,
            end,
            state: Uint8Array::from(&state[..]).buffer(),
        })
    }
    .await;
    Parsed {
        index: job.index,
        result,
    }
}

/// The helpers of one trace and the ranges on their way.
struct Dispatch {
    blob: Blob,
    size: u64,
    in_object: bool,
    ranges: usize,
    /// The next range to hand out, and the next to merge.
    next: usize,
    merging: usize,
    /// `None` once a helper has stopped.
    helpers: Vec<Option<Started>>,
    /// Whether each helper has said it is ready.
    ready: Vec<bool>,
    /// The ranges each helper holds.
    working: Vec<Vec<usize>>,
    /// Ranges parsed (or why not), waiting for their turn.
    results: BTreeMap<usize, Result<ParsedBlock, FileError>>,
    /// Wakes the coordinator when a result arrives.
    wake: Option<js_sys::Function>,
}

impl Dispatch {
    /// How far ranges are handed out: [`AHEAD`] per helper beyond the one being merged.
    fn limit(&self) -> usize {
        self.ranges.min(self.merging + AHEAD * self.helpers.len())
    }

    /// Hands out ranges to ready helpers holding fewer than [`DEPTH`], the least busy first.
    fn hand_out(&mut self) {
        while self.next < self.limit() {
            let Some(h) = (0..self.helpers.len())
                .filter(|&h| {
                    self.ready[h] && self.helpers[h].is_some() && self.working[h].len() < DEPTH
                })
                .min_by_key(|&h| self.working[h].len())
            else {
                return;
            };
            let index = self.next;
            let (from, to) = nominal(index, self.size);
            let job = ToWorker::Parse(Box::new(Parse {
                blob: self.blob.clone(),
                index,
                from,
                to,
                in_object: self.in_object,
            }));
            let posted = protocol::encode(&job)
                .map_err(|e| e.to_string())
                .and_then(|v| {
                    let helper = self.helpers[h].as_ref().expect("a live helper");
                    helper.worker.post_message(&v).map_err(|e| js::detail(&e))
                });
            match posted {
                Ok(()) => {
                    self.working[h].push(index);
                    self.next += 1;
                }
                Err(detail) => self.stop(h, FileError::Helper { detail }),
            }
        }
    }

    /// Helper `h` stopped: the ranges it held fail (the coordinator reads them itself).
    fn stop(&mut self, h: usize, why: FileError) {
        for index in std::mem::take(&mut self.working[h]) {
            self.results.insert(index, Err(why.clone()));
        }
        self.helpers[h] = None;
    }

    /// A message from helper `h`, or why it stopped.
    fn receive(&mut self, h: usize, message: Result<FromWorker, FileError>) {
        match message {
            Ok(FromWorker::Ready) => self.ready[h] = true,
            Ok(FromWorker::Parsed(parsed)) => {
                self.working[h].retain(|&i| i != parsed.index);
                self.results.insert(parsed.index, parsed.result);
            }
            Ok(_) => return,
            Err(why) => self.stop(h, why),
        }
        self.hand_out();
        if let Some(wake) = self.wake.take() {
            let _ = wake.call0(&JsValue::NULL);
        }
    }

    fn live(&self) -> usize {
        self.helpers.iter().flatten().count()
    }
}

/// Starts helper `h`, whose messages go to `dispatch`.
fn start_helper(dispatch: &Weak<RefCell<Dispatch>>, h: usize) -> Option<Started> {
    let (to, to_too) = (dispatch.clone(), dispatch.clone());
    Started::new(
        move |data| {
            let message = protocol::decode::<FromWorker>(data).map_err(|e| FileError::Helper {
                detail: e.to_string(),
            });
            if let Some(d) = to.upgrade() {
                d.borrow_mut().receive(h, message);
            }
        },
        move |detail| {
            if let Some(d) = to_too.upgrade() {
                d.borrow_mut().receive(h, Err(FileError::Helper { detail }));
            }
        },
    )
    .ok()
}

/// What the coordinator does next for range `index`.
enum Next {
    /// A helper's result, or why there is none (then it reads the range itself).
    Parsed(Result<ParsedBlock, FileError>),
    /// No helper has it: it reads it itself.
    Mine,
    Wait,
}

impl Dispatch {
    fn next_for(&mut self, index: usize) -> Next {
        if let Some(result) = self.results.remove(&index) {
            self.merging = index + 1;
            self.hand_out();
            return Next::Parsed(result);
        }
        if index >= self.next {
            self.next = index + 1;
            self.merging = index + 1;
            self.hand_out();
            return Next::Mine;
        }
        Next::Wait
    }
}

/// Reads `blob` with `workers` helpers into an ingester holding what one pass would hold,
/// posting progress after each merged range; stops when this worker's memory passes
/// `memory_limit`. This worker merges in order, and reads in place a range no helper took.
pub async fn read(
    scope: &DedicatedWorkerGlobalScope,
    blob: &Blob,
    in_object: bool,
    workers: usize,
    progress: &mut Progress,
    memory_limit: u64,
) -> Result<Ingest, FileError> {
    let size = blob.size() as u64;
    let ranges = size.div_ceil(RANGE_BYTES) as usize;
    let dispatch = Rc::new(RefCell::new(Dispatch {
        blob: blob.clone(),
        size,
        in_object,
        ranges,
        next: 0,
        merging: 0,
        helpers: Vec::new(),
        ready: vec![false; workers],
        working: vec![Vec::new(); workers],
        results: BTreeMap::new(),
        wake: None,
    }));
    let weak = Rc::downgrade(&dispatch);
    let started = (0..workers).map(|h| start_helper(&weak, h)).collect();
    dispatch.borrow_mut().helpers = started;
    progress.workers = dispatch.borrow().live().max(1);
    let mut ingest = Ingest::blocks(IngestOptions::default());
    ingest.expect_input_bytes(size);
    for index in 0..ranges {
        let end = loop {
            let next = dispatch.borrow_mut().next_for(index);
            match next {
                Next::Parsed(Ok(block)) => {
                    phase_start("merge");
                    let framed = bincode::deserialize(&Uint8Array::new(&block.state).to_vec());
                    merge(&mut ingest, blob, framed.ok(), (block.start, block.end)).await?;
                    phase_end("merge");
                    break block.end;
                }
                Next::Parsed(Err(_)) | Next::Mine => {
                    // Read here, in order: the same cut points as a helper's.
                    let (from, to) = nominal(index, size);
                    let start = boundary(blob, from).await?;
                    let end = boundary(blob, to).await?.max(start);
                    merge(&mut ingest, blob, None, (start, end)).await?;
                    break end;
                }
                Next::Wait => {
                    let woken = js_sys::Promise::new(&mut |resolve, _| {
                        dispatch.borrow_mut().wake = Some(resolve);
                    });
                    let _ = JsFuture::from(woken).await;
                }
            }
        };
        progress.bytes = end;
        continue_progress(scope, &ingest, progress, memory_limit)?;
    }
    Ok(ingest)
}

/// Merges the next block, framed alone; when there is none, or its guess of where it starts
/// was wrong (or it holds a syntax error, reported at its place), frames its bytes in order.
async fn merge(
    ingest: &mut Ingest,
    blob: &Blob,
    framed: Option<Framed>,
    (start, end): (u64, u64),
) -> Result<(), FileError> {
    if framed.is_some_and(|f| ingest.merge(f)) {
        return Ok(());
    }
    ingest
        .feed(&read::bytes(blob, start, end).await?)
        .map_err(FileError::from)
}

/// Posts progress after a range (or a slice, `worker::read_alone`); the error when memory passed the
/// limit.
pub fn continue_progress(
    scope: &DedicatedWorkerGlobalScope,
    ingest: &Ingest,
    progress: &mut Progress,
    memory_limit: u64,
) -> Result<(), FileError> {
    progress.events = ingest.progress().events;
    progress.memory_bytes = memory_bytes();
    FromWorker::Progress(progress.clone()).post(scope);
    if progress.memory_bytes > memory_limit {
        return Err(FileError::TooLarge {
            read: progress.bytes,
            total: progress.total_bytes,
            memory: progress.memory_bytes,
            limit: memory_limit,
        });
    }
    Ok(())
}
