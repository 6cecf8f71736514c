//! A labelled trace generator: Kineto traces of vision-model steps, with anti-patterns injected
//! at chosen steps, and the labels saying where.
//!
//! The traces follow what the shared real traces show: `ProfilerStep#N` ranges, a DataLoader
//! range, the input's host-to-device copy, `## forward ##` with the ATen op nesting of each
//! layer (and autocast's weight cast before each layer with weights, with its backward),
//! backward on autograd's own thread, a fused optimizer; every kernel launched by a
//! runtime call that shares its correlation id (and an `ac2g` flow); kernel names of the GPU's
//! generation; a slower first step (autotuning, first allocations) that analyses treat as
//! warm-up; jitter on every duration. The output is deterministic for a given seed.
//!
//! Writes only JSON text; reads nothing but its configuration.
//!
//! Its parts: `config` (what to generate: configurations, anti-patterns, labels, scenarios),
//! `zoo` (the models' layer tables), `writer` (the Kineto events and their clocks),
//! `generate` (steps, injections and noise; the ranks of a data-parallel run) and [`gpu`].

mod config;
mod generate;
pub mod gpu;
mod writer;
mod zoo;

pub use config::{scenario, Config, DataParallel, Injection, Label, FIRST_STEP};
pub use generate::{generate, generate_ranks, Generated};
pub use gpu::Gpu;
pub use torchtraceap::ml::GENERATOR_VERSION;
/// The catalogue of injectable anti-patterns lives with the model (`model::anti_pattern`).
pub use torchtraceap::model::AntiPattern;
pub use zoo::Model;
