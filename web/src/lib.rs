//! The TorchTraceAP web app: a Yew page ([`page`]) and Web Workers ([`worker`]) that run the
//! library's analysis on the user's files, talking through [`protocol`]. Below both: the
//! JavaScript glue ([`js`]), number formats ([`format`]) and the timeline canvas's geometry
//! ([`geometry`]). Page and worker never name each other (`tests/layers.rs`). Nothing leaves
//! the browser: the page makes no request but for its own files, and the one request the user
//! previews and sends to an LLM endpoint of their choosing (`page::llm`).

pub mod format;
pub mod geometry;
pub mod js;
pub mod page;
pub mod protocol;
pub mod worker;
