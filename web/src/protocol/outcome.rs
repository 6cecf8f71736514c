//! What a load yields per file: its progress, and its outcome (an analyzed trace, a saved
//! report, a fleet report, or why there is none).

use serde::{Deserialize, Serialize};
use torchtraceap::fleet::Fleet;
use torchtraceap::modules::ModuleTree;
use torchtraceap::profile::Profile;
use torchtraceap::report::Report;
use torchtraceap::summary::Summary;

use super::errors::FileError;

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

/// An early look at a large trace, posted before it is read whole (`worker::early`): the report
/// of its first whole steps, read from a part of the file (`ingest::early`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyLook {
    pub file: usize,
    /// The first and last step numbers it holds, and how many.
    pub steps: (i64, i64),
    pub whole_steps: usize,
    /// Bytes read of the file's `len`.
    pub read: u64,
    pub len: u64,
    pub report: Report,
}
