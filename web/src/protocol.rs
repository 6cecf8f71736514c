//! The messages between the page and the analysis worker, and how they travel.
//!
//! Every message is an [`Envelope`] with this protocol's [`VERSION`], turned into a JavaScript
//! value by `serde-wasm-bindgen` and posted as is: the browser's structured clone carries it, no
//! JSON text is written or parsed. 64-bit integers travel as `BigInt`s (trace times in ns since
//! 1970 exceed a double's 53 bits). The `File`s to analyze and the timeline's `OffscreenCanvas`
//! travel inside the messages as the browser's own handles (`serde_wasm_bindgen::preserve`):
//! files by reference (never copied whole), the canvas transferred ([`ToWorker::transfer`]).
//! Nothing else is large enough to gain from a transfer: the worker reads the files' bytes
//! itself and draws the timeline's frames straight into the canvas.
//!
//! The worker says `Ready` once its message handler is installed (messages posted before that
//! would be lost: the wasm module starts asynchronously). The page then posts
//! [`ToWorker::Analyze`]; the worker answers with [`FromWorker`] messages in this order:
//! `Progress`* per file, then that file's `Done`, and `Finished` at the end.
//!
//! The worker then stays: it keeps each analyzed trace and answers the page's [`ToWorker`]
//! requests about them, such as a search, each with one reply. The page gives each file of a
//! load its own worker (`page::pool`) and keeps only one of them, holding one trace: a request
//! about another file goes to a new worker that reads that file again ([`ToWorker::file`]).
//!
//! A file's worker may start helpers (the same worker script) to read a large trace by byte
//! ranges (`worker::ranges`): it posts each a [`ToWorker::Parse`] with the file's `Blob`, and each
//! answers with a [`FromWorker::Parsed`], whose framed state is bincode in an `ArrayBuffer`
//! transferred with it ([`FromWorker::transfer`]). These never reach the page.
//!
//! The messages are this module's enums. What they carry of the core (the report, the trace's
//! summary, timeline places and bands, LLM prompts) travels in the core's own serde form: for
//! the report, the versioned document a saved report holds (`report::VERSION`). Page and worker
//! are built from one source, so such a change reaches both sides at once; bump [`VERSION`]
//! when it changes a message's shape, so that a cached worker of the older build is refused.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use torchtraceap::fleet::Fleet;
use torchtraceap::ingest::IngestError;
use torchtraceap::llm::summary::{Prompt, SummaryOptions};
use torchtraceap::ml::labels::WindowLabel;
use torchtraceap::modules::ModuleTree;
use torchtraceap::profile::Profile;
use torchtraceap::report::Report;
use torchtraceap::summary::Summary;
use torchtraceap::timeline::bands::Band;
use torchtraceap::timeline::inspect::{Details, Place};
use torchtraceap::timeline::layout::CounterPeak;
use torchtraceap::AnalyzedTrace;
use wasm_bindgen::JsValue;
use web_sys::{Blob, DedicatedWorkerGlobalScope, OffscreenCanvas};

use crate::js;

/// The protocol's version, checked on every message: the page and the worker are built together,
/// but a browser may still run a cached worker script next to a newer page. Version 1 was JSON
/// text; 2 is structured clone through `serde-wasm-bindgen`; 3 opens fleet reports
/// ([`Document::Fleet`]), retrains the window model (`Retrain`, `BundledModel`, `Retrained`),
/// numbers an `Analyze`'s files from its `first` (one worker per file of a load) and gives the
/// worker a memory limit; 4 draws the timeline on the worker's own animation frames (a `View`'s
/// `seq` and `motion`, `TimelineRequest::Motion`, and the view and frame time in `Drawn`) and
/// reads one trace with several workers (`Analyze::workers`, the worker-to-worker `Parse` and
/// `Parsed`, `Progress::workers`); 5 marks memory peaks on the timeline (`Drawn::memory_peaks`,
/// `Picked::MemoryPeak`); 6 types its errors (`FileError`, `RequestError`, `RetrainError`,
/// `LeftOut`), which the page words.
pub const VERSION: u32 = 6;

/// What is posted: a message and the version of the protocol it belongs to.
#[derive(Serialize, Deserialize)]
struct Envelope<M> {
    version: u32,
    message: M,
}

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error(
        "a message of protocol version {found}, where version {VERSION} is expected: the page \
         and its worker come from different builds of the site; reload the page"
    )]
    Version { found: String },
    #[error("a message that does not decode ({0}): a bug in TorchTraceAP")]
    Decode(String),
}

