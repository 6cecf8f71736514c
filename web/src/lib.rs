//! The TorchTraceAP web app: a Yew page ([`ui`]) and a Web Worker ([`worker`]) that runs the
//! library's analysis on the user's files, talking through [`protocol`]. Nothing leaves the
//! browser: the page makes no request but for its own files.

pub mod draw;
pub mod protocol;
pub mod session;
pub mod ui;
pub mod worker;
