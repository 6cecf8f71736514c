//! Why a file, a request or a retrain failed, as facts: the page words them (`page::errors`).

use serde::{Deserialize, Serialize};
use torchtraceap::ingest::IngestError;
use wasm_bindgen::JsValue;

use crate::js;

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
    /// The capture trace `name` given beside the file could not be read: why.
    Capture { name: String, error: Box<FileError> },
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
}
