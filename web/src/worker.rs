//! The analysis worker: reads each posted file slice by slice (one stream: `read`, so no
//! whole-file copy), feeds the slices to the streaming ingester, runs the analysis and posts the
//! results.
//!
//! A large plain trace is read by several workers instead: this one coordinates, its helpers
//! (the same bundle, answering `ToWorker::Parse`) frame byte ranges (`ranges`).
//!
//! The page posts one list of files per worker (one file, in practice: `ui::pool`) and cancels by
//! terminating the worker (its helpers end with it). After the load the worker keeps the traces ([`Session`]) and answers
//! the page's requests about them.

use std::cell::RefCell;

use torchtraceap::fleet::Fleet;
use torchtraceap::ingest::{Ingest, IngestOptions};
use torchtraceap::modules::ModuleTree;
use torchtraceap::profile::Profile;
use torchtraceap::report::Report;
use torchtraceap::share;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, DedicatedWorkerGlobalScope, ErrorEvent, File, MessageEvent, Performance, Worker,
};

use crate::protocol::{self, Analyzed, Document, FromWorker, Outcome, Progress, Stage, ToWorker};
use crate::ranges;
use crate::read;
use crate::retrain;
use crate::session::{Kept, Session};
use crate::ui::format::bytes;

/// The worker script Trunk writes next to the page (`data-loader-shim`, no file hashes): the
/// page's workers and their helpers (`ranges`).
const WORKER_URL: &str = "./worker_loader.js";

/// A running worker of this script (a file's, started by the page, or a helper, started by a
/// file's worker) with its message and error handlers. Dropping it terminates the worker.
pub struct Started {
    pub worker: Worker,
    // Kept alive as long as the worker: they are its message and error handlers.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl Started {
    /// Starts a worker: `on_message` gets each message's data, `on_error` why it stopped.
    pub fn new(
        mut on_message: impl FnMut(JsValue) + 'static,
        mut on_error: impl FnMut(String) + 'static,
    ) -> Result<Started, JsValue> {
        let worker = Worker::new(WORKER_URL)?;
        let on_message =
            Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| on_message(e.data()));
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
            e.prevent_default();
            on_error(e.message());
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(Started {
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // Its handlers go first: a message already on its way must find none (their closures
        // are freed with this struct), not a dropped closure.
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
    }
}

/// Bytes read from the file per slice.
const SLICE_BYTES: usize = 4 << 20;

thread_local! {
    /// The traces this worker analyzed.
    static SESSION: RefCell<Session> = RefCell::default();
}

/// Installs the message handler; called once when the worker starts.
pub fn start() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply = scope.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        // The page and the worker are built together: an unreadable request is a bug, or a
        // page of another build (the message says to reload).
        match protocol::decode::<ToWorker>(event.data()) {
            Ok(ToWorker::Analyze {
                files,
                first,
                memory_limit,
                workers,
            }) => {
                let reply = reply.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    for (index, file) in (first..).zip(files.iter()) {
                        let blob = file.unchecked_ref();
                        let outcome =
                            analyze_blob(&reply, index, blob, memory_limit, workers).await;
                        timed("post", || {
                            post(&reply, &FromWorker::Done(Box::new(outcome)));
                        });
                    }
                    post(&reply, &FromWorker::Finished);
                });
            }
            Ok(ToWorker::Canvas { canvas }) => {
                SESSION.with_borrow_mut(|session| session.canvas = Some(canvas));
            }
            Ok(ToWorker::Request(request)) => {
                let answer = SESSION.with_borrow_mut(|session| session.answer(request));
                if let Some(answer) = answer {
                    post(&reply, &answer);
                }
                request_frame(&reply);
            }
            Ok(ToWorker::Retrain { labels }) => {
                let reply = reply.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    post(&reply, &retrain::retrain(&SESSION, labels).await);
                });
            }
            Ok(ToWorker::BundledModel { labels }) => {
                let answer = SESSION.with_borrow_mut(|session| session.bundled(&labels));
                post(&reply, &FromWorker::Retrained(Box::new(Ok(answer))));
            }
            Ok(ToWorker::Parse(job)) => {
                let reply = reply.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    post(
                        &reply,
                        &FromWorker::Parsed(Box::new(ranges::parse(&job).await)),
                    );
                });
            }
            Err(e) => wasm_bindgen::throw_str(&format!("a request from the page: {e}")),
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(&scope, &FromWorker::Ready);
}

