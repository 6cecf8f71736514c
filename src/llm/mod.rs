//! The LLM stage: compact summaries of the flagged windows, sent to an endpoint the user
//! chooses, and the answers read back.
//!
//! - [`summary`]: the flagged windows as bounded, deterministic text; the prompts (`contents`:
//!   what a window holds, as lines; `call_site`: the user's line of code behind an event;
//!   [`line`]: a summary's line and the formatting the lines share).
//! - [`redact`]: names, paths and hosts replaced by placeholders before anything is sent.
//! - [`protocol`]: request bodies, stream parsers and error mapping, without a transport (the
//!   web app sends with `fetch` and feeds the same [`stream`] parsers); [`answer`]: the answer's
//!   schema and its lenient reading.
//! - [`check`]: an answer checked against what was sent (figures, names, the anti-pattern, the
//!   fix); `figure`: a figure as written and its precision; [`quantity`]: what a figure stands for, so that a figure cited as something else is
//!   marked misread.
//! - [`client`] (native only): the CLI's blocking HTTP transport.
//!
//! The graded evaluation of endpoints (`ttap-dev llm-eval`) is a development tool, in the
//! development crate (`dev/src/llm/eval.rs`).

pub mod answer;
mod call_site;
pub mod check;
#[cfg(not(target_arch = "wasm32"))]
pub mod client;
mod contents;
mod figure;
pub mod line;
pub mod protocol;
pub mod quantity;
pub mod redact;
pub mod stream;
pub mod summary;
