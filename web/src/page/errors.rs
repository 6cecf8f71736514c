//! The worker's typed errors in words: what failed, where, and what to do. The worker sends
//! facts (`protocol::FileError`, `RequestError`, `RetrainError`, `LeftOut`); only the page
//! words them, so every message reads the same whoever found the problem.

use crate::format::bytes;
use crate::protocol::{FileError, LeftOut, ReadStep, RequestError, RetrainError};

/// What to do when a file's bytes could not be read.
const CHOOSE_AGAIN: &str =
    "The file may have been moved, changed or deleted since it was chosen: choose it again.";

/// Why file `name` has no analysis.
pub fn file_error(error: &FileError, name: &str) -> String {
    match error {
        FileError::Read { step, detail } => {
            let what = match *step {
                ReadStep::Whole => "could not read the file".to_string(),
                ReadStep::Slice { start, end } => format!("could not slice bytes {start}..{end}"),
                ReadStep::Stream { start, end } => {
                    format!("could not start reading bytes {start}..{end}")
                }
                ReadStep::Bytes { at, end } => format!("could not read bytes {at}..{end}"),
            };
            format!("{what}: {detail}. {CHOOSE_AGAIN}")
        }
        FileError::Ended { at, end } => format!(
            "could not read bytes {at}..{end}: the file ended at byte {at}. It may have been \
             changed since it was chosen: choose it again."
        ),
        FileError::Trace { detail } | FileError::Report { detail } | FileError::Link { detail } => {
            detail.clone()
        }
        FileError::TooLarge {
            read,
            total,
            memory,
            limit,
        } => format!(
            "{name} is too large to analyze in this browser tab: after reading {read} of its \
             {total} ({pct:.0} %), the worker's memory reached {memory}, past its limit of \
             {limit} (a worker has at most 4 GiB of WebAssembly memory, and the analysis needs \
             room beyond what reading takes). Reading stopped there and nothing else changed: \
             what the page showed before is still shown. Analyze this trace with the \
             command-line tool (`ttap analyze {name}`), which has no such limit, or profile \
             fewer steps (a shorter `torch.profiler.schedule`).",
            pct = *read as f64 * 100.0 / (*total).max(1) as f64,
            read = bytes(*read),
            total = bytes(*total),
            memory = bytes(*memory),
            limit = bytes(*limit),
        ),
        FileError::ReportNotShown { detail } => {
            format!("this saved report cannot be shown: {detail}")
        }
        FileError::Fleet { detail } => format!("this fleet report cannot be shown: {detail}"),
        FileError::State { detail } | FileError::Helper { detail } => format!(
            "a helper worker could not read its part of the file ({detail}): a bug in \
             TorchTraceAP, since the file's own worker reads such parts itself; please report \
             it with the trace's PyTorch version."
        ),
        FileError::NoWorker { detail } => format!(
            "Could not start the analysis worker ({detail}). The page needs Web Workers: open \
             it over http(s), not as a local file."
        ),
        FileError::NotHandedOver { detail } => {
            format!("Could not hand the file to the worker: {detail}")
        }
        FileError::Capture {
            name: capture,
            error,
        } => format!(
            "the graph capture trace {capture}, given to tie {name}'s graph replays to, could not \
             be read: {} Remove the capture (or choose another), then open {name} again.",
            file_error(error, capture)
        ),
        FileError::Stopped { detail } => format!(
            "The analysis of this file stopped unexpectedly: {detail}. If the file is large, its \
             worker may have run out of memory (a worker has at most 4 GiB): analyze it with the \
             command-line tool (`ttap analyze`). Otherwise this is a bug in TorchTraceAP: please \
             report it with the trace's PyTorch version. The other files were analyzed."
        ),
    }
}

/// Why the worker did not answer a request about a file.
pub fn request_error(error: &RequestError) -> String {
    match error {
        RequestError::NoTrace { file } => format!(
            "file {} has no trace in this worker (a saved report, a shared link or a file that \
             could not be read): open the trace itself to see its timeline or ask an LLM about it",
            file + 1
        ),
        RequestError::NoSlice { file, event } => {
            format!("no slice {event} in file {}", file + 1)
        }
        RequestError::NoCanvas => {
            "the timeline's canvas was not handed to the worker: reload the page".to_string()
        }
        RequestError::NoContext => {
            "the browser gave no 2D context for the timeline's canvas".to_string()
        }
        RequestError::Draw { detail } => format!("drawing the timeline failed: {detail}"),
        RequestError::Export { detail } => {
            format!("Could not export the trace for Perfetto: {detail}")
        }
    }
}

