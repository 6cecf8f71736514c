//! The messages between the page and the analysis worker.
//!
//! The worker says `Ready` once its message handler is installed (messages posted before that
//! would be lost: the wasm module starts asynchronously). The page then posts the `File`s (or
//! `Blob`s) to analyze as a JS array: files are handed over by reference, never copied whole. The
//! worker answers with [`FromWorker`] messages, each one JSON text, in this order: `Progress`* per
//! file, then that file's `Done`, and `Finished` at the end.

use serde::{Deserialize, Serialize};
use torchtraceap::detect::{self, Analysis};
use torchtraceap::ingest::Ingested;
use torchtraceap::report::Report;
use torchtraceap::share;
use torchtraceap::summary::Summary;

/// How many kernels and operators the tables keep (the largest by total time).
pub const TABLE_ROWS: usize = 500;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    Ready,
    Progress(Progress),
    Done(Box<Outcome>),
    Finished,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    pub result: Result<Analyzed, String>,
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
}

impl Analyzed {
    /// Runs the analysis stages on an ingested trace.
    pub fn of(ingested: &Ingested) -> Analyzed {
        let analysis = Analysis::new(&ingested.trace);
        let findings = detect::run(&analysis);
        Analyzed {
            summary: Some(Summary::of(ingested, TABLE_ROWS)),
            report: Report::new(&analysis, &findings),
            fingerprint: Some(share::fingerprint(&ingested.trace)),
        }
    }
}
