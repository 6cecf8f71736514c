//! The analysis worker: reads each posted file slice by slice (one stream: `read`, so no
//! whole-file copy), feeds the slices to the streaming ingester, runs the analysis and posts the
//! results.
//!
//! A large plain trace is read by several workers instead: this one coordinates, its helpers
//! (the same bundle, answering `ToWorker::Parse`) frame byte ranges (`ranges`).
//!
//! The worker sends facts (figures, typed errors: `protocol::FileError`), never prose for the
//! page; it names only the modules below it (`protocol`, `js`, `format`, `geometry`).
//!
//! The page posts one list of files per worker (one file, in practice: `page::pool`) and cancels by
//! terminating the worker (its helpers end with it). After the load the worker keeps the traces ([`Session`]) and answers
//! the page's requests about them.

use std::cell::RefCell;

use torchtraceap::fleet::Fleet;
use torchtraceap::ingest::{Ingest, IngestOptions, Ingested};
use torchtraceap::report::Report;
use torchtraceap::share;
use torchtraceap::AnalyzedTrace;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DedicatedWorkerGlobalScope, File, MessageEvent};

use crate::js::{memory_bytes, phase_end, phase_start, timed};
use crate::protocol::{
    self, Analyzed, Document, FileError, FromWorker, Outcome, Progress, ReadStep, Request, Stage,
    ToWorker,
};
use session::{Kept, Session};

mod draw;
mod early;
mod frames;
mod ranges;
mod read;
mod retrain;
pub mod session;

/// How many kernels and operators the tables keep (the largest by total time).
const TABLE_ROWS: usize = 500;

/// What the views show of an analyzed trace (`Kept::new` analyzes it once and keeps it for
/// later requests): its summary, report, fingerprint, its profile named `name`, its modules.
pub fn views(trace: &AnalyzedTrace<'_>, name: &str) -> Analyzed {
    Analyzed {
        summary: Some(trace.summary(TABLE_ROWS)),
        report: trace.report().clone(),
        fingerprint: Some(trace.fingerprint().to_string()),
        profile: Some(trace.profile(name)),
        modules: trace.modules(),
    }
}

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
                capture,
            }) => {
                let reply = reply.clone();
                let capture = capture.dyn_into::<Blob>().ok();
                wasm_bindgen_futures::spawn_local(async move {
                    for (index, file) in (first..).zip(files.iter()) {
                        let blob = file.unchecked_ref();
                        let limits = (memory_limit, workers);
                        let outcome =
                            analyze_blob(&reply, index, blob, limits, capture.as_ref()).await;
                        timed("post", || FromWorker::Done(Box::new(outcome)).post(&reply));
                    }
                    FromWorker::Finished.post(&reply);
                });
            }
            Ok(ToWorker::Canvas { canvas }) => {
                SESSION.with_borrow_mut(|session| session.canvas = Some(canvas));
            }
            Ok(ToWorker::Request {
                id,
                request: Request::Retrain { labels },
            }) => {
                let reply = reply.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let answer = retrain::retrain(&SESSION, labels).await;
                    FromWorker::Reply { id, reply: answer }.post(&reply);
                });
            }
            Ok(ToWorker::Request { id, request }) => {
                let answer = SESSION.with_borrow_mut(|session| session.answer(request));
                if let Some(answer) = answer {
                    FromWorker::Reply { id, reply: answer }.post(&reply);
                }
                request_frame(&reply);
            }
            Ok(ToWorker::Parse(job)) => {
                let reply = reply.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    FromWorker::Parsed(Box::new(ranges::parse(&job).await)).post(&reply);
                });
            }
            Err(e) => wasm_bindgen::throw_str(&format!("a request from the page: {e}")),
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    FromWorker::Ready.post(&scope);
}

/// Asks for an animation frame when the timeline has something to draw and none is asked for
/// yet ([`frames`]); the frame draws the latest view and asks for the next while it moves.
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
            answer.post(&on_frame);
        }
        request_frame(&on_frame);
    });
    let callback = callback.unchecked_ref();
    if scope.request_animation_frame(callback).is_err() {
        let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(callback, 16);
    }
}