/// The JavaScript value to post for `message`.
pub fn encode<M: Serialize>(message: &M) -> Result<JsValue, ProtocolError> {
    let envelope = Envelope {
        version: VERSION,
        message,
    };
    envelope
        .serialize(
            &serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true),
        )
        .map_err(|e| ProtocolError::Decode(e.to_string()))
}

/// The message in a posted value, when its version is this protocol's.
pub fn decode<M: DeserializeOwned>(value: JsValue) -> Result<M, ProtocolError> {
    let version = js_sys::Reflect::get(&value, &JsValue::from_str("version")).ok();
    if version.as_ref().and_then(JsValue::as_f64) != Some(f64::from(VERSION)) {
        return Err(ProtocolError::Version {
            found: version.map_or_else(|| "none".into(), |v| format!("{v:?}")),
        });
    }
    serde_wasm_bindgen::from_value::<Envelope<M>>(value)
        .map(|envelope| envelope.message)
        .map_err(|e| ProtocolError::Decode(e.to_string()))
}

/// How many kernels and operators the tables keep (the largest by total time).
pub const TABLE_ROWS: usize = 500;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    Ready,
    Progress(Progress),
    Done(Box<Outcome>),
    Finished,
    Timeline(Box<TimelineReply>),
    /// The answer to `Request::Prompts`: the options it was made with (the page drops a reply
    /// for settings it no longer has), and the prompts or why there are none.
    Prompts {
        file: usize,
        options: SummaryOptions,
        result: Result<Vec<Prompt>, RequestError>,
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
    /// Worker to worker: the answer to `ToWorker::Parse`.
    Parsed(Box<Parsed>),
}

impl FromWorker {
    /// The message's kind, for measuring its cost (`page::cost`).
    pub fn kind(&self) -> &'static str {
        match self {
            FromWorker::Ready => "ready",
            FromWorker::Progress(_) => "progress",
            FromWorker::Done(_) => "done",
            FromWorker::Finished => "finished",
            FromWorker::Timeline(reply) => match **reply {
                TimelineReply::Opened(_) => "timeline-opened",
                TimelineReply::Drawn(_) => "timeline-drawn",
                TimelineReply::Picked { .. } => "timeline-picked",
                TimelineReply::Found(_) => "timeline-found",
                TimelineReply::Failed { .. } => "timeline-failed",
            },
            FromWorker::Prompts { .. } => "prompts",
            FromWorker::Perfetto { .. } => "perfetto",
            FromWorker::Retrained(_) => "retrained",
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
    },
    /// The timeline's canvas, which the worker draws into from then on; posted before the first
    /// `View`, transferred ([`ToWorker::transfer`]).
    Canvas {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        canvas: OffscreenCanvas,
    },
    /// A question about an analyzed file, answered with one message.
    Request(Request),
    /// Fit a window model on the bundled base set plus these kept labels (those of the traces
    /// this worker holds) and rescore every trace with it; answered by `Retrained`.
    Retrain { labels: Vec<WindowLabel> },
    /// Rescore every trace with the bundled model again (the kept labels name the windows in
    /// the reply); answered by `Retrained`.
    BundledModel { labels: Vec<WindowLabel> },
    /// Worker to worker: frame a byte range of a trace; answered by `FromWorker::Parsed`.
    Parse(Box<Parse>),
}

/// A question about an analyzed file; `Session::answer` replies with one [`FromWorker`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// A request about the file's timeline; answered by `FromWorker::Timeline`.
    Timeline(TimelineRequest),
    /// The LLM prompts of the file's flagged windows (`llm::summary::summarize`, then
    /// `prompts`); answered by `FromWorker::Prompts`. Nothing is sent anywhere: the page shows
    /// them, and sends one only when the user asks.
    Prompts {
        file: usize,
        options: SummaryOptions,
    },
    /// The file's trace and analysis for Perfetto UI (`perfetto::write`, whole); answered by
    /// `FromWorker::Perfetto`.
    Perfetto { file: usize },
}

impl ToWorker {
    /// What the message hands over to the worker rather than copies: the canvas.
    pub fn transfer(&self) -> js_sys::Array {
        match self {
            ToWorker::Canvas { canvas } => js_sys::Array::of1(canvas),
            _ => js_sys::Array::new(),
        }
    }

