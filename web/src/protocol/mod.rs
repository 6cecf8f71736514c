//! The messages between the page and the analysis worker, and how they travel.
//!
//! Every message is an [`Envelope`] with this protocol's [`VERSION`], turned into a JavaScript
//! value by `serde-wasm-bindgen` and posted as is: the browser's structured clone carries it, no
//! JSON text is written or parsed. 64-bit integers travel as `BigInt`s (trace times in ns since
//! 1970 exceed a double's 53 bits). The `File`s to analyze and the timeline's `OffscreenCanvas`
//! travel inside the messages as the browser's own handles (`serde_wasm_bindgen::preserve`):
//! files by reference (never copied whole), the canvas transferred ([`ToWorker::transfer`]).
//! Nothing else is large enough to gain from a transfer: the worker reads the files' bytes
//! itself and draws the timeline's frames straight into the canvas.
//!
//! The worker says `Ready` once its message handler is installed (messages posted before that
//! would be lost: the wasm module starts asynchronously). The page then posts
//! [`ToWorker::Analyze`]; the worker answers with [`FromWorker`] messages in this order:
//! `Progress`* per file (a large plain trace's `Early` among them: its first steps' report),
//! then that file's `Done`, and `Finished` at the end.
//!
//! The worker then stays: it keeps each analyzed trace and answers the page's [`Request`]s
//! about them, such as a search: each carries an id, and its one [`Reply`] the same id
//! (`page::client` hands it to whoever asked). The page gives each file of a
//! load its own worker (`page::pool`) and keeps only one of them, holding one trace: a request
//! about another file goes to a new worker that reads that file again ([`Request::file`]).
//!
//! A file's worker may start helpers (the same worker script) to read a large trace by byte
//! ranges (`worker::ranges`): it posts each a [`ToWorker::Parse`] with the file's `Blob`, and each
//! answers with a [`FromWorker::Parsed`], whose framed state is bincode in an `ArrayBuffer`
//! transferred with it ([`FromWorker::transfer`]). These never reach the page.
//!
//! The messages are this module's enums. What they carry of the core (the report, the trace's
//! summary, timeline places and bands, LLM prompts) travels in the core's own serde form: for
//! the report, the versioned document a saved report holds (`report::VERSION`). Page and worker
//! are built from one source, so such a change reaches both sides at once; bump [`VERSION`]
//! when it changes a message's shape, so that a cached worker of the older build is refused.
//!
//! One file per concern: [`messages`] (the enums that cross), [`timeline`] (the timeline's
//! requests and replies), [`outcome`] (a file's progress and outcome), [`retrain`] (a retrain's
//! reply), [`errors`] (failures as facts); this file, the envelope.

mod envelope;
mod errors;
mod messages;
mod outcome;
mod retrain;
#[cfg(test)]
mod tests;
mod timeline;

pub use envelope::{decode, encode, ProtocolError, VERSION};
pub use errors::{FileError, LeftOut, ReadStep, RequestError, RetrainError};
pub use messages::{FromWorker, Parse, Parsed, ParsedBlock, Question, Reply, Request, ToWorker};
pub use outcome::{Analyzed, Document, EarlyLook, Outcome, Progress, Stage};
pub use retrain::{Rescored, Retrained, WindowChange};
pub use timeline::{
    Drawn, Found, Motion, Opened, Picked, TimelineReply, TimelineRequest, View, MAX_FOUND,
};
