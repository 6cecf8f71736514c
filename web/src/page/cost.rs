//! The page's main-thread cost of each message to or from the worker, recorded as User Timing
//! measures named `ttap:from-worker:<kind>` (reading the message and decoding it) and
//! `ttap:to-worker:<kind>` (encoding and posting it). They show in the browser's performance
//! panel and `e2e/protocol-bench.mjs` collects them with a `PerformanceObserver`. Each one is
//! cleared as soon as it is recorded, so the browser's buffer of entries never grows.

/// The mark each measure starts from.
const START: &str = "ttap:message";

fn performance() -> Option<web_sys::Performance> {
    web_sys::window().and_then(|window| window.performance())
}

/// Runs `work` and records its time under `ttap:<direction>:<kind>`, the kind taken from what
/// `work` returns (a message is named only once it is decoded).
pub fn measured<T>(
    direction: &str,
    kind: impl Fn(&T) -> &'static str,
    work: impl FnOnce() -> T,
) -> T {
    let performance = performance();
    if let Some(p) = &performance {
        let _ = p.mark(START);
    }
    let out = work();
    if let Some(p) = &performance {
        let name = format!("ttap:{direction}:{}", kind(&out));
        let _ = p.measure_with_start_mark(&name, START);
        p.clear_marks_with_mark_name(START);
        p.clear_measures_with_measure_name(&name);
    }
    out
}
