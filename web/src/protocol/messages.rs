//! The messages themselves: what the page asks of a worker ([`ToWorker`], its [`Request`]s),
//! what a worker sends back ([`FromWorker`]), and the worker-to-worker ranges of a large trace
//! ([`Parse`], [`Parsed`]).

use serde::{Deserialize, Serialize};
use torchtraceap::llm::protocol::Endpoint;
use torchtraceap::llm::summary::{Prompt, SummaryOptions};
use torchtraceap::ml::labels::WindowLabel;
use wasm_bindgen::JsValue;
use web_sys::{Blob, DedicatedWorkerGlobalScope, OffscreenCanvas};

use super::envelope::encode;
use super::errors::{FileError, RequestError, RetrainError};
use super::outcome::{EarlyLook, Outcome, Progress};
use super::retrain::Retrained;
use super::timeline::{TimelineReply, TimelineRequest};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    Ready,
    Progress(Progress),
    /// The first steps' report of a large trace, before it is read whole.
    Early(Box<EarlyLook>),
    Done(Box<Outcome>),
    Finished,
    /// The answer to the page's request `id` (`ToWorker::Request`).
    Reply {
        id: u64,
        reply: Reply,
    },
    /// A timeline frame drawn, or why it was not: the answer to the latest `View` on each
    /// animation frame that shows a new image (`worker::frames`), not to one request.
    Frame(Box<TimelineReply>),
    /// Worker to worker: the answer to `ToWorker::Parse`.
    Parsed(Box<Parsed>),
}

/// The answer to one [`Request`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Reply {
    Timeline(Box<TimelineReply>),
    /// The answer to `Request::Prompts`: the options and endpoint it was made with (the page
    /// drops a reply for settings it no longer has), and the questions or why there are none.
    Prompts {
        file: usize,
        options: SummaryOptions,
        endpoint: Endpoint,
        result: Result<Vec<Question>, RequestError>,
    },
    /// The answer to `Request::Perfetto`: the export's JSON (`perfetto::write`), or why there
    /// is none.
    Perfetto {
        file: usize,
        result: Result<String, RequestError>,
    },
    /// The answer to `Retrain` and `BundledModel`: every trace rescored by the new model, or
    /// why there is none (the traces keep their scores).
    Retrained(Box<Result<Retrained, RetrainError>>),
}

/// A prompt, and the request body made from it for the endpoint asked for (`Endpoint::body`):
/// exactly what Send sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub prompt: Prompt,
    pub body: String,
}

/// A timeline reply's kind.
fn timeline_kind(reply: &TimelineReply) -> &'static str {
    match reply {
        TimelineReply::Opened(_) => "timeline-opened",
        TimelineReply::Drawn(_) => "timeline-drawn",
        TimelineReply::Picked { .. } => "timeline-picked",
        TimelineReply::Found(_) => "timeline-found",
        TimelineReply::Failed { .. } => "timeline-failed",
    }
}

impl FromWorker {
    /// The message's kind, for measuring its cost (`page::cost`).
    pub fn kind(&self) -> &'static str {
        match self {
            FromWorker::Ready => "ready",
            FromWorker::Progress(_) => "progress",
            FromWorker::Early(_) => "early",
            FromWorker::Done(_) => "done",
            FromWorker::Finished => "finished",
            FromWorker::Reply { reply, .. } => match reply {
                Reply::Timeline(reply) => timeline_kind(reply),
                Reply::Prompts { .. } => "prompts",
                Reply::Perfetto { .. } => "perfetto",
                Reply::Retrained(_) => "retrained",
            },
            FromWorker::Frame(reply) => timeline_kind(reply),
            FromWorker::Parsed(_) => "parsed",
        }
    }

    /// Posts the message to whoever started this worker (the page, or a coordinating worker),
    /// transferring what it hands over.
    pub fn post(&self, scope: &DedicatedWorkerGlobalScope) {
        match encode(self) {
            // Posting cannot fail: the page exists while its worker runs, and the message
            // holds plain values and buffers to transfer only.
            Ok(value) => {
                let _ = scope.post_message_with_transfer(&value, &self.transfer());
            }
            Err(e) => wasm_bindgen::throw_str(&format!("a message for the page: {e}")),
        }
    }

    /// What the message hands over rather than copies: a parsed range's state.
    pub fn transfer(&self) -> js_sys::Array {
        match self {
            FromWorker::Parsed(parsed) => match &parsed.result {
                Ok(block) => js_sys::Array::of1(&block.state),
                Err(_) => js_sys::Array::new(),
            },
            _ => js_sys::Array::new(),
        }
    }
}

/// Worker to worker: frame byte range `index` of a trace alone (`worker::ranges`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parse {
    /// The trace: a `Blob` travels by reference, its bytes are read by the worker that parses.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub blob: Blob,
    pub index: usize,
    /// The range's nominal bytes, `from..to`; its block starts and ends at the cut points
    /// `ingest::blocks::range_start` finds from there.
    pub from: u64,
    pub to: u64,
    /// Whether the event array sits in a top-level object (from the document's first byte).
    pub in_object: bool,
}

/// A range framed alone, or why it could not be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    pub index: usize,
    pub result: Result<ParsedBlock, FileError>,
}

