//! TorchTraceAP: find performance anti-patterns in PyTorch profiler traces.
//!
//! One data flow, one way: bytes → [`ingest`] (streaming) → [`model`] (normalized, compact) →
//! [`summary`] (what a trace holds) → front ends (the `ttap` CLI; the web app).
//! Each stage reads only the one before it. See ARCHITECTURE.md for the map.

pub mod attribution;
pub mod compare;
pub mod detect;
pub mod features;
#[cfg(not(target_arch = "wasm32"))]
pub mod files;
pub mod fleet;
pub mod graphs;
pub mod ingest;
pub mod llm;
pub mod memory;
pub mod metrics;
pub mod ml;
pub mod model;
pub mod modules;
pub mod perfetto;
pub mod profile;
pub mod report;
pub mod roofline;
pub mod run;
pub mod share;
pub mod summary;
pub mod timeline;
pub mod view_link;
pub mod window;