    /// The file the message is about, if it is about one: the worker that holds that file's
    /// trace must answer it.
    pub fn file(&self) -> Option<usize> {
        match self {
            // Retraining is about the traces of the worker that gets it: the page sends it to
            // the worker of the file shown (`page::App::retrain`).
            ToWorker::Analyze { .. }
            | ToWorker::Canvas { .. }
            | ToWorker::Retrain { .. }
            | ToWorker::BundledModel { .. }
            | ToWorker::Parse(_) => None,
            ToWorker::Request(Request::Prompts { file, .. } | Request::Perfetto { file }) => {
                Some(*file)
            }
            ToWorker::Request(Request::Timeline(request)) => Some(match request {
                TimelineRequest::Open { file }
                | TimelineRequest::Motion { file, .. }
                | TimelineRequest::Details { file, .. }
                | TimelineRequest::Search { file, .. } => *file,
                TimelineRequest::View(view) | TimelineRequest::Pick { view, .. } => view.file,
            }),
        }
    }

    /// The message's kind, for measuring its cost (`page::cost`).
    pub fn kind(&self) -> &'static str {
        match self {
            ToWorker::Analyze { .. } => "analyze",
            ToWorker::Canvas { .. } => "canvas",
            ToWorker::Request(Request::Timeline(request)) => match request {
                TimelineRequest::Open { .. } => "timeline-open",
                TimelineRequest::View(_) => "timeline-view",
                TimelineRequest::Motion { .. } => "timeline-motion",
                TimelineRequest::Pick { .. } => "timeline-pick",
                TimelineRequest::Details { .. } => "timeline-details",
                TimelineRequest::Search { .. } => "timeline-search",
            },
            ToWorker::Request(Request::Prompts { .. }) => "prompts",
            ToWorker::Request(Request::Perfetto { .. }) => "perfetto",
            ToWorker::Retrain { .. } => "retrain",
            ToWorker::BundledModel { .. } => "bundled-model",
            ToWorker::Parse(_) => "parse",
        }
    }
}

/// What the timeline asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TimelineRequest {
    /// Lay out the file's timeline; answered by `Opened`.
    Open { file: usize },
    /// Draw this view from now on, moved by its `motion`; answered by a `Drawn` per animation
    /// frame that shows a new image (`worker::frames`): views posted before the next frame
    /// replace each other, never queue.
    View(View),
    /// The keys held changed: move the view drawn (wherever its motion got to) by `motion`
    /// from now on; answered by the frames drawn, like a `View`.
    Motion { file: usize, motion: Motion },
    /// What lies at `(x, y)` (CSS pixels on the canvas) in this view; answered by `Picked`.
    Pick { view: View, x: f64, y: f64 },
    /// One slice's details; answered by `Picked`.
    Details { file: usize, event: u32 },
    /// Slices whose name contains `text`, ignoring case; answered by `Found`.
    Search { file: usize, text: String },
}

/// The worker's answers to the timeline's requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TimelineReply {
    Opened(Opened),
    Drawn(Drawn),
    Picked {
        file: usize,
        picked: Picked,
    },
    Found(Found),
    /// A request the worker could not answer (a file it has no trace of, a canvas it cannot
    /// draw on); `drawing` when it was a `View`.
    Failed {
        error: RequestError,
        drawing: bool,
    },
}

/// A view of the timeline: the time range shown, the canvas size and what is selected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub file: usize,
    /// Nanoseconds from the trace's start (`Opened::span.0`): offsets, because the trace's own
    /// times (often ns since 1970) lose precision as `f64`; fractional while zooming.
    pub start: f64,
    pub end: f64,
    /// CSS pixels, and device pixels per CSS pixel.
    pub width: f64,
    pub height: f64,
    pub ratio: f64,
    /// Vertical scroll of the tracks, in CSS pixels.
    pub scroll: f64,
    /// Indices of the collapsed groups.
    pub collapsed: Vec<u32>,
    pub selected: Option<u32>,
    /// Scroll so that this slice's row shows (a search match, a followed flow).
    pub reveal: Option<u32>,
    /// A time range selected with the box, ns from the trace's start.
    pub range: Option<(f64, f64)>,
    /// The finding whose bands are highlighted.
    pub finding: Option<String>,
    /// The page numbers its views: a `Drawn` says which one it moved from, and the page takes
    /// the range drawn as its own only from a reply to its latest view.
    pub seq: u64,
    /// How the held keys move the view, per millisecond of the worker's frames.
    pub motion: Motion,
}

