//! TorchTraceAP: find performance anti-patterns in PyTorch profiler (Kineto) traces.
//!
//! An embedder reads a trace, analyzes it once and asks the analyzed trace for its views:
//!
//! ```text
//! let ingested = ingest_bytes(&bytes, IngestOptions::default())?;
//! let analyzed = AnalyzedTrace::new(&ingested);
//! let (report, fingerprint) = (analyzed.report(), analyzed.fingerprint());
//! ```
//!
//! The names for that are re-exported here, one line each; every front end (`cli/`, `web/`,
//! `python/`) and tool (`dev/`) goes through [`AnalyzedTrace`] rather than running the stages
//! itself (`tests/layers.rs` checks). The stages that turn a trace into findings (`window`,
//! `metrics`, `attribution`, `features`, `graphs`, `analysis`, `detect`) are private: what the
//! front ends show of them is re-exported here, and the development tools and the tests reach
//! the rest through [`internals`], which promises nothing. The modules of the views (links,
//! comparisons, the timeline, the LLM client, the window model) are public. A module names only
//! modules of lower layers (`tests/layers.rs` lists them; ARCHITECTURE.md explains the order and
//! the data flow).

// Reading a trace.
/// Native: reads a trace file on threads (the same model for any number).
#[cfg(not(target_arch = "wasm32"))]
pub use files::read_on;
/// Native: files and folders analyzed as `ttap analyze` does (reports, the run view).
#[cfg(not(target_arch = "wasm32"))]
pub use files::Analyzed;
/// Reads a whole trace (Kineto JSON, plain or gzip) from bytes.
pub use ingest::ingest_bytes;
/// Reads a whole trace from a `Read` source, in chunks, with progress.
pub use ingest::ingest_reader;
/// Why a trace could not be read: what was found, what was expected, what to do.
pub use ingest::IngestError;
/// How a trace is read (limits, what to keep).
pub use ingest::IngestOptions;
/// A trace read: the model and what reading it met (skipped events, warnings).
pub use ingest::Ingested;

// Analyzing it.
/// A trace prepared for the detectors: its steps, windows, splits and metrics.
pub use analysis::Analysis;
/// A trace analyzed once: its analysis, findings, report, fingerprint and every view of them.
pub use analyzed::AnalyzedTrace;
/// What a finding's time is split by: the parts of a step (data, host, kernels, idle, …).
pub use attribution::Part;
/// The ranked findings and notes of the rules.
pub use detect::Detected;
/// One anti-pattern found: its cost, evidence and fixes.
pub use detect::Finding;
/// A finding's severity (`--fail-on`).
pub use detect::Severity;
/// The rules, in the order they claim time, and the observers (`ttap analyze --list`).
pub use detect::{DETECTORS, OBSERVERS};
/// A window's features, as the window model reads them.
pub use features::WindowFeatures;
/// A share in percent, and a spread of values over steps.
pub use metrics::{pct, Spread};
/// The normalized trace: event columns, tracks, launch links, steps.
pub use model::Trace;

// The report and what the views read.
/// Two profiles compared: the before/after verdict.
pub use compare::Comparison;
/// Memory per device over time.
pub use memory::Memory;
/// Time per `nn.Module` or label frame.
pub use modules::ModuleTree;
/// A trace reduced for comparisons and run views.
pub use profile::Profile;
/// The versioned report of the rules and the window model (saved, linked, read back).
pub use report::Report;
/// Why a saved report could not be read back.
pub use report::ReportError;
/// Kernels on the roofline; the step's MFU.
pub use roofline::Roofline;
/// The ranks of one run: stragglers, imbalance.
pub use run::RunView;
/// What a trace holds: devices, steps, top kernels.
pub use summary::Summary;

// The modules (their layers: `tests/layers.rs`); the stages are private.
mod analysis;
pub mod analyzed;
mod attribution;
pub mod compare;
mod detect;
mod features;
#[cfg(not(target_arch = "wasm32"))]
pub mod files;
pub mod fleet;
mod graphs;
pub mod ingest;
pub mod llm;
pub mod memory;
mod metrics;
pub mod ml;
pub mod model;
pub mod modules;
pub mod perfetto;
pub mod profile;
pub mod report;
pub mod roofline;
pub mod run;
pub mod serving;
pub mod share;
pub mod summary;
pub mod timeline;
pub mod view_link;
mod window;

/// The stages behind [`AnalyzedTrace`], for the development tools (`dev/`, `ttap-dev`), the
/// fuzz targets and the tests: the rules' registry and scoring, the window features, the
/// metrics. No promise of stability; the user's front ends (`cli/`, `web/`, `python/`) never
/// name it (`tests/layers.rs` checks).
pub mod internals {
    pub mod analysis {
        pub use crate::analysis::*;
    }
    pub mod attribution {
        pub use crate::attribution::*;
    }
    pub mod detect {
        pub use crate::detect::*;
    }
    pub mod features {
        pub use crate::features::*;
    }
    pub mod graphs {
        pub use crate::graphs::*;
    }
    pub mod metrics {
        pub use crate::metrics::*;
    }
    pub mod window {
        pub use crate::window::*;
    }
}