/// File `index` (`blob`) read and analyzed within `(memory limit, workers)`, a trace with
/// the graph capture trace `capture` beside it.
async fn analyze_blob(
    scope: &DedicatedWorkerGlobalScope,
    index: usize,
    blob: &Blob,
    (memory_limit, workers): (u64, usize),
    capture: Option<&Blob>,
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
        None => {
            let limits = (memory_limit, workers);
            analyze_trace(scope, blob, &mut progress, limits, capture).await
        }
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

/// The whole blob as text.
async fn text(blob: &Blob) -> Result<String, FileError> {
    let text = JsFuture::from(blob.text())
        .await
        .map_err(|e| FileError::read(ReadStep::Whole, &e))?;
    Ok(text.as_string().unwrap_or_default())
}

async fn read_report(blob: &Blob) -> Result<Analysis, FileError> {
    let report = Report::from_json(&text(blob).await?).map_err(|e| FileError::Report {
        detail: e.to_string(),
    })?;
    // Rendered like a link: the words from this version's catalogue, never the file's own.
    let report = share::render(&report).map_err(|e| FileError::ReportNotShown {
        detail: e.to_string(),
    })?;
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
async fn read_fleet(blob: &Blob) -> Result<Analysis, FileError> {
    let fleet = Fleet::from_json(&text(blob).await?).map_err(|e| FileError::Fleet {
        detail: e.to_string(),
    })?;
    Ok((Document::Fleet(Box::new(fleet)), None))
}

async fn analyze_trace(
    scope: &DedicatedWorkerGlobalScope,
    blob: &Blob,
    progress: &mut Progress,
    (memory_limit, workers): (u64, usize),
    capture: Option<&Blob>,
) -> Result<Analysis, FileError> {
    early::post(scope, blob, progress.file).await;
    phase_start("read");
    let read = match ranges::worth(blob, workers).await? {
        Some(in_object) => {
            ranges::read(scope, blob, in_object, workers, progress, memory_limit).await
        }
        None => read_alone(scope, blob, progress, memory_limit).await,
    };
    phase_end("read");
    let ingest = read?;
    progress.stage = Stage::Analyzing;
    FromWorker::Progress(progress.clone()).post(scope);
    let mut ingested = timed("assemble", || ingest.finish())?;
    if let Some(capture) = capture {
        ingested = with_capture(scope, ingested, capture, progress, memory_limit).await?;
    }
    let kept = timed("analysis", || Kept::new(ingested));
    let analyzed = timed("views", || views(&kept.analyzed, &progress.name));
    Ok((Document::Analysis(Box::new(analyzed)), Some(kept)))
}

/// `ingested` with the graph capture trace `capture` beside it, read here (its progress
/// posted under its own name); a capture that does not read fails the file, naming it.
async fn with_capture(
    scope: &DedicatedWorkerGlobalScope,
    ingested: Ingested,
    capture: &Blob,
    progress: &Progress,
    memory_limit: u64,
) -> Result<Ingested, FileError> {
    let name = capture
        .dyn_ref::<File>()
        .map_or_else(|| "the capture trace".to_string(), File::name);
    let failed = |error: FileError| FileError::Capture {
        name: name.clone(),
        error: Box::new(error),
    };
    let mut reading = Progress {
        name: name.clone(),
        stage: Stage::Reading,
        bytes: 0,
        total_bytes: capture.size() as u64,
        ..progress.clone()
    };
    let read = read_alone(scope, capture, &mut reading, memory_limit)
        .await
        .and_then(|ingest| Ok(ingest.finish()?))
        .map_err(failed)?;
    FromWorker::Progress(progress.clone()).post(scope);
    Ok(timed("capture", || ingested.with_capture(&read, &name)))
}

/// Feeds the blob to a new ingester, a slice at a time (one stream, one reused slice buffer),
/// posting progress after each slice; stops when the worker's memory passes `memory_limit`.
async fn read_alone(
    scope: &DedicatedWorkerGlobalScope,
    blob: &Blob,
    progress: &mut Progress,
    memory_limit: u64,
) -> Result<Ingest, FileError> {
    let size = blob.size() as u64;
    let mut ingest = Ingest::new(IngestOptions::default());
    ingest.expect_input_bytes(size);
    let mut stream = read::Stream::open(blob, 0, size)?;
    let mut slice = Vec::new();
    while stream.next(read::SLICE_BYTES, &mut slice).await? {
        ingest.feed(&slice)?;
        progress.bytes += slice.len() as u64;
        ranges::continue_progress(scope, &ingest, progress, memory_limit)?;
    }
    Ok(ingest)
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;

    /// A real analysis (the bundled sample's summary and report: the core's flattened gate
    /// figures, tagged enums, optional fields and 64-bit times) crosses whole through the
    /// browser's structured clone, as `postMessage` carries it.
    #[wasm_bindgen_test]
    fn an_analysis_crosses_whole_through_structured_clone() {
        const SAMPLE: &[u8] =
            include_bytes!("../../../www/samples/resnet50-a100-dataloader.pt.trace.json.gz");
        let ingested = torchtraceap::ingest::ingest_bytes(SAMPLE, Default::default())
            .expect("the sample ingests");
        let analyzed = views(&AnalyzedTrace::new(&ingested), "sample.pt.trace.json.gz");
        assert!(!analyzed.report.findings.is_empty());
        let message = FromWorker::Done(Box::new(Outcome {
            file: 0,
            name: "sample.pt.trace.json.gz".into(),
            size: SAMPLE.len() as u64,
            worker_memory_bytes: 1 << 33,
            result: Ok(Document::Analysis(Box::new(analyzed))),
        }));
        let structured_clone: js_sys::Function =
            js_sys::Reflect::get(&js_sys::global(), &"structuredClone".into())
                .expect("structuredClone")
                .into();
        let posted = structured_clone
            .call1(
                &JsValue::UNDEFINED,
                &protocol::encode(&message).expect("encodes"),
            )
            .expect("clones");
        assert_eq!(
            protocol::decode::<FromWorker>(posted).expect("decodes"),
            message
        );
    }
}