/// Asks for an animation frame when the timeline has something to draw and none is asked for
/// yet (`crate::frames`); the frame draws the latest view and asks for the next while it moves.
/// Where workers have no `requestAnimationFrame`, a 16 ms timer stands in for it.
fn request_frame(scope: &DedicatedWorkerGlobalScope) {
    let ask = SESSION.with_borrow_mut(|session| {
        let ask = session.frames.pending() && !session.frames.requested;
        session.frames.requested |= ask;
        ask
    });
    if !ask {
        return;
    }
    let on_frame = scope.clone();
    let callback = Closure::once_into_js(move |t: JsValue| {
        let performance = on_frame.performance();
        let now = performance
            .as_ref()
            .map_or_else(js_sys::Date::now, |p| p.now());
        let t = t.as_f64().unwrap_or(now);
        let at = performance.map_or(0.0, |p| p.time_origin()) + t;
        let answer = SESSION.with_borrow_mut(|session| {
            session.frames.requested = false;
            session.frame(t, at)
        });
        if let Some(answer) = answer {
            post(&on_frame, &answer);
        }
        request_frame(&on_frame);
    });
    let callback = callback.unchecked_ref();
    if scope.request_animation_frame(callback).is_err() {
        let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(callback, 16);
    }
}

/// This worker's clock.
fn performance() -> Option<Performance> {
    js_sys::global()
        .unchecked_into::<DedicatedWorkerGlobalScope>()
        .performance()
}

/// Starts phase `phase` of an analysis in this worker (ended by [`phase_end`]).
pub(crate) fn phase_start(phase: &str) {
    if let Some(p) = performance() {
        let _ = p.mark(&format!("ttap:worker:{phase}"));
    }
}

/// Ends phase `phase`: a User Timing measure `ttap:worker:<phase>` from where it started. The
/// browser's performance panel shows them, and `e2e/bench.mjs` reads them from the file's worker
/// (a few per file, and one per merged range: never cleared while the worker lives).
pub(crate) fn phase_end(phase: &str) {
    if let Some(p) = performance() {
        let name = format!("ttap:worker:{phase}");
        let _ = p.measure_with_start_mark(&name, &name);
        p.clear_marks_with_mark_name(&name);
    }
}

/// Runs `work` as phase `phase`.
pub(crate) fn timed<T>(phase: &str, work: impl FnOnce() -> T) -> T {
    phase_start(phase);
    let out = work();
    phase_end(phase);
    out
}

/// Posts `message` to whoever started this worker (the page, or a coordinating worker).
pub(crate) fn post(scope: &DedicatedWorkerGlobalScope, message: &FromWorker) {
    match protocol::encode(message) {
        // Posting cannot fail: the page exists while its worker runs, and the message holds
        // plain values and buffers to transfer only.
        Ok(value) => {
            let _ = scope.post_message_with_transfer(&value, &message.transfer());
        }
        Err(e) => wasm_bindgen::throw_str(&format!("a message for the page: {e}")),
    }
}

async fn analyze_blob(
    scope: &DedicatedWorkerGlobalScope,
    index: usize,
    blob: &Blob,
    memory_limit: u64,
    workers: usize,
) -> Outcome {
    let name = blob
        .dyn_ref::<File>()
        .map_or_else(|| format!("file {}", index + 1), File::name);
    let size = blob.size();
    let mut progress = Progress {
        file: index,
        name: name.clone(),
        stage: Stage::Reading,
        bytes: 0,
        total_bytes: size as u64,
        events: 0,
        memory_bytes: memory_bytes(),
        workers: 1,
    };
    let result = match saved_document(blob).await {
        Some(Saved::Report) => read_report(blob).await,
        Some(Saved::Fleet) => read_fleet(blob).await,
        None => analyze_trace(scope, blob, &mut progress, memory_limit, workers).await,
    };
    let (result, kept) = match result {
        Ok((document, kept)) => (Ok(document), kept),
        Err(e) => (Err(e), None),
    };
    SESSION.with_borrow_mut(|session| session.keep(index, kept));
    Outcome {
        file: index,
        name,
        size: size as u64,
        worker_memory_bytes: memory_bytes(),
        result,
    }
}

/// Saved reports and fleet reports are small; larger files are traces.
const MAX_REPORT_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

/// A document TorchTraceAP saved rather than a trace.
enum Saved {
    /// `{"format": "torchtraceap.report", …` (fields in any order, within the first bytes).
    Report,
    /// `{"analyzed": …, "format": "torchtraceap.fleet", …` (`fleet.py` sorts its keys).
    Fleet,
}

/// What the blob starts like: a saved report, a fleet report, or (`None`) a trace.
async fn saved_document(blob: &Blob) -> Option<Saved> {
    if blob.size() > MAX_REPORT_BYTES {
        return None;
    }
    let head = blob.slice_with_f64_and_f64(0.0, 512.0).ok()?;
    let text = JsFuture::from(head.text()).await.ok()?.as_string()?;
    if text.contains(&format!("\"{}\"", torchtraceap::report::FORMAT)) {
        Some(Saved::Report)
    } else if Fleet::looks_like(&text) {
        Some(Saved::Fleet)
    } else {
        None
    }
}

/// What a file held, and the trace kept for later requests (none for a saved document).
type Analysis = (Document, Option<Kept>);

