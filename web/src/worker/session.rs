//! What the worker keeps of each analyzed trace, and its answers to the page's requests.
//! Only the worker uses it: the page never holds a trace.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;

use torchtraceap::ingest::Ingested;
use torchtraceap::llm::protocol::Endpoint;
use torchtraceap::llm::summary::SummaryOptions;
use torchtraceap::ml::base_set::{self, BaseSet};
use torchtraceap::ml::labels::{WindowLabel, NOT_AN_ANTI_PATTERN};
use torchtraceap::ml::Model;
use torchtraceap::model::AntiPattern;
use torchtraceap::report::{Report, WindowEntry};
use torchtraceap::timeline::{inspect, Layout};
use torchtraceap::AnalyzedTrace;
use torchtraceap::WindowFeatures;
use wasm_bindgen::JsCast;
use web_sys::{OffscreenCanvas, OffscreenCanvasRenderingContext2d};

use super::draw::Timeline;
use super::frames::Frames;
use crate::js;
use crate::protocol::{
    Drawn, Found, FromWorker, LeftOut, Opened, Picked, Question, Reply, Request, RequestError,
    Rescored, RetrainError, Retrained, TimelineReply, TimelineRequest, View, WindowChange,
    MAX_FOUND,
};

/// Each window of `windows` (a report's, in order) with its index among its step's windows.
fn in_step(windows: &[WindowEntry]) -> impl Iterator<Item = (&WindowEntry, usize)> {
    windows.iter().enumerate().map(|(g, e)| {
        let first = windows[..g]
            .iter()
            .rposition(|w| w.step != e.step)
            .map_or(0, |p| p + 1);
        (e, g - first)
    })
}

/// A kept label's pattern as the window model's class: `None` for "not an anti-pattern".
fn pattern(id: &str) -> Result<Option<AntiPattern>, LeftOut> {
    if id == NOT_AN_ANTI_PATTERN {
        return Ok(None);
    }
    AntiPattern::ALL
        .iter()
        .find(|p| p.id() == id)
        .map(|p| Some(*p))
        .ok_or_else(|| LeftOut::NoClass {
            pattern: id.to_string(),
        })
}

/// One analyzed trace, as the worker keeps it.
///
/// The trace lives as long as the worker: a worker is never reused for another load (the page
/// terminates it when another load replaces its analysis, which frees all of its memory at
/// once). So the trace is leaked to `'static`, and the analyzed trace that borrows it (steps,
/// windows and metrics, costly on large traces; findings, report, fingerprint) is kept beside
/// it instead of being made again for each request.
pub struct Kept {
    pub analyzed: AnalyzedTrace<'static>,
    /// Laid out on first use, with the time it took (ms).
    timeline: OnceCell<(Timeline, f64)>,
}

impl Kept {
    /// Analyzes the trace and keeps it.
    pub fn new(ingested: Ingested) -> Kept {
        let ingested: &'static Ingested = Box::leak(Box::new(ingested));
        Kept {
            analyzed: AnalyzedTrace::new(ingested),
            timeline: OnceCell::new(),
        }
    }

    fn fingerprint(&self) -> &str {
        self.analyzed.fingerprint()
    }

    fn features(&self) -> Vec<WindowFeatures> {
        self.analyzed.features()
    }

    fn report(&self) -> &Report {
        self.analyzed.report()
    }

    /// Scores the trace's windows with `model` (the report's flagged regions and the timeline's
    /// bands follow); returns the windows whose score moved, each with its kept label. Every
    /// model flags above the same threshold (0.5, `ml::fit`).
    fn rescore(
        &mut self,
        model: &Model,
        features: &[WindowFeatures],
        labels: &[WindowLabel],
    ) -> Vec<WindowChange> {
        let before = self.report().windows.clone();
        self.analyzed.rescore(model, features);
        if let Some((timeline, _)) = self.timeline.get_mut() {
            timeline.bands = self.analyzed.bands();
            timeline.scores = self.analyzed.window_scores();
        }
        let fingerprint = self.fingerprint().to_string();
        in_step(&self.report().windows)
            .zip(&before)
            .filter_map(|((e, window), old)| {
                let (was, now) = (old.anomaly_probability?, e.anomaly_probability?);
                (was != now).then(|| WindowChange {
                    step: e.step,
                    phase: e.phase.clone(),
                    window,
                    before: was,
                    after: now,
                    flagged_before: model.flags(was),
                    flagged_after: model.flags(now),
                    label: labels
                        .iter()
                        .find(|l| {
                            l.fingerprint.as_ref() == Some(&fingerprint)
                                && l.names(e.step, &e.phase, window)
                        })
                        .map(|l| l.pattern.clone()),
                })
            })
            .collect()
    }

    /// The index of the window a kept label names, when it names one of this trace's.
    fn labelled(&self, label: &WindowLabel) -> Option<usize> {
        in_step(&self.report().windows)
            .position(|(e, window)| label.names(e.step, &e.phase, window))
    }

