//! The TorchTraceAP web app: a Yew page ([`ui`]) and a Web Worker ([`worker`]) that runs the
//! library's analysis on the user's files, talking through [`protocol`]. Nothing leaves the
//! browser: the page makes no request but for its own files, and the one request the user
//! previews and sends to an LLM endpoint of their choosing ([`llm`]).

pub mod draw;
pub mod frames;
pub mod llm;
pub mod protocol;
pub mod ranges;
pub mod read;
pub mod retrain;
pub mod session;
pub mod ui;
pub mod worker;