/// Why no model was retrained.
pub fn retrain_error(error: &RetrainError) -> String {
    match error {
        RetrainError::Fetch { url, detail } => format!(
            "could not fetch the base set ({url} on this site): {detail}. The site must ship \
             www/models (index.html copies it); check the connection and try again"
        ),
        RetrainError::BaseSet { url, detail } => {
            format!("the base set {url} cannot be read: {detail}")
        }
        RetrainError::NoLabelHere { labels, left_out } => format!(
            "none of the {labels} kept label(s) names a window of the trace shown ({}): keep \
             labels on this trace's regions first",
            left_out
                .iter()
                .map(left_out_words)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        RetrainError::Fit { labels, detail } => format!(
            "fitting the window model in this page on the base set and {labels} label(s) \
             failed: {detail}. The traces keep their scores; keep labels of other \
             anti-patterns, or reload the page"
        ),
    }
}

/// Why a kept label was not fitted on.
pub fn left_out_words(why: &LeftOut) -> String {
    match why {
        LeftOut::NoWindow {
            step,
            phase,
            window,
            trace,
        } => format!(
            "the label of step {step} {phase} (window {}) names no window of {}",
            window.map_or_else(|| "any".to_string(), |w| (w + 1).to_string()),
            trace.as_deref().unwrap_or("its trace")
        ),
        LeftOut::NoClass { pattern } => {
            format!("a label with the pattern '{pattern}', which the window model has no class for")
        }
        LeftOut::OtherTrace {
            labels,
            trace,
            fingerprint,
        } => format!(
            "{labels} label(s) for {} ({}) are for another trace than the one shown: retrain \
             with that trace shown (select its file, or open it) to fit on them",
            trace.as_deref().unwrap_or("a trace without a name"),
            fingerprint.as_deref().unwrap_or("no fingerprint")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// The words say what failed and where, with the figures the worker sent, and what to do.
    #[wasm_bindgen_test]
    fn file_errors_say_what_failed_where_and_what_to_do() {
        let read = FileError::Read {
            step: ReadStep::Bytes { at: 0, end: 512 },
            detail: "NotReadableError: the file could not be read."
                .trim_end_matches('.')
                .into(),
        };
        assert_eq!(
            file_error(&read, "a.json"),
            "could not read bytes 0..512: NotReadableError: the file could not be read. The \
             file may have been moved, changed or deleted since it was chosen: choose it again."
        );
        let large = FileError::TooLarge {
            read: 48 << 20,
            total: 60 << 20,
            memory: 70 << 20,
            limit: 64 << 20,
        };
        let words = file_error(&large, "big.pt.trace.json");
        assert!(
            words.starts_with(
                "big.pt.trace.json is too large to analyze in this browser tab: after reading \
                 48.0 MiB of its 60.0 MiB (80 %), the worker's memory reached 70.0 MiB, past its \
                 limit of 64.0 MiB"
            ),
            "{words}"
        );
        assert!(
            words.contains("`ttap analyze big.pt.trace.json`"),
            "{words}"
        );
        let ended = file_error(&FileError::Ended { at: 100, end: 200 }, "a.json");
        assert!(ended.contains("the file ended at byte 100"), "{ended}");
    }

    /// Requests and retraining name the file as people count (from 1), the labels left out and
    /// why, and what to do.
    #[wasm_bindgen_test]
    fn request_and_retrain_errors_name_the_file_and_the_labels() {
        let none = request_error(&RequestError::NoTrace { file: 0 });
        assert!(
            none.starts_with("file 1 has no trace in this worker"),
            "{none}"
        );
        assert!(none.ends_with("ask an LLM about it"), "{none}");
        let here = retrain_error(&RetrainError::NoLabelHere {
            labels: 2,
            left_out: vec![
                LeftOut::NoWindow {
                    step: 12,
                    phase: "forward".into(),
                    window: Some(0),
                    trace: None,
                },
                LeftOut::OtherTrace {
                    labels: 1,
                    trace: Some("other-rank.json.gz".into()),
                    fingerprint: None,
                },
            ],
        });
        assert_eq!(
            here,
            "none of the 2 kept label(s) names a window of the trace shown (the label of step 12 \
             forward (window 1) names no window of its trace; 1 label(s) for other-rank.json.gz \
             (no fingerprint) are for another trace than the one shown: retrain with that trace \
             shown (select its file, or open it) to fit on them): keep labels on this trace's \
             regions first"
        );
    }
}