/// How the view moves while W/S/A/D are held (`worker::frames::advance`): per millisecond,
/// the span is scaled by `exp(zoom)` around the time under `x`, then moved by `pan` spans.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Motion {
    pub zoom: f64,
    pub pan: f64,
    /// The pointer's x on the canvas, CSS pixels.
    pub x: f64,
}

/// A file's timeline is laid out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Opened {
    pub file: usize,
    /// Earliest start and latest end, ns.
    pub span: (i64, i64),
    pub slices: u64,
    pub rows: u64,
    /// The flagged windows, for moving to a finding.
    pub bands: Vec<Band>,
    /// Time to lay the timeline out, ms.
    pub layout_ms: f64,
}

/// A view was drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drawn {
    pub file: usize,
    /// The `seq` of the page's view this frame was moved from.
    pub seq: u64,
    /// The range drawn (the view's, moved by its motion), ns from the trace's start.
    pub start: f64,
    pub end: f64,
    /// The animation frame the image was committed in: its time (ms since 1970, from the
    /// worker's `performance.timeOrigin`), so that the interval between frames shown can be
    /// measured.
    pub frame_at: f64,
    /// Time to draw it, ms.
    pub draw_ms: f64,
    /// Height of all tracks as shown (for scrolling), CSS pixels.
    pub content_height: f64,
    /// The vertical scroll drawn (the view's, moved to reveal a slice, kept in bounds).
    pub scroll: f64,
    /// Spans drawn (after level-of-detail merging).
    pub spans: u64,
    /// Where the selected slice was drawn, `[x, y, width, height]` in CSS pixels, if it shows.
    pub selected_box: Option<[f64; 4]>,
    /// Slices in the selected range, when there is one: `(kind label, count, total ns)`.
    pub in_range: Vec<(String, u64, i64)>,
    /// Where the memory tracks' peaks were drawn, `[x, y]` in CSS pixels, those that show.
    pub memory_peaks: Vec<[f64; 2]>,
}

/// What lies under a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Picked {
    Slice(Box<Details>),
    /// A group's header (to collapse or expand it).
    Group {
        index: u32,
    },
    /// A flagged window's band: the finding's id.
    Band {
        finding: String,
    },
    /// A memory track's peak: the track's label (`memory, cuda:0`) and the peak.
    MemoryPeak {
        track: String,
        peak: Box<CounterPeak>,
    },
    Nothing,
}

/// Search results, at most [`MAX_FOUND`] of them, in time order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Found {
    pub file: usize,
    pub text: String,
    /// How many slices match, all told.
    pub total: usize,
    pub places: Vec<Place>,
}

/// Search results sent back, at most.
pub const MAX_FOUND: usize = 1000;

/// The traces rescored by a retrained model (or the bundled one again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retrained {
    /// The retrained model's file (`ml::Model` as JSON, the form of
    /// `models/window-forest.json`); `None` for the bundled model.
    pub model: Option<String>,
    /// The kept labels fitted on, and why each of the others was left out.
    pub used: usize,
    pub left_out: Vec<LeftOut>,
    /// Windows of the base set fitted on.
    pub base_windows: usize,
    /// Time to fetch and read the base set (0 once cached), and to fit, ms.
    pub base_ms: f64,
    pub fit_ms: f64,
    pub files: Vec<Rescored>,
}

/// Why the worker could not answer a request about a file; the page words it
/// (`page::errors`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RequestError {
    /// File `file` (an index) has no trace in this worker: a saved report, a shared link or a
    /// file that could not be read.
    NoTrace { file: usize },
    /// File `file` has no slice `event`.
    NoSlice { file: usize, event: u32 },
    /// The timeline's canvas was never handed to the worker.
    NoCanvas,
    /// The browser gave no 2D context for the timeline's canvas.
    NoContext,
    /// Drawing the timeline failed: the browser's words.
    Draw { detail: String },
    /// The Perfetto export could not be written: the library's words.
    Export { detail: String },
}

/// Why no model was retrained (the traces keep their scores); the page words it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RetrainError {
    /// The base set could not be fetched from `url` (on the site): `detail` says how it failed.
    Fetch { url: String, detail: String },
    /// The base set fetched from `url` cannot be read.
    BaseSet { url: String, detail: String },
    /// None of the `labels` kept labels names a window of the traces held; why each was left
    /// out.
    NoLabelHere {
        labels: usize,
        left_out: Vec<LeftOut>,
    },
    /// Fitting on the base set and `labels` labels failed: smartcore's words.
    Fit { labels: usize, detail: String },
}

