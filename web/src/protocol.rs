//! The messages between the page and the analysis worker.
//!
//! The worker says `Ready` once its message handler is installed (messages posted before that
//! would be lost: the wasm module starts asynchronously). The page then posts the `File`s (or
//! `Blob`s) to analyze as a JS array: files are handed over by reference, never copied whole. The
//! worker answers with [`FromWorker`] messages, each one JSON text, in this order: `Progress`* per
//! file, then that file's `Done`, and `Finished` at the end.
//!
//! The worker then stays: it keeps each analyzed trace and answers the page's [`ToWorker`]
//! requests (JSON text) about them, such as a search, each with one reply. The page keeps the
//! worker of the analysis it shows and terminates it when another load replaces that analysis.

use serde::{Deserialize, Serialize};
use torchtraceap::ingest::Ingested;
use torchtraceap::llm::summary::{Prompt, SummaryOptions};
use torchtraceap::report::Report;
use torchtraceap::share;
use torchtraceap::summary::Summary;
use torchtraceap::timeline::bands::Band;
use torchtraceap::timeline::inspect::{Details, Place};

/// How many kernels and operators the tables keep (the largest by total time).
pub const TABLE_ROWS: usize = 500;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    Ready,
    Progress(Progress),
    Done(Box<Outcome>),
    Finished,
    Timeline(Box<TimelineReply>),
    /// The answer to `ToWorker::Prompts`: the options it was made with (the page drops a reply
    /// for settings it no longer has), and the prompts or why there are none.
    Prompts {
        file: usize,
        options: SummaryOptions,
        result: Result<Vec<Prompt>, String>,
    },
}

/// What the page asks of the worker of the analysis it shows; `file` is the file's index in
/// the load. Before the first `View`, the page posts the timeline's `OffscreenCanvas` (not as
/// JSON: transferred), which the worker then draws into.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// A request about the file's timeline; answered by `FromWorker::Timeline`.
    Timeline(TimelineRequest),
    /// The LLM prompts of the file's flagged windows (`llm::summary::summarize`, then
    /// `prompts`); answered by `FromWorker::Prompts`. Nothing is sent anywhere: the page shows
    /// them, and sends one only when the user asks.
    Prompts {
        file: usize,
        options: SummaryOptions,
    },
}

/// What the timeline asks (tagged `request`: it travels inside a `ToWorker`, tagged `type`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum TimelineRequest {
    /// Lay out the file's timeline; answered by `Opened`.
    Open { file: usize },
    /// Draw this view; answered by `Drawn`.
    View(View),
    /// What lies at `(x, y)` (CSS pixels on the canvas) in this view; answered by `Picked`.
    Pick { view: View, x: f64, y: f64 },
    /// One slice's details; answered by `Picked`.
    Details { file: usize, event: u32 },
    /// Slices whose name contains `text`, ignoring case; answered by `Found`.
    Search { file: usize, text: String },
}

/// The worker's answers to the timeline's requests (tagged `reply`: they travel inside a
/// `FromWorker`, which is tagged `type`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum TimelineReply {
    Opened(Opened),
    Drawn(Drawn),
    Picked {
        file: usize,
        picked: Picked,
    },
    Found(Found),
    /// A request the worker could not answer (a file it has no trace of, a canvas it cannot
    /// draw on); `drawing` when it was a `View`.
    Failed {
        message: String,
        drawing: bool,
    },
}

/// A view of the timeline: the time range shown, the canvas size and what is selected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub file: usize,
    /// Nanoseconds from the trace's start (`Opened::span.0`): offsets, because the trace's own
    /// times (often ns since 1970) lose precision as `f64`; fractional while zooming.
    pub start: f64,
    pub end: f64,
    /// CSS pixels, and device pixels per CSS pixel.
    pub width: f64,
    pub height: f64,
    pub ratio: f64,
    /// Vertical scroll of the tracks, in CSS pixels.
    pub scroll: f64,
    /// Indices of the collapsed groups.
    pub collapsed: Vec<u32>,
    pub selected: Option<u32>,
    /// Scroll so that this slice's row shows (a search match, a followed flow).
    pub reveal: Option<u32>,
    /// A time range selected with the box, ns from the trace's start.
    pub range: Option<(f64, f64)>,
    /// The finding whose bands are highlighted.
    pub finding: Option<String>,
}

/// A file's timeline is laid out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Opened {
    pub file: usize,
    /// Earliest start and latest end, ns.
    pub span: (i64, i64),
    pub slices: u64,
    pub rows: u64,
    /// The flagged windows, for moving to a finding.
    pub bands: Vec<Band>,
    /// Time to lay the timeline out, ms.
    pub layout_ms: f64,
}

/// A view was drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drawn {
    pub file: usize,
    /// Time to draw it, ms.
    pub draw_ms: f64,
    /// Height of all tracks as shown (for scrolling), CSS pixels.
    pub content_height: f64,
    /// The vertical scroll drawn (the view's, moved to reveal a slice, kept in bounds).
    pub scroll: f64,
    /// Spans drawn (after level-of-detail merging).
    pub spans: u64,
    /// Where the selected slice was drawn, `[x, y, width, height]` in CSS pixels, if it shows.
    pub selected_box: Option<[f64; 4]>,
    /// Slices in the selected range, when there is one: `(kind label, count, total ns)`.
    pub in_range: Vec<(String, u64, i64)>,
}