    fn timeline(&self) -> &(Timeline, f64) {
        self.timeline.get_or_init(|| {
            let started = js_sys::Date::now();
            let t = self.analyzed.trace();
            let timeline = Timeline {
                layout: Layout::new(t),
                bands: self.analyzed.bands(),
                scores: self.analyzed.window_scores(),
                steps: self.analyzed.step_strip(),
                evidence: self
                    .analyzed
                    .findings()
                    .iter()
                    .map(|f| {
                        let names = f.evidence.iter().flat_map(|e| &e.events);
                        let ids = names.filter_map(|n| t.strings.find(n)).collect();
                        (f.id.to_string(), ids)
                    })
                    .collect(),
                in_range: RefCell::default(),
                heat_colours: super::draw::heat_colours(),
            };
            (timeline, js_sys::Date::now() - started)
        })
    }
}

/// The traces of the worker's load, by file index (`None`: not read, or a saved report), the
/// canvas the timeline draws into and the view it draws next.
#[derive(Default)]
pub struct Session {
    pub files: Vec<Option<Kept>>,
    pub canvas: Option<OffscreenCanvas>,
    pub frames: Frames,
}

impl Session {
    /// Keeps file `index`'s trace.
    pub fn keep(&mut self, index: usize, kept: Option<Kept>) {
        if self.files.len() <= index {
            self.files.resize_with(index + 1, || None);
        }
        self.files[index] = kept;
    }

    fn file(&self, index: usize) -> Result<&Kept, RequestError> {
        self.files
            .get(index)
            .and_then(Option::as_ref)
            .ok_or(RequestError::NoTrace { file: index })
    }

    /// The reply to one request; none for a view or a motion, which the next animation frames
    /// answer ([`Session::frame`]), nor for a retrain, which `worker::retrain` answers once it
    /// has the base set.
    pub fn answer(&mut self, request: Request) -> Option<Reply> {
        match request {
            Request::Prompts {
                file,
                options,
                endpoint,
            } => {
                let result = self.questions(file, &options, &endpoint);
                Some(Reply::Prompts {
                    file,
                    options,
                    endpoint,
                    result,
                })
            }
            Request::Perfetto { file } => Some(Reply::Perfetto {
                file,
                result: self.perfetto(file),
            }),
            Request::Timeline(request) => self
                .timeline(request)
                .unwrap_or_else(|error| {
                    Some(TimelineReply::Failed {
                        error,
                        drawing: false,
                    })
                })
                .map(|reply| Reply::Timeline(Box::new(reply))),
            Request::BundledModel { labels } => {
                Some(Reply::Retrained(Box::new(Ok(self.bundled(&labels)))))
            }
            Request::Retrain { .. } => None,
        }
    }

    /// The timeline's frame at `t` (ms, the animation frame's time; `at`: the same time in ms
    /// since 1970): the latest view drawn, if anything changed.
    pub fn frame(&mut self, t: f64, at: f64) -> Option<FromWorker> {
        let length = self.frames.file().map_or(0.0, |file| {
            self.file(file).map_or(0.0, |kept| {
                let (start, end) = kept.timeline().0.layout.span;
                end.saturating_sub(start) as f64
            })
        });
        let view = self.frames.next(t, length)?;
        let reply = match self.draw(&view) {
            Ok(mut drawn) => {
                self.frames.drawn(drawn.scroll);
                drawn.frame_at = at;
                TimelineReply::Drawn(drawn)
            }
            Err(error) => TimelineReply::Failed {
                error,
                drawing: true,
            },
        };
        Some(FromWorker::Frame(Box::new(reply)))
    }

    /// Fits a window model on the base set plus the kept labels that name windows of the traces
    /// held here (a label finds its trace by fingerprint), and rescores every trace with it.
    pub fn retrain(
        &mut self,
        base: &BaseSet,
        labels: &[WindowLabel],
    ) -> Result<Retrained, RetrainError> {
        let features = self.features();
        let mut kept = Vec::new();
        let mut left_out = Vec::new();
        let mut elsewhere: BTreeMap<(Option<&str>, Option<&str>), usize> = BTreeMap::new();
        for l in labels {
            let found = self.files.iter().zip(&features).find_map(|(k, f)| {
                let (k, f) = (k.as_ref()?, f.as_ref()?);
                (l.fingerprint.as_deref() == Some(k.fingerprint())).then_some((k, f))
            });
            let Some((k, f)) = found else {
                *elsewhere
                    .entry((l.trace.as_deref(), l.fingerprint.as_deref()))
                    .or_default() += 1;
                continue;
            };
            match (k.labelled(l), pattern(&l.pattern)) {
                (Some(g), Ok(p)) => kept.push((f[g].values.clone(), p)),
                (None, _) => left_out.push(LeftOut::NoWindow {
                    step: l.step,
                    phase: l.phase.clone(),
                    window: l.window,
                    trace: l.trace.clone(),
                }),
                (_, Err(e)) => left_out.push(e),
            }
        }
        for ((trace, fingerprint), n) in elsewhere {
            left_out.push(LeftOut::OtherTrace {
                labels: n,
                trace: trace.map(str::to_string),
                fingerprint: fingerprint.map(str::to_string),
            });
        }
        if kept.is_empty() {
            return Err(RetrainError::NoLabelHere {
                labels: labels.len(),
                left_out,
            });
        }
        let started = js_sys::Date::now();
        let model = base_set::retrain(base, &kept).map_err(|e| RetrainError::Fit {
            labels: kept.len(),
            detail: e.to_string(),
        })?;
        let fit_ms = js_sys::Date::now() - started;
        Ok(Retrained {
            model: Some(model.to_json()),
            used: kept.len(),
            left_out,
            base_windows: base.windows.len(),
            base_ms: 0.0,
            fit_ms,
            files: self.rescore(&model, &features, labels),
        })
    }