/// Why a kept label was not fitted on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LeftOut {
    /// It names no window of its trace: step, phase, window (`None`: any), the trace's name.
    NoWindow {
        step: i64,
        phase: String,
        window: Option<usize>,
        trace: Option<String>,
    },
    /// Its pattern is no class of the window model.
    NoClass { pattern: String },
    /// `labels` labels are for another trace than those held (its name and fingerprint).
    OtherTrace {
        labels: usize,
        trace: Option<String>,
        fingerprint: Option<String>,
    },
}

/// One trace rescored: its report with the new scores, and the windows whose score moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rescored {
    pub file: usize,
    pub report: Report,
    pub changes: Vec<WindowChange>,
}

/// A window whose score moved, in window order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowChange {
    pub step: i64,
    pub phase: String,
    /// The window's index among its step's windows.
    pub window: usize,
    pub before: f32,
    pub after: f32,
    pub flagged_before: bool,
    pub flagged_after: bool,
    /// The pattern of the kept label for this window, if any.
    pub label: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Index of the file in the posted list.
    pub file: usize,
    pub name: String,
    pub stage: Stage,
    /// Bytes of the file read so far, out of `total_bytes`.
    pub bytes: u64,
    pub total_bytes: u64,
    /// Events read so far.
    pub events: u64,
    /// The worker's wasm memory now.
    pub memory_bytes: u64,
    /// Workers reading the file (1, or its worker's helpers).
    pub workers: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    Reading,
    Analyzing,
}

/// One file's result: its analysis, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub file: usize,
    pub name: String,
    pub size: u64,
    /// The worker's wasm memory after this file: its peak so far (wasm memory only grows).
    pub worker_memory_bytes: u64,
    pub result: Result<Document, FileError>,
}

/// Why a file has no analysis, as facts: the page words them (`page::errors`), with what
/// failed, where, and what to do. The worker finds most; the page the rest (a worker that
/// could not start or stopped, a link that cannot be read).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FileError {
    /// The browser failed a `step` of reading the file; `detail` is its own message.
    Read { step: ReadStep, detail: String },
    /// The file ended at byte `at`, before `end`: it changed since it was chosen.
    Ended { at: u64, end: u64 },
    /// The bytes are no trace the library reads: its `IngestError`'s message (what it found,
    /// what it expected, what to do).
    Trace { detail: String },
    /// Reading took the worker's wasm memory to `memory`, past its `limit`, after `read` of
    /// the file's `total` bytes.
    TooLarge {
        read: u64,
        total: u64,
        memory: u64,
        limit: u64,
    },
    /// A saved report that cannot be read back: `ReportError`'s message.
    Report { detail: String },
    /// A saved report read back that this version will not show (`share::render` refused it).
    ReportNotShown { detail: String },
    /// A fleet report that cannot be shown: `FleetError`'s message.
    Fleet { detail: String },
    /// Worker to worker: a range's framed state could not be written.
    State { detail: String },
    /// Worker to worker: a helper stopped, or a message to or from it failed (the coordinator
    /// reads its ranges itself).
    Helper { detail: String },
    /// The page could not start the file's worker.
    NoWorker { detail: String },
    /// The page could not hand the file to its worker.
    NotHandedOver { detail: String },
    /// The file's worker stopped on an uncaught error (`detail`), before the file's outcome.
    Stopped { detail: String },
    /// A shared link that cannot be read: `ShareError`'s message.
    Link { detail: String },
}

/// The step of reading a file that the browser failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadStep {
    /// The whole file as text (a saved report or fleet report).
    Whole,
    /// Taking bytes `start..end` of it (`Blob.slice`).
    Slice { start: u64, end: u64 },
    /// Starting a stream over bytes `start..end`.
    Stream { start: u64, end: u64 },
    /// Reading bytes `at..end` from that stream.
    Bytes { at: u64, end: u64 },
}

impl From<IngestError> for FileError {
    fn from(e: IngestError) -> FileError {
        FileError::Trace {
            detail: e.to_string(),
        }
    }
}

impl FileError {
    /// A JavaScript failure at `step`, with its own words.
    pub fn read(step: ReadStep, error: &JsValue) -> FileError {
        FileError::Read {
            step,
            detail: js::detail(error),
        }
    }

    /// Reading stopped where `progress` got to: memory past `limit`.
    pub fn too_large(progress: &Progress, limit: u64) -> FileError {
        FileError::TooLarge {
            read: progress.bytes,
            total: progress.total_bytes,
            memory: progress.memory_bytes,
            limit,
        }
    }
}