async fn read_report(blob: &Blob) -> Result<Analysis, String> {
    let text = JsFuture::from(blob.text())
        .await
        .map_err(|e| js_failure("could not read the file", &e))?;
    // Rendered like a link: the words from this version's catalogue, never the file's own.
    let report = share::render(
        &Report::from_json(&text.as_string().unwrap_or_default()).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("this saved report cannot be shown: {e}"))?;
    let analyzed = Analyzed {
        summary: None,
        report,
        fingerprint: None,
        profile: None,
        modules: None,
    };
    Ok((Document::Analysis(Box::new(analyzed)), None))
}

/// A fleet report, read as untrusted data (`Fleet::from_json` checks it).
async fn read_fleet(blob: &Blob) -> Result<Analysis, String> {
    let text = JsFuture::from(blob.text())
        .await
        .map_err(|e| js_failure("could not read the file", &e))?;
    let fleet = Fleet::from_json(&text.as_string().unwrap_or_default())
        .map_err(|e| format!("this fleet report cannot be shown: {e}"))?;
    Ok((Document::Fleet(Box::new(fleet)), None))
}

async fn analyze_trace(
    scope: &DedicatedWorkerGlobalScope,
    blob: &Blob,
    progress: &mut Progress,
    memory_limit: u64,
    workers: usize,
) -> Result<Analysis, String> {
    phase_start("read");
    let read = match ranges::worth(blob, workers).await? {
        Some(in_object) => {
            ranges::read(scope, blob, in_object, workers, progress, memory_limit).await
        }
        None => read(scope, blob, progress, memory_limit).await,
    };
    phase_end("read");
    read.and_then(|ingest| {
        progress.stage = Stage::Analyzing;
        post(scope, &FromWorker::Progress(progress.clone()));
        let ingested = timed("assemble", || ingest.finish()).map_err(|e| e.to_string())?;
        let kept = timed("analysis", || Kept::new(ingested));
        let analyzed = timed("views", || {
            let mut analyzed = Analyzed::with_report(kept.ingested, kept.report.clone());
            analyzed.profile = Some(Profile::new(&progress.name, &kept.analysis, &kept.findings));
            analyzed.modules = ModuleTree::of(&kept.ingested.trace);
            analyzed
        });
        Ok((Document::Analysis(Box::new(analyzed)), Some(kept)))
    })
}

/// The size of this worker's wasm memory.
pub(crate) fn memory_bytes() -> u64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as u64
}

/// Why a trace is not analyzed: reading it took the worker's memory past `limit`.
pub(crate) fn too_large(p: &Progress, limit: u64) -> String {
    format!(
        "{name} is too large to analyze in this browser tab: after reading {read} of its {total} \
         ({pct:.0} %), the worker's memory reached {memory}, past its limit of {limit} (a worker \
         has at most 4 GiB of WebAssembly memory, and the analysis needs room beyond what \
         reading takes). Reading stopped there and nothing else changed: what the page showed \
         before is still shown. Analyze this trace with the command-line tool (`ttap analyze \
         {name}`), which has no such limit, or profile fewer steps (a shorter \
         `torch.profiler.schedule`).",
        name = p.name,
        read = bytes(p.bytes),
        total = bytes(p.total_bytes),
        pct = p.bytes as f64 * 100.0 / p.total_bytes.max(1) as f64,
        memory = bytes(p.memory_bytes),
        limit = bytes(limit),
    )
}

/// Feeds the blob to a new ingester, a slice at a time (one stream, one reused slice buffer),
/// posting progress after each slice; stops when the worker's memory passes `memory_limit`.
async fn read(
    scope: &DedicatedWorkerGlobalScope,
    blob: &Blob,
    progress: &mut Progress,
    memory_limit: u64,
) -> Result<Ingest, String> {
    let size = blob.size() as u64;
    let mut ingest = Ingest::new(IngestOptions::default());
    ingest.expect_input_bytes(size);
    let mut stream = read::Stream::open(blob, 0, size)?;
    let mut slice = Vec::new();
    while stream.next(SLICE_BYTES, &mut slice).await? {
        ingest.feed(&slice).map_err(|e| e.to_string())?;
        progress.bytes += slice.len() as u64;
        progress.events = ingest.progress().events;
        progress.memory_bytes = memory_bytes();
        post(scope, &FromWorker::Progress(progress.clone()));
        if progress.memory_bytes > memory_limit {
            return Err(too_large(progress, memory_limit));
        }
    }
    Ok(ingest)
}

pub(crate) fn js_failure(what: &str, error: &JsValue) -> String {
    let detail = error
        .dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{error:?}"), |e| String::from(e.message()));
    let detail = detail.trim_end_matches('.');
    format!(
        "{what}: {detail}. The file may have been moved, changed or deleted since it was chosen: choose it again."
    )
}