/// A framed block: its bytes in the document and its state (`ingest::blocks::Framed` in
/// bincode), in a buffer transferred with the message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParsedBlock {
    pub start: u64,
    pub end: u64,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub state: js_sys::ArrayBuffer,
}

/// What the page asks of its worker; `file` is the file's index in the load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// Analyze these `File`s (or `Blob`s), in order; posted once, after `Ready`. They are files
    /// `first`, `first + 1`, … of the load: the page gives each worker a part of it (one file).
    /// The worker stops reading a trace when its memory passes `memory_limit` bytes (the file
    /// gets a `FileError::TooLarge`). Up to `workers` workers (this one's
    /// helpers, `worker::ranges`, while this one merges) read a large plain trace; 1: this one alone.
    Analyze {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        files: js_sys::Array,
        first: usize,
        memory_limit: u64,
        workers: usize,
        /// A capture trace (`File`) to tie each file's graph replays to
        /// (`Ingested::with_capture`), read after the file; `null` without one.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        capture: JsValue,
    },
    /// The timeline's canvas, which the worker draws into from then on; posted before the first
    /// `View`, transferred ([`ToWorker::transfer`]).
    Canvas {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        canvas: OffscreenCanvas,
    },
    /// Request `id` (numbered by the page), answered by one `FromWorker::Reply` with its `id`;
    /// a `View` or a `Motion` by the frames drawn (`FromWorker::Frame`) instead.
    Request { id: u64, request: Request },
    /// Worker to worker: frame a byte range of a trace; answered by `FromWorker::Parsed`.
    Parse(Box<Parse>),
}

/// A question for the worker that holds a file's trace, answered with one [`Reply`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// A request about the file's timeline; answered by `Reply::Timeline`.
    Timeline(TimelineRequest),
    /// The LLM prompts of the file's flagged windows (`llm::summary::summarize`, then
    /// `prompts`), each with its request body for `endpoint` (its API key left out: the key
    /// never leaves the page); answered by `Reply::Prompts`. Nothing is sent anywhere: the page
    /// shows them, and sends one only when the user asks.
    Prompts {
        file: usize,
        options: SummaryOptions,
        endpoint: Endpoint,
    },
    /// The file's trace and analysis for Perfetto UI (`perfetto::write`, whole); answered by
    /// `Reply::Perfetto`.
    Perfetto { file: usize },
    /// Fit a window model on the bundled base set plus these kept labels (those of the traces
    /// this worker holds) and rescore every trace with it; answered by `Reply::Retrained`.
    Retrain { labels: Vec<WindowLabel> },
    /// Rescore every trace with the bundled model again (the kept labels name the windows in
    /// the reply); answered by `Reply::Retrained`.
    BundledModel { labels: Vec<WindowLabel> },
}

impl Request {
    /// The file the request is about, if it is about one: the worker that holds that file's
    /// trace must answer it. Retraining is about the traces of the worker that gets it: the
    /// page sends it to the worker of the file shown.
    pub fn file(&self) -> Option<usize> {
        match self {
            Request::Retrain { .. } | Request::BundledModel { .. } => None,
            Request::Prompts { file, .. } | Request::Perfetto { file } => Some(*file),
            Request::Timeline(request) => Some(match request {
                TimelineRequest::Open { file }
                | TimelineRequest::Motion { file, .. }
                | TimelineRequest::Details { file, .. }
                | TimelineRequest::Search { file, .. } => *file,
                TimelineRequest::View(view) | TimelineRequest::Pick { view, .. } => view.file,
            }),
        }
    }

    /// Whether one [`Reply`] answers it: a `View` or a `Motion` gets frames instead.
    pub fn replied(&self) -> bool {
        !matches!(
            self,
            Request::Timeline(TimelineRequest::View(_) | TimelineRequest::Motion { .. })
        )
    }

    /// The request's kind, for measuring its cost (`page::cost`).
    fn kind(&self) -> &'static str {
        match self {
            Request::Timeline(request) => match request {
                TimelineRequest::Open { .. } => "timeline-open",
                TimelineRequest::View(_) => "timeline-view",
                TimelineRequest::Motion { .. } => "timeline-motion",
                TimelineRequest::Pick { .. } => "timeline-pick",
                TimelineRequest::Details { .. } => "timeline-details",
                TimelineRequest::Search { .. } => "timeline-search",
            },
            Request::Prompts { .. } => "prompts",
            Request::Perfetto { .. } => "perfetto",
            Request::Retrain { .. } => "retrain",
            Request::BundledModel { .. } => "bundled-model",
        }
    }
}

impl ToWorker {
    /// What the message hands over to the worker rather than copies: the canvas.
    pub fn transfer(&self) -> js_sys::Array {
        match self {
            ToWorker::Canvas { canvas } => js_sys::Array::of1(canvas),
            _ => js_sys::Array::new(),
        }
    }

    /// The message's kind, for measuring its cost (`page::cost`).
    pub fn kind(&self) -> &'static str {
        match self {
            ToWorker::Analyze { .. } => "analyze",
            ToWorker::Canvas { .. } => "canvas",
            ToWorker::Request { request, .. } => request.kind(),
            ToWorker::Parse(_) => "parse",
        }
    }
}
