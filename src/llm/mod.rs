//! The LLM stage: compact summaries of the flagged windows, sent to an endpoint the user
//! chooses, and the answers read back.
//!
//! - [`summary`]: the flagged windows as bounded, deterministic text; the prompts.
//! - [`redact`]: names, paths and hosts replaced by placeholders before anything is sent.
//! - [`protocol`]: request bodies, stream parsers, answer parsing and error mapping, without a
//!   transport (the web app sends with `fetch` and feeds the same parsers).
//! - [`check`]: an answer checked against what was sent (figures, names, the anti-pattern).
//! - [`client`] (native only): the CLI's blocking HTTP transport.
//! - [`eval`] (native only): a labelled set of windows, and the grades of the answers about them.

pub mod check;
#[cfg(not(target_arch = "wasm32"))]
pub mod client;
#[cfg(not(target_arch = "wasm32"))]
pub mod eval;
pub mod protocol;
pub mod redact;
pub mod summary;
