//! What the worker keeps of each analyzed trace, and its answers to the page's requests.
//! Only the worker uses it: the page never holds a trace.

use std::cell::{OnceCell, RefCell};

use torchtraceap::detect::{self, Analysis, Finding};
use torchtraceap::ingest::Ingested;
use torchtraceap::llm::summary::{self, Prompt, SummaryOptions};
use torchtraceap::report::Report;
use torchtraceap::timeline::{bands, inspect, Layout};
use wasm_bindgen::JsCast;
use web_sys::{OffscreenCanvas, OffscreenCanvasRenderingContext2d};

use crate::draw::Timeline;
use crate::protocol::{
    Found, FromWorker, Opened, Picked, Request, TimelineReply, TimelineRequest, View, MAX_FOUND,
};

/// One analyzed trace, as the worker keeps it.
///
/// The trace lives as long as the worker: a worker is never reused for another load (the page
/// terminates it when another load replaces its analysis, which frees all of its memory at
/// once). So the trace is leaked to `'static`, and the `Analysis` that borrows it (steps,
/// windows and metrics, costly on large traces) is kept beside it instead of being made again
/// for each request.
pub struct Kept {
    pub ingested: &'static Ingested,
    pub analysis: Analysis<'static>,
    pub findings: Vec<Finding>,
    pub report: Report,
    /// Laid out on first use, with the time it took (ms).
    timeline: OnceCell<(Timeline, f64)>,
}

impl Kept {
    /// Analyzes the trace and keeps it.
    pub fn new(ingested: Ingested) -> Kept {
        let ingested: &'static Ingested = Box::leak(Box::new(ingested));
        let analysis = Analysis::new(&ingested.trace);
        let detected = detect::run(&analysis);
        let report = Report::new(&analysis, &detected);
        let findings = detected.findings;
        Kept {
            ingested,
            analysis,
            findings,
            report,
            timeline: OnceCell::new(),
        }
    }

    fn timeline(&self) -> &(Timeline, f64) {
        self.timeline.get_or_init(|| {
            let started = js_sys::Date::now();
            let t = &self.ingested.trace;
            let a = &self.analysis;
            let timeline = Timeline {
                layout: Layout::new(t),
                bands: bands::bands(a, &self.findings, &self.report),
                scores: bands::scores(a, &self.report),
                steps: a
                    .steps
                    .steps
                    .iter()
                    .map(|s| (s.start, s.end, s.number))
                    .collect(),
                evidence: self
                    .findings
                    .iter()
                    .map(|f| {
                        let names = f.evidence.iter().flat_map(|e| &e.events);
                        let ids = names.filter_map(|n| t.strings.find(n)).collect();
                        (f.id.to_string(), ids)
                    })
                    .collect(),
                in_range: RefCell::default(),
                heat_colours: crate::draw::heat_colours(),
            };
            (timeline, js_sys::Date::now() - started)
        })
    }
}

/// The traces of the worker's load, by file index (`None`: not read, or a saved report), and
/// the canvas the timeline draws into.
#[derive(Default)]
pub struct Session {
    pub files: Vec<Option<Kept>>,
    pub canvas: Option<OffscreenCanvas>,
}

impl Session {
    /// Keeps file `index`'s trace.
    pub fn keep(&mut self, index: usize, kept: Option<Kept>) {
        if self.files.len() <= index {
            self.files.resize_with(index + 1, || None);
        }
        self.files[index] = kept;
    }

    fn file(&self, index: usize) -> Result<&Kept, String> {
        self.files
            .get(index)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                format!(
                "file {} has no trace in this worker (a saved report, a shared link or a file that \
                 could not be read): open the trace itself to see its timeline or ask an LLM about it",
                index + 1
            )
            })
    }

    /// The reply to one request.
    pub fn answer(&self, request: Request) -> FromWorker {
        match request {
            Request::Prompts { file, options } => {
                let result = self.prompts(file, &options);
                FromWorker::Prompts {
                    file,
                    options,
                    result,
                }
            }
            Request::Timeline(request) => {
                let drawing = matches!(request, TimelineRequest::View(_));
                FromWorker::Timeline(Box::new(
                    self.timeline(request)
                        .unwrap_or_else(|message| TimelineReply::Failed { message, drawing }),
                ))
            }
        }
    }

    /// The LLM prompts of file `index`'s flagged windows, one per window.
    fn prompts(&self, index: usize, options: &SummaryOptions) -> Result<Vec<Prompt>, String> {
        let kept = self.file(index)?;
        let windows = summary::summarize(&kept.analysis, &kept.findings, &kept.report, options);
        Ok(summary::prompts(&windows, options))
    }

    fn timeline(&self, request: TimelineRequest) -> Result<TimelineReply, String> {
        Ok(match request {
            TimelineRequest::Open { file } => {
                let kept = self.file(file)?;
                let (timeline, layout_ms) = kept.timeline();
                let layout = &timeline.layout;
                TimelineReply::Opened(Opened {
                    file,
                    span: layout.span,
                    slices: layout.rows.iter().map(|r| r.events.len() as u64).sum(),
                    rows: layout.rows.len() as u64,
                    bands: timeline.bands.clone(),
                    layout_ms: *layout_ms,
                })
            }
            TimelineRequest::View(view) => TimelineReply::Drawn(self.draw(&view)?),
            TimelineRequest::Pick { view, x, y } => {
                let kept = self.file(view.file)?;
                TimelineReply::Picked {
                    file: view.file,
                    picked: kept.timeline().0.pick(&kept.ingested.trace, &view, x, y),
                }
            }
            TimelineRequest::Details { file, event } => {
                let kept = self.file(file)?;
                let t = &kept.ingested.trace;
                if event as usize >= t.events.len() {
                    return Err(format!("no slice {event} in file {}", file + 1));
                }
                let details = inspect::details(t, &kept.timeline().0.layout, event);
                TimelineReply::Picked {
                    file,
                    picked: Picked::Slice(Box::new(details)),
                }
            }
            TimelineRequest::Search { file, text } => {
                let kept = self.file(file)?;
                let t = &kept.ingested.trace;
                let layout = &kept.timeline().0.layout;
                let hits = inspect::search(t, layout, &text);
                TimelineReply::Found(Found {
                    file,
                    total: hits.len(),
                    places: hits
                        .iter()
                        .take(MAX_FOUND)
                        .map(|&e| inspect::place(t, layout, e))
                        .collect(),
                    text,
                })
            }
        })
    }

    fn draw(&self, view: &View) -> Result<crate::protocol::Drawn, String> {
        let kept = self.file(view.file)?;
        let canvas = self
            .canvas
            .as_ref()
            .ok_or("the timeline's canvas was not handed to the worker: reload the page")?;
        let (w, h) = (
            (view.width * view.ratio).round().max(1.0) as u32,
            (view.height * view.ratio).round().max(1.0) as u32,
        );
        if canvas.width() != w || canvas.height() != h {
            canvas.set_width(w);
            canvas.set_height(h);
        }
        let ctx: OffscreenCanvasRenderingContext2d = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .ok_or("the browser gave no 2D context for the timeline's canvas")?
            .unchecked_into();
        kept.timeline()
            .0
            .draw(&kept.ingested.trace, &ctx, view)
            .map_err(|e| format!("drawing the timeline failed: {e:?}"))
    }
}