/// What lies under a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Picked {
    Slice(Box<Details>),
    /// A group's header (to collapse or expand it).
    Group {
        index: u32,
    },
    /// A flagged window's band: the finding's id.
    Band {
        finding: String,
    },
    Nothing,
}

/// Search results, at most [`MAX_FOUND`] of them, in time order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Found {
    pub file: usize,
    pub text: String,
    /// How many slices match, all told.
    pub total: usize,
    pub places: Vec<Place>,
}

/// Search results sent back, at most.
pub const MAX_FOUND: usize = 1000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Index of the file in the posted list.
    pub file: usize,
    pub name: String,
    pub stage: Stage,
    /// Bytes of the file read so far, out of `total_bytes`.
    pub bytes: u64,
    pub total_bytes: u64,
    /// Events read so far.
    pub events: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Reading,
    Analyzing,
}

/// One file's result: its analysis, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub file: usize,
    pub name: String,
    pub size: u64,
    /// The worker's wasm memory after this file: its peak so far (wasm memory only grows).
    pub worker_memory_bytes: u64,
    pub result: Result<Analyzed, String>,
}

/// What the views show of one trace: its summary and report; or, for a saved report opened
/// again, the report alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analyzed {
    pub summary: Option<Summary>,
    pub report: Report,
    /// `share::fingerprint` of the trace: how a shared link finds its trace again. `None` for a
    /// saved report opened again.
    pub fingerprint: Option<String>,
}

impl Analyzed {
    /// What the views show of a trace whose report is made (`session::Kept::new` makes it
    /// once and keeps the analysis behind it for later requests).
    pub fn with_report(ingested: &Ingested, report: Report) -> Analyzed {
        Analyzed {
            summary: Some(Summary::of(ingested, TABLE_ROWS)),
            report,
            fingerprint: Some(share::fingerprint(&ingested.trace)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchtraceap::timeline::inspect::Details;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn place(event: u32) -> Place {
        Place {
            event,
            name: "volta_sgemm_64x64_nn".into(),
            start: 1_000,
            dur: 250,
            lane: "stream 7".into(),
            group: "GPU 0".into(),
        }
    }

    fn round_trip(message: FromWorker) {
        let text = serde_json::to_string(&message).expect("serializes");
        let back: FromWorker = serde_json::from_str(&text).expect("parses back");
        assert_eq!(back, message, "{text}");
    }

    /// Every reply the timeline gets crosses the page↔worker boundary as JSON: nested tags
    /// must not collide.
    #[wasm_bindgen_test]
    fn every_timeline_reply_survives_the_trip_to_the_page() {
        let details = Details {
            place: place(3),
            category: "kernel".into(),
            kind: "gpu_kernel".into(),
            self_time: 250,
            args: vec![("grid".into(), "[1, 2, 3]".into())],
            stack: vec![place(1)],
            launched_by: Some(place(2)),
            launched: Vec::new(),
        };
        let replies = [
            TimelineReply::Opened(Opened {
                file: 0,
                span: (0, 10),
                slices: 5,
                rows: 2,
                bands: Vec::new(),
                layout_ms: 1.5,
            }),
            TimelineReply::Drawn(Drawn {
                file: 0,
                draw_ms: 0.7,
                content_height: 400.0,
                scroll: 10.0,
                spans: 12,
                selected_box: Some([1.0, 2.0, 3.0, 4.0]),
                in_range: vec![("gpu_kernel".into(), 3, 900)],
            }),
            TimelineReply::Picked {
                file: 0,
                picked: Picked::Slice(Box::new(details)),
            },
            TimelineReply::Picked {
                file: 0,
                picked: Picked::Group { index: 2 },
            },
            TimelineReply::Picked {
                file: 1,
                picked: Picked::Band {
                    finding: "dataloader-bottleneck".into(),
                },
            },
            TimelineReply::Picked {
                file: 1,
                picked: Picked::Nothing,
            },
            TimelineReply::Found(Found {
                file: 1,
                text: "sgemm".into(),
                total: 1,
                places: vec![place(3)],
            }),
            TimelineReply::Failed {
                message: "no trace".into(),
                drawing: true,
            },
        ];
        for reply in replies {
            round_trip(FromWorker::Timeline(Box::new(reply)));
        }
        round_trip(FromWorker::Finished);
    }

    /// The LLM prompts and the options they were made with (every window: `usize::MAX`) cross
    /// the boundary both ways; a file without a trace gets its reason.
    #[wasm_bindgen_test]
    fn prompts_survive_the_trip_both_ways() {
        let options = SummaryOptions {
            max_windows: usize::MAX,
            redact: true,
            module_names: vec!["MyNet".into()],
            ..SummaryOptions::default()
        };
        let request = ToWorker::Prompts {
            file: 2,
            options: options.clone(),
        };
        let text = serde_json::to_string(&request).expect("serializes");
        assert_eq!(
            serde_json::from_str::<ToWorker>(&text).expect("parses back"),
            request
        );
        let prompt = Prompt {
            key: "finding:host-device-sync".into(),
            title: "Host-device sync (step 3)".into(),
            system: "S".into(),
            user: "Window: step 3 \"forward\"\n<name1>".into(),
            window_tokens: 5,
            tokens: 7,
            dropped_lines: 1,
        };
        round_trip(FromWorker::Prompts {
            file: 2,
            options: options.clone(),
            result: Ok(vec![prompt]),
        });
        round_trip(FromWorker::Prompts {
            file: 3,
            options,
            result: Err("file 4 has no trace in this worker".into()),
        });
    }
}