/// What a file held: a trace (analyzed) or a saved report, or a fleet report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Document {
    Analysis(Box<Analyzed>),
    /// A fleet report (`scripts/fleet/fleet.py`), checked by `Fleet::from_json`.
    Fleet(Box<Fleet>),
}

impl Outcome {
    /// The analysis the views show; `None` for a file that failed or a fleet report.
    pub fn analyzed(&self) -> Option<&Analyzed> {
        match &self.result {
            Ok(Document::Analysis(a)) => Some(a),
            _ => None,
        }
    }

    pub fn fleet(&self) -> Option<&Fleet> {
        match &self.result {
            Ok(Document::Fleet(f)) => Some(f),
            _ => None,
        }
    }
}

/// What the views show of one trace: its summary and report; or, for a saved report opened
/// again, the report alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analyzed {
    pub summary: Option<Summary>,
    pub report: Report,
    /// `share::fingerprint` of the trace: how a shared link finds its trace again. `None` for a
    /// saved report opened again.
    pub fingerprint: Option<String>,
    /// The trace's compact profile, which the page compares with another file's (the Compare
    /// view) or puts beside the other ranks' (the Run view): kilobytes, so the page does that
    /// bounded work itself. `None` for a saved report or a link.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// GPU and CPU time per model module (`modules::ModuleTree`), when the trace has module
    /// frames; the worker adds it. `None` otherwise, and for a report or a link.
    #[serde(default)]
    pub modules: Option<ModuleTree>,
}

