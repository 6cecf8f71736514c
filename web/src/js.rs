//! The JavaScript glue page and worker both use: starting a worker of this bundle
//! ([`Started`]), this worker's clock and User Timing phases, its wasm memory, and a
//! JavaScript failure's own words ([`detail`]), the clipboard. No message types: those are `protocol`'s.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, ErrorEvent, MessageEvent, Performance, Worker};

/// The worker script Trunk writes next to the page (`data-loader-shim`, no file hashes): the
/// page's workers and their helpers (`worker::ranges`).
const WORKER_URL: &str = "./worker_loader.js";

/// A running worker of this script (a file's, started by the page, or a helper, started by a
/// file's worker) with its message and error handlers. Dropping it terminates the worker.
pub struct Started {
    pub worker: Worker,
    // Kept alive as long as the worker: they are its message and error handlers.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl Started {
    /// Starts a worker: `on_message` gets each message's data, `on_error` why it stopped.
    pub fn new(
        mut on_message: impl FnMut(JsValue) + 'static,
        mut on_error: impl FnMut(String) + 'static,
    ) -> Result<Started, JsValue> {
        let worker = Worker::new(WORKER_URL)?;
        let on_message =
            Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| on_message(e.data()));
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
            e.prevent_default();
            on_error(e.message());
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(Started {
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // Its handlers go first: a message already on its way must find none (their closures
        // are freed with this struct), not a dropped closure.
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
    }
}

/// This worker's clock.
fn performance() -> Option<Performance> {
    js_sys::global()
        .unchecked_into::<DedicatedWorkerGlobalScope>()
        .performance()
}

/// Starts phase `phase` of an analysis in this worker (ended by [`phase_end`]).
pub fn phase_start(phase: &str) {
    if let Some(p) = performance() {
        let _ = p.mark(&format!("ttap:worker:{phase}"));
    }
}

/// Ends phase `phase`: a User Timing measure `ttap:worker:<phase>` from where it started. The
/// browser's performance panel shows them, and `e2e/bench.mjs` reads them from the file's worker
/// (a few per file, and one per merged range: never cleared while the worker lives).
pub fn phase_end(phase: &str) {
    if let Some(p) = performance() {
        let name = format!("ttap:worker:{phase}");
        let _ = p.measure_with_start_mark(&name, &name);
        p.clear_marks_with_mark_name(&name);
    }
}

/// Runs `work` as phase `phase`.
pub fn timed<T>(phase: &str, work: impl FnOnce() -> T) -> T {
    phase_start(phase);
    let out = work();
    phase_end(phase);
    out
}

/// The size of this worker's wasm memory.
pub fn memory_bytes() -> u64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as u64
}

/// What a JavaScript failure says (an `Error`'s message, else the value as written), without
/// a final full stop: the detail of a typed error that names what failed.
pub fn detail(error: &JsValue) -> String {
    let detail = error
        .dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{error:?}"), |e| String::from(e.message()));
    detail.trim_end_matches('.').to_string()
}

/// Puts `text` on the clipboard; whether the browser wrote it is not awaited (a refused write
/// changes nothing on the page). Returns false where there is no window.
pub fn copy_to_clipboard(text: &str) -> bool {
    web_sys::window().is_some_and(|window| {
        let _ = window.navigator().clipboard().write_text(text);
        true
    })
}