    /// Rescores every trace with the bundled model (`labels` name the windows that moved).
    fn bundled(&mut self, labels: &[WindowLabel]) -> Retrained {
        let features = self.features();
        Retrained {
            model: None,
            used: 0,
            left_out: Vec::new(),
            base_windows: 0,
            base_ms: 0.0,
            fit_ms: 0.0,
            files: self.rescore(Model::embedded(), &features, labels),
        }
    }

    /// Each trace's window features.
    fn features(&self) -> Vec<Option<Vec<WindowFeatures>>> {
        self.files
            .iter()
            .map(|k| k.as_ref().map(Kept::features))
            .collect()
    }

    fn rescore(
        &mut self,
        model: &Model,
        features: &[Option<Vec<WindowFeatures>>],
        labels: &[WindowLabel],
    ) -> Vec<Rescored> {
        self.files
            .iter_mut()
            .zip(features)
            .enumerate()
            .filter_map(|(file, (k, f))| {
                let (k, f) = (k.as_mut()?, f.as_ref()?);
                let changes = k.rescore(model, f, labels);
                Some(Rescored {
                    file,
                    report: k.report().clone(),
                    changes,
                })
            })
            .collect()
    }

    /// The LLM prompts of file `index`'s flagged windows, one per window, each with its
    /// request body for `endpoint`.
    fn questions(
        &self,
        index: usize,
        options: &SummaryOptions,
        endpoint: &Endpoint,
    ) -> Result<Vec<Question>, RequestError> {
        let kept = self.file(index)?;
        let prompts = kept.analyzed.prompts(options).into_iter();
        Ok(prompts
            .map(|prompt| Question {
                body: endpoint.body(&prompt),
                prompt,
            })
            .collect())
    }

    /// File `index`'s trace and analysis as a Perfetto export.
    fn perfetto(&self, index: usize) -> Result<String, RequestError> {
        let kept = self.file(index)?;
        let mut out = Vec::new();
        kept.analyzed
            .perfetto(&mut out, None)
            .map_err(|e| RequestError::Export {
                detail: e.to_string(),
            })?;
        Ok(String::from_utf8(out).expect("the export writes text"))
    }

    /// The reply to a timeline request; none for a view or a motion.
    fn timeline(
        &mut self,
        request: TimelineRequest,
    ) -> Result<Option<TimelineReply>, RequestError> {
        Ok(Some(match request {
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
            TimelineRequest::View(view) => {
                self.frames.show(view);
                return Ok(None);
            }
            TimelineRequest::Motion { file, motion } => {
                self.frames.set_motion(file, motion);
                return Ok(None);
            }
            TimelineRequest::Pick { view, x, y } => {
                let kept = self.file(view.file)?;
                TimelineReply::Picked {
                    file: view.file,
                    picked: kept.timeline().0.pick(kept.analyzed.trace(), &view, x, y),
                }
            }
            TimelineRequest::Details { file, event } => {
                let kept = self.file(file)?;
                let t = kept.analyzed.trace();
                if event as usize >= t.events.len() {
                    return Err(RequestError::NoSlice { file, event });
                }
                let details = inspect::details(t, &kept.timeline().0.layout, event);
                TimelineReply::Picked {
                    file,
                    picked: Picked::Slice(Box::new(details)),
                }
            }
            TimelineRequest::Search { file, text } => {
                let kept = self.file(file)?;
                let t = kept.analyzed.trace();
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
        }))
    }

    fn draw(&self, view: &View) -> Result<Drawn, RequestError> {
        let kept = self.file(view.file)?;
        let canvas = self.canvas.as_ref().ok_or(RequestError::NoCanvas)?;
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
            .ok_or(RequestError::NoContext)?
            .unchecked_into();
        kept.timeline()
            .0
            .draw(kept.analyzed.trace(), &ctx, view)
            .map_err(|e| RequestError::Draw {
                detail: js::detail(&e),
            })
    }
}