impl Analyzed {
    /// What the views show of an analyzed trace (`worker::session::Kept::new` analyzes it once
    /// and keeps it for later requests): its summary, report and fingerprint. The profile and
    /// the module tree are the worker's to add.
    pub fn of(trace: &AnalyzedTrace<'_>) -> Analyzed {
        Analyzed {
            summary: Some(trace.summary(TABLE_ROWS)),
            report: trace.report().clone(),
            fingerprint: Some(trace.fingerprint().to_string()),
            profile: None,
            modules: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchtraceap::timeline::inspect::Details;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn place(event: u32) -> Place {
        Place {
            event,
            name: "volta_sgemm_64x64_nn".into(),
            start: 1_000,
            dur: 250,
            lane: "stream 7".into(),
            group: "GPU 0".into(),
        }
    }

    fn round_trip<M: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(message: M) {
        let value = encode(&message).expect("encodes");
        let back: M = decode(value).expect("decodes");
        assert_eq!(back, message);
    }

    /// Every reply the timeline gets crosses the page↔worker boundary whole, trace times in ns
    /// since 1970 (beyond a double's 53 bits) to the nanosecond.
    #[wasm_bindgen_test]
    fn every_timeline_reply_survives_the_trip_to_the_page() {
        let details = Details {
            place: place(3),
            category: "kernel".into(),
            kind: "gpu_kernel".into(),
            self_time: 250,
            args: vec![("grid".into(), "[1, 2, 3]".into())],
            stack: vec![place(1)],
            launched_by: Some(place(2)),
            launched: Vec::new(),
            graph: Some("launched by graph launch 1 of 1 (of 544 kernels)".into()),
        };
        let replies = [
            TimelineReply::Opened(Opened {
                file: 0,
                span: (1_700_000_000_123_456_789, 1_700_000_000_987_654_321),
                slices: 5,
                rows: 2,
                bands: Vec::new(),
                layout_ms: 1.5,
            }),
            TimelineReply::Drawn(Drawn {
                file: 0,
                seq: 1 << 40,
                start: 1.5,
                end: 2e12,
                frame_at: 1_764_655_000_123.25,
                draw_ms: 0.7,
                content_height: 400.0,
                scroll: 10.0,
                spans: 12,
                selected_box: Some([1.0, 2.0, 3.0, 4.0]),
                in_range: vec![("gpu_kernel".into(), 3, 900)],
                memory_peaks: vec![[250.5, 90.0]],
            }),
            TimelineReply::Picked {
                file: 0,
                picked: Picked::Slice(Box::new(details)),
            },
            TimelineReply::Picked {
                file: 0,
                picked: Picked::Group { index: 2 },
            },
            TimelineReply::Picked {
                file: 1,
                picked: Picked::Band {
                    finding: "dataloader-bottleneck".into(),
                },
            },
            TimelineReply::Picked {
                file: 1,
                picked: Picked::MemoryPeak {
                    track: "memory, cuda:0".into(),
                    peak: Box::new(CounterPeak {
                        at: 1_700_000_000_123_456_789,
                        allocated: 13_155_807_744,
                        reserved: Some(13_356_761_088),
                        op: Some("aten::empty".into()),
                        module: None,
                        capacity: Some(42_346_610_688),
                    }),
                },
            },
            TimelineReply::Picked {
                file: 1,
                picked: Picked::Nothing,
            },
            TimelineReply::Found(Found {
                file: 1,
                text: "sgemm".into(),
                total: 1,
                places: vec![place(3)],
            }),
            TimelineReply::Failed {
                error: RequestError::NoTrace { file: 3 },
                drawing: true,
            },
            TimelineReply::Failed {
                error: RequestError::Draw {
                    detail: "InvalidStateError".into(),
                },
                drawing: true,
            },
        ];
        for reply in replies {
            round_trip(FromWorker::Timeline(Box::new(reply)));
        }
        round_trip(FromWorker::Finished);
        let motion = Motion {
            zoom: -0.004,
            pan: 0.0012,
            x: 640.0,
        };
        let view = View {
            file: 1,
            start: 0.25,
            end: 3e12,
            width: 1280.0,
            height: 600.0,
            ratio: 2.0,
            scroll: 40.0,
            collapsed: vec![2],
            selected: Some(7),
            reveal: None,
            range: Some((1.0, 2.0)),
            finding: Some("host-device-sync".into()),
            seq: u64::MAX,
            motion: motion.clone(),
        };
        round_trip(ToWorker::Request(Request::Timeline(TimelineRequest::View(
            view,
        ))));
        round_trip(ToWorker::Request(Request::Timeline(
            TimelineRequest::Motion { file: 1, motion },
        )));
    }

    /// The LLM prompts and the options they were made with (every window: `usize::MAX`) cross
    /// the boundary both ways; a file without a trace gets its reason.
    #[wasm_bindgen_test]
    fn prompts_survive_the_trip_both_ways() {
        let options = SummaryOptions {
            max_windows: usize::MAX,
            redact: true,
            module_names: vec!["MyNet".into()],
            ..SummaryOptions::default()
        };
        let request = ToWorker::Request(Request::Prompts {
            file: 2,
            options: options.clone(),
        });
        round_trip(request);
        let prompt = Prompt {
            key: "finding:host-device-sync".into(),
            title: "Host-device sync (step 3)".into(),
            system: "S".into(),
            user: "Window: step 3 \"forward\"\n<name1>".into(),
            window_tokens: 5,
            tokens: 7,
            dropped_lines: 1,
        };
        round_trip(FromWorker::Prompts {
            file: 2,
            options: options.clone(),
            result: Ok(vec![prompt]),
        });
        round_trip(FromWorker::Prompts {
            file: 3,
            options,
            result: Err(RequestError::NoTrace { file: 3 }),
        });
    }

    /// The Perfetto export's request and its answer (the JSON, or why there is none).
    #[wasm_bindgen_test]
    fn the_perfetto_export_survives_the_trip() {
        let request = ToWorker::Request(Request::Perfetto { file: 1 });
        assert_eq!(request.file(), Some(1));
        round_trip(request);
        round_trip(FromWorker::Perfetto {
            file: 1,
            result: Ok(r#"{"traceEvents": [{"name": "\"</script>"}]}"#.into()),
        });
        round_trip(FromWorker::Perfetto {
            file: 1,
            result: Err(RequestError::Export {
                detail: "disk full".into(),
            }),
        });
    }

    /// Retraining's requests and replies cross the boundary whole: the labels, the model's file
    /// and why labels were left out, or why there is no model.
    #[wasm_bindgen_test]
    fn retraining_survives_the_trip_both_ways() {
        round_trip(ToWorker::Retrain {
            labels: vec![WindowLabel {
                step: 12,
                phase: "forward".into(),
                pattern: "none".into(),
                window: Some(1),
                trace: Some("rank0.pt.trace.json".into()),
                fingerprint: Some("fp1-0123456789abcdef".into()),
            }],
        });
        round_trip(ToWorker::BundledModel { labels: Vec::new() });
        round_trip(FromWorker::Retrained(Box::new(Ok(Retrained {
            model: Some(torchtraceap::ml::Model::embedded().to_json()),
            used: 1,
            left_out: vec![
                LeftOut::OtherTrace {
                    labels: 1,
                    trace: Some("other.json".into()),
                    fingerprint: None,
                },
                LeftOut::NoClass {
                    pattern: "your-gpu-is-broken".into(),
                },
            ],
            base_windows: 9436,
            base_ms: 80.5,
            fit_ms: 4900.0,
            files: Vec::new(),
        }))));
        round_trip(FromWorker::Retrained(Box::new(Err(
            RetrainError::NoLabelHere {
                labels: 2,
                left_out: vec![LeftOut::NoWindow {
                    step: 12,
                    phase: "forward".into(),
                    window: None,
                    trace: None,
                }],
            },
        ))));
        round_trip(FromWorker::Retrained(Box::new(Err(RetrainError::Fetch {
            url: "models/base-set.bin.gz".into(),
            detail: "HTTP 404".into(),
        }))));
    }

    /// A message from another build of the site is refused with a message saying to reload,
    /// whatever else it holds; a value that is no message at all is refused too.
    #[wasm_bindgen_test]
    fn a_message_of_another_version_is_refused() {
        let message = encode(&FromWorker::Finished).expect("encodes");
        js_sys::Reflect::set(&message, &"version".into(), &JsValue::from(1)).expect("sets");
        let refused = decode::<FromWorker>(message).expect_err("version 1 is not read");
        assert!(
            matches!(refused, ProtocolError::Version { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("reload the page"), "{refused}");
        let text = decode::<FromWorker>(JsValue::from_str("{\"type\":\"finished\"}"));
        assert!(
            matches!(text, Err(ProtocolError::Version { .. })),
            "{text:?}"
        );
        let wrong = encode(&FromWorker::Finished).expect("encodes");
        js_sys::Reflect::set(&wrong, &"message".into(), &JsValue::from(7)).expect("sets");
        assert!(matches!(
            decode::<FromWorker>(wrong),
            Err(ProtocolError::Decode(_))
        ));
    }

    /// A file's typed error crosses whole, with the figures the page words it from.
    #[wasm_bindgen_test]
    fn file_errors_survive_the_trip() {
        for error in [
            FileError::TooLarge {
                read: 48 << 20,
                total: 60 << 20,
                memory: 5 << 30,
                limit: 3 << 30,
            },
            FileError::Read {
                step: ReadStep::Bytes {
                    at: 1 << 40,
                    end: u64::MAX,
                },
                detail: "NotReadableError".into(),
            },
            FileError::Ended { at: 7, end: 512 },
        ] {
            round_trip(FromWorker::Done(Box::new(Outcome {
                file: 2,
                name: "rank2.json".into(),
                size: 60 << 20,
                worker_memory_bytes: 5 << 30,
                result: Err(error),
            })));
        }
    }

    /// The files to analyze travel as the browser's own handles, not as copies of their data.
    #[wasm_bindgen_test]
    fn files_travel_as_handles() {
        let blob = web_sys::Blob::new().expect("a blob");
        let files = js_sys::Array::of1(&blob);
        let value = encode(&ToWorker::Analyze {
            files: files.clone(),
            first: 3,
            memory_limit: 1 << 32,
            workers: 4,
        })
        .expect("encodes");
        let ToWorker::Analyze {
            files: back,
            first,
            memory_limit,
            workers,
        } = decode(value).expect("decodes")
        else {
            panic!("not an Analyze");
        };
        let sent: &JsValue = blob.as_ref();
        assert!(&back.get(0) == sent, "the same Blob object");
        assert_eq!((first, memory_limit, workers), (3, 1 << 32, 4));
        let analyze = ToWorker::Analyze {
            files,
            first,
            memory_limit,
            workers,
        };
        assert_eq!(analyze.transfer().length(), 0);
    }

    /// A real analysis (the bundled sample's summary and report: the core's flattened gate
    /// figures, tagged enums, optional fields and 64-bit times) crosses whole through the
    /// browser's structured clone, as `postMessage` carries it.
    #[wasm_bindgen_test]
    fn an_analysis_crosses_whole_through_structured_clone() {
        const SAMPLE: &[u8] =
            include_bytes!("../../www/samples/resnet50-a100-dataloader.pt.trace.json.gz");
        let ingested = torchtraceap::ingest::ingest_bytes(SAMPLE, Default::default())
            .expect("the sample ingests");
        let analyzed = Analyzed::of(&AnalyzedTrace::new(&ingested));
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
            .call1(&JsValue::UNDEFINED, &encode(&message).expect("encodes"))
            .expect("clones");
        assert_eq!(decode::<FromWorker>(posted).expect("decodes"), message);
    }
}
