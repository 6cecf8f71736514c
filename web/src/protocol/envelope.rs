//! The envelope every message travels in: the protocol's version beside the message, encoded
//! as a structured clone by `serde-wasm-bindgen`, and why a posted value could not be read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

/// The protocol's version, checked on every message: the page and the worker are built together,
/// but a browser may still run a cached worker script next to a newer page. Version 1 was JSON
/// text; 2 is structured clone through `serde-wasm-bindgen`; 3 opens fleet reports
/// ([`Document::Fleet`]), retrains the window model (`Retrain`, `BundledModel`, `Retrained`),
/// numbers an `Analyze`'s files from its `first` (one worker per file of a load) and gives the
/// worker a memory limit; 4 draws the timeline on the worker's own animation frames (a `View`'s
/// `seq` and `motion`, `TimelineRequest::Motion`, and the view and frame time in `Drawn`) and
/// reads one trace with several workers (`Analyze::workers`, the worker-to-worker `Parse` and
/// `Parsed`, `Progress::workers`); 5 marks memory peaks on the timeline (`Drawn::memory_peaks`,
/// `Picked::MemoryPeak`); 6 types its errors (`FileError`, `RequestError`, `RetrainError`,
/// `LeftOut`), which the page words; 7 numbers the page's requests (`ToWorker::Request`'s `id`,
/// answered by a `FromWorker::Reply` with it; retraining is a `Request`), sends the
/// timeline's frames apart (`FromWorker::Frame`) and has the worker make the LLM request
/// bodies (`Request::Prompts::endpoint`, `Question`).
pub const VERSION: u32 = 7;

/// What is posted: a message and the version of the protocol it belongs to.
#[derive(Serialize, Deserialize)]
struct Envelope<M> {
    version: u32,
    message: M,
}

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error(
        "a message of protocol version {found}, where version {VERSION} is expected: the page \
         and its worker come from different builds of the site; reload the page"
    )]
    Version { found: String },
    #[error("a message that does not decode ({0}): a bug in TorchTraceAP")]
    Decode(String),
}

/// The JavaScript value to post for `message`.
pub fn encode<M: Serialize>(message: &M) -> Result<JsValue, ProtocolError> {
    let envelope = Envelope {
        version: VERSION,
        message,
    };
    envelope
        .serialize(
            &serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true),
        )
        .map_err(|e| ProtocolError::Decode(e.to_string()))
}

/// The message in a posted value, when its version is this protocol's.
pub fn decode<M: DeserializeOwned>(value: JsValue) -> Result<M, ProtocolError> {
    let version = js_sys::Reflect::get(&value, &JsValue::from_str("version")).ok();
    if version.as_ref().and_then(JsValue::as_f64) != Some(f64::from(VERSION)) {
        return Err(ProtocolError::Version {
            found: version.map_or_else(|| "none".into(), |v| format!("{v:?}")),
        });
    }
    serde_wasm_bindgen::from_value::<Envelope<M>>(value)
        .map(|envelope| envelope.message)
        .map_err(|e| ProtocolError::Decode(e.to_string()))
}
