//! Asking an LLM about a flagged window: the settings panel (kept in the browser's local storage
//! only), the preview of the exact request body, and the answer streaming in beside its finding.
//!
//! Nothing is sent without the user's click on Send, and what is sent is the body the preview
//! shows (the Send button carries the very string rendered); only a server that refuses the
//! body's answer schema gets it once more without the schema, which the answer then says. Each
//! answer is checked against the request's text (`llm::check`): the figures and names it cites
//! that were not sent are marked "not in the evidence". The prompts come from the worker
//! (`Request::Prompts`), which holds the trace and makes each one's request body too
//! (`Endpoint::body`); the page only shows and sends it. The model's text is rendered as text
//! nodes, never as HTML.
//!
//! The loop back to the ML stage: after an answer about an unexplained region the user can keep
//! a label for its window (the anti-pattern the answer names, preselected, or another, or "not
//! an anti-pattern") and export the kept labels as the ML stage's label file (`ml::labels`).
//! Labels live in this page's memory only until exported: never in local storage, a share link
//! or a request. A labels file can be imported again. **Retrain** fits a new window model on
//! the bundled base set plus the kept labels in the worker (`Request::Retrain`, smartcore in
//! wasm), which rescores the traces; the page shows the windows whose verdict changed, offers the
//! model's file, and goes back to the bundled model on request. Nothing is uploaded.
//!
//! One job per file: [`settings`] (the endpoint and prompt options, and where the browser keeps
//! them), [`state`] (the prompts, the exchanges and the kept labels, and the messages that
//! change them), [`labels`] (a region's window as the ML stage's label), [`view`] (the panels),
//! [`answered`] (an answer and its check).

mod answered;
mod labels;
mod settings;
mod state;
mod transport;
mod view;

pub use state::{Msg, State};
pub use view::{ask, labels_bar, settings_button, settings_panel, Regions};
