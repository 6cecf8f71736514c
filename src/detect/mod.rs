//! The catalogue of performance anti-patterns: one detector per module, each with its gate,
//! evidence, the time it costs and the fix.
//!
//! Three parts: `contract.rs`, what every detector implements and returns (the finding types,
//! `judge`, the arithmetic on the [`Analysis`] they read, made in `src/analysis.rs`); one file
//! per detector; and `registry.rs`, the list of them in claim order and [`run`]. This file only
//! names them: the detectors import the contract, the registry imports both, and nothing imports
//! from here (`tests/layers.rs`).
//!
//! Reads the model, the windows, the metrics and the step attribution ([`Analysis`]); writes
//! [`Finding`]s and [`Note`]s. Every detector measures one quantity per steady-state step and
//! states its gate on it ([`Gate`]); [`judge`] keeps a finding only where the gate holds in at
//! least half of the steady steps and the time it explains is measurable, claims that time from
//! the step attribution through a [`Ledger`] (so findings never count the same time twice and
//! never sum past the step), and derives severity and confidence from the measurements.
//! Observations without a time cost ([`Observer`]s), and gates that hold too rarely or cost too
//! little, become notes, never ranked with findings.
//!
//! The numbers: a finding's claimed time must be at least 0.5% of the step (or 3% of GPU busy
//! time); severity is high from 20% of the step, medium from 5%; confidence is the share of
//! steady steps where the gate holds times a margin factor (0.5 at the threshold, 1 from twice
//! it). Training-only detectors (optimizer, `zero_grad`) skip inference traces; the DataLoader
//! is waited on in any pipeline. Causes claim before symptoms (`Detector::symptom`), and a
//! symptom's finding names the causes that already hold part of its time. On a CPU-only trace
//! (`Analysis::cpu_only`) the detectors that can see their pattern on the host claim host time.
//! Detectors read [`Analysis`] only and never each other; the ranking (time recoverable per
//! step) is made once, in [`run`]. The per-step arithmetic they share is in the contract, written once:
//! rates and means over the steady steps ([`Analysis::per_step`], [`Analysis::steady_mean_by`]),
//! shares of a step ([`Analysis::pct_of_step`], `part_checks`, `interval_checks`) and the
//! evidence of the steps where a gate holds ([`Judged::events_where`]).

mod allocator;
mod attention;
mod communication;
mod compile;
mod contract;
mod copies;
mod dataloader;
mod distributed;
mod fusion;
mod host_sync;
mod launch_bound;
mod layout;
mod optimizer;
mod pageable_copy;
mod registry;
pub mod scoring;
mod tensor_cores;
mod utilization;

pub use contract::*;
pub use registry::*;
