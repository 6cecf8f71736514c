//! The page: a Yew component tree over the worker's results. Views only read [`Analyzed`]; the
//! analysis itself runs in the worker (the `worker` module), so the page stays responsive.
//!
//! The `App` is one state machine (loads, a shared link waiting for its trace, the tabs) whose
//! messages and view are read together; each view is its own module. The worker of the file
//! shown is the [`Client`]'s: the views ask it themselves, and its replies go to them.
//!
//! The page never parses or analyzes trace bytes: all of that runs in the worker (the timeline
//! too), and the page renders `Analyzed` and the worker's replies (it decodes and encodes share
//! links itself: bounded work on a few kilobytes). Nothing from a report, a saved file or a link
//! is rendered as HTML: every text goes through Yew's text nodes. A load replaces what is shown
//! only when at least one of its files was read; a cancelled load, or one where every file
//! failed, leaves the previous analysis in place.

mod banner;
mod charts;
mod client;
mod compare;
mod compare_steps;
mod cost;
mod errors;
mod export;
mod findings;
mod fleet;
mod llm;
mod load;
mod modules;
mod overview;
mod pool;
mod roofline;
mod run;
mod share;
mod table;
mod timeline;
mod viewer;

use std::rc::Rc;

use gloo_timers::callback::Interval;
use web_sys::{File, HtmlSelectElement};
use yew::prelude::*;

use torchtraceap::share::Omitted;
use torchtraceap::view_link::{self, SharedView, View};

use crate::format::bytes;
use crate::protocol::{Analyzed, Document, FileError, FromWorker, Outcome, Reply, Request};
use client::Client;
use pool::{AnalysisWorker, Pool};

/// Up to this many files get a button each; more get a drop-down list.
const MAX_FILE_TABS: usize = 8;

/// The sample trace bundled with the site (`www/samples/`, made by `ttap-dev synth`).
pub const SAMPLE_URL: &str = "samples/resnet50-a100-dataloader.pt.trace.json.gz";

pub enum Msg {
    Open(Vec<File>),
    /// A graph capture trace chosen (or removed) for the next loads.
    Capture(Option<File>),
    OpenSample,
    /// Something the user asked for failed; the message says what and what to do.
    Failed(String),
    /// The worker of the file shown changed (started, read, stopped; `Client`), with a notice
    /// when there is one.
    Worker(Option<String>),
    /// A message from the worker of file N of the load (or why it stopped).
    FromLoad(usize, Result<FromWorker, pool::WorkerFailure>),
    Cancel,
    Tick,
    Select(usize),
    Show(Tab),
    /// The user opened a finding (carried in a share link).
    SelectFinding(String),
    /// Show a finding's flagged window on the timeline.
    ShowOnTimeline(String),
    /// A band was clicked on the timeline: open its finding.
    OpenFinding(String),
    /// The LLM settings, previews and answers.
    Llm(llm::Msg),
    /// The files compared, before and after (indices into the loaded files).
    Pick((usize, usize)),
    /// Save the shown trace for Perfetto (its worker makes the file).
    Perfetto,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Overview,
    Findings,
    Kernels,
    Operators,
    Timeline,
    /// GPU and CPU time per model module.
    Modules,
    /// The main GPU's kernels against the device's roofs.
    Roofline,
    /// Two loaded traces, before and after.
    Compare,
    /// The loaded traces as the ranks of one run.
    Run,
}

/// A load in progress: its workers, and the results that have come back so far.
struct Loading {
    pool: Pool,
    _ticker: Interval,
    started_ms: f64,
    now_ms: f64,
}

pub struct App {
    loading: Option<Loading>,
    /// The worker that answers requests about the files shown.
    client: Client,
    /// Workers the last load started, and the most that ran at once: the page shows them as
    /// `data-workers` ("started/peak"), for tests and benchmarks.
    load_workers: (u32, u32),
    /// The largest wasm memory of the last load's workers (`data-memory`, bytes).
    load_memory: u64,
    /// The last load's early look (`data-early`): its heading and the ids it found.
    load_early: String,
    /// The finding the timeline moves to, numbered so that each request moves it.
    timeline_focus: Option<(u32, String)>,
    /// The files of the last load that read at least one trace; a cancelled load, or one where
    /// every file failed, leaves them as they are.
    files: Vec<Rc<Outcome>>,
    /// The files of the last load when none of them could be read, shown above `files`.
    failed: Vec<Outcome>,
    selected: usize,
    tab: Tab,
    notice: Option<String>,
    /// Loads that have ended (finished, failed or cancelled): the page shows it as `data-loads`,
    /// for tests to wait on.
    loads_ended: u32,
    /// Set while the page shows a shared link's report: how to recognise its trace when dropped.
    shared: Option<SharedLink>,
    /// The finding the user has open (from a link, or by clicking it).
    selected_finding: Option<String>,
    /// The LLM settings, each file's prompts and the questions asked.
    llm: Rc<llm::State>,
    /// The files the Compare view shows, before and after.
    compared: (usize, usize),
    /// A comparison or run link's view, shown while no trace is loaded.
    shared_view: Option<Rc<SharedView>>,
    /// Whether the file shown is an early look kept when its load was cancelled.
    early_kept: bool,
    /// The graph capture trace chosen to read the next traces' graph replays with.
    capture: Option<File>,
}

/// What a shared link said beyond its report.
struct SharedLink {
    fingerprint: String,
    omitted: Vec<Omitted>,
    selected_finding: Option<String>,
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

impl Component for App {
    type Message = Msg;
    type Properties = ();

    fn create(ctx: &Context<Self>) -> Self {
        let mut app = App {
            loading: None,
            client: Client::new(ctx.link().callback(Msg::Worker)),
            load_workers: (0, 0),
            load_memory: 0,
            load_early: String::new(),
            timeline_focus: None,
            files: Vec::new(),
            failed: Vec::new(),
            selected: 0,
            tab: Tab::Overview,
            notice: None,
            loads_ended: 0,
            shared: None,
            selected_finding: None,
            llm: Rc::default(),
            compared: (0, 1),
            shared_view: None,
            early_kept: false,
            capture: None,
        };
        let fragment = share::page_fragment();
        if view_link::is_view_link(&fragment) {
            app.open_view_link(&fragment);
        } else if !fragment.is_empty() {
            app.open_link(&fragment);
        }
        app
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Open(files) => {
                if files.is_empty() {
                    return false;
                }
                self.start(ctx, files);
            }
            Msg::Capture(capture) => self.capture = capture,
            Msg::OpenSample => {
                self.notice = None;
                ctx.link().send_future(async {
                    match load::fetch_sample(SAMPLE_URL).await {
                        Ok(file) => Msg::Open(vec![file]),
                        Err(e) => Msg::Failed(e),
                    }
                });
                return false;
            }
            Msg::Failed(e) => self.notice = Some(e),
            Msg::FromLoad(file, message) => {
                let Some(l) = &mut self.loading else {
                    return false;
                };
                l.pool.receive(file, message);
                l.now_ms = now_ms();
                if l.pool.is_done() {
                    self.loaded();
                }
            }
            Msg::Worker(notice) => {
                if notice.is_some() {
                    self.notice = notice;
                }
            }
            Msg::Cancel => {
                if let Some(l) = self.loading.take() {
                    self.loads_ended += 1;
                    // What was shown stays: the early look at the file, else the previous analysis.
                    let early = l.pool.early.as_ref();
                    self.notice = Some(match early.and_then(|e| load::early_outcome(e, &l.pool)) {
                        Some((outcome, said)) => {
                            self.show(vec![outcome], None, Vec::new(), None);
                            self.early_kept = true;
                            said
                        }
                        None if self.files.is_empty() => "Loading cancelled.".into(),
                        None => "Loading cancelled; the previous analysis is still shown.".into(),
                    });
                }
            }
            Msg::Tick => match &mut self.loading {
                Some(l) => l.now_ms = now_ms(),
                None => return false,
            },
            Msg::Select(i) => self.selected = i,
            Msg::Show(tab) => self.tab = tab,
            Msg::Pick(pair) => self.compared = pair,
            Msg::SelectFinding(id) => self.selected_finding = Some(id),
            Msg::ShowOnTimeline(id) => {
                let n = self.timeline_focus.as_ref().map_or(0, |f| f.0) + 1;
                self.timeline_focus = Some((n, id));
                self.tab = Tab::Timeline;
            }
            Msg::OpenFinding(id) => {
                if !id.starts_with("unexplained:") {
                    self.selected_finding = Some(id);
                }
                self.tab = Tab::Findings;
            }
            Msg::Llm(msg) => {
                if let llm::Msg::Worker(Reply::Retrained(result)) = &msg {
                    for rescored in result.iter().flat_map(|r| &r.files) {
                        if let Some(Ok(Document::Analysis(a))) = self
                            .files
                            .get_mut(rescored.file)
                            .map(|f| &mut Rc::make_mut(f).result)
                        {
                            a.report = rescored.report.clone();
                        }
                    }
                }
                let send = ctx.link().callback(Msg::Llm);
                let wanted = Rc::make_mut(&mut self.llm).update(msg, &send);
                for request in wanted {
                    let on_reply = send.reform(llm::Msg::Worker);
                    self.client.ask(request, self.selected, on_reply);
                }
            }
            Msg::Perfetto => {
                let file = self.selected;
                let name = self
                    .files
                    .get(file)
                    .map_or("trace".into(), |f| f.name.clone());
                let failed = ctx.link().callback(Msg::Failed);
                let on_reply = Callback::from(move |reply| {
                    let Reply::Perfetto { result, .. } = reply else {
                        return;
                    };
                    let saved = result.map_err(|e| errors::request_error(&e));
                    if let Err(e) = saved.and_then(|json| export::save_perfetto(&name, &json)) {
                        failed.emit(e);
                    }
                });
                self.client.ask(Request::Perfetto { file }, file, on_reply);
                return false;
            }
        }
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        html! {
            <load::DropZone on_files={link.callback(Msg::Open)} loads_ended={self.loads_ended}
                workers={self.load_workers} memory={self.load_memory}
                early={self.load_early.clone()}>
                <header class="top">
                    <div class="brand">
                        <h1>{"TorchTraceAP"}</h1>
                        <p class="tagline">{"PyTorch profiler traces, analyzed in your browser. Nothing is uploaded."}</p>
                    </div>
                    <load::Picker
                        on_files={link.callback(Msg::Open)}
                        on_sample={link.callback(|_| Msg::OpenSample)}
                        on_capture={link.callback(Msg::Capture)}
                        capture={self.capture.as_ref().map(File::name)}
                        busy={self.loading.is_some()} />
                </header>
                if let Some(notice) = &self.notice {
                    <p class="notice" role="status">{notice}</p>
                }
                if let Some((name, read)) = self.client.reading_now() {
                    <p class="notice rereading" role="status">{format!(
                        "Reading {name} again ({:.0} %): after a load, the page keeps one trace in \
                         memory and reads another again when asked about it.", read * 100.0)}</p>
                }
                if let Some(l) = &self.loading {
                    { load::progress(&l.pool, l.now_ms - l.started_ms, link.callback(|_| Msg::Cancel)) }
                }
                { for self.failed.iter().map(error_panel) }
                if self.files.is_empty() && self.loading.is_none() && self.failed.is_empty() {
                    if let Some(v) = &self.shared_view {
                        { shared_view(v) }
                    } else {
                        { load::welcome() }
                    }
                } else {
                    { self.view_files(ctx) }
                }
            </load::DropZone>
        }
    }
}

/// Why a file could not be analyzed; nothing for a file that could.
fn error_panel(file: &Outcome) -> Html {
    let Err(error) = &file.result else {
        return Html::default();
    };
    let message = errors::file_error(error, &file.name);
    html! {
        <section class="error-panel" role="alert">
            <h2>{format!("Could not read {}", file.name)}</h2>
            <p class="error-size">{format!("A file of {}.", bytes(file.size))}</p>
            <p class="error-message">{message}</p>
        </section>
    }
}

/// A comparison or run link's view: recomputed by this page from the link's figures.
fn shared_view(v: &SharedView) -> Html {
    let (what, body) = match &v.view {
        View::Comparison { before, after } => (
            "comparison",
            html! {
                <section class="compare">
                    <compare::ComparisonView before={Rc::new((**before).clone())}
                        after={Rc::new((**after).clone())} shared=true />
                </section>
            },
        ),
        View::Run(profiles) => (
            "run view",
            html! {
                <run::RunPanel profiles={Rc::new(profiles.clone())} shared=true />
            },
        ),
    };
    html! {
        <section class="analysis shared-view">
            <div class="notice report-only link-note shared-banner" role="status">
                <p><strong>{format!("Shared {what}, read-only: not made from traces in this browser.")}</strong>
                    {" It shows the figures the link carries, recomputed and worded by this page; \
                      the traces are not included. Drop the traces to analyze them."}</p>
                if v.rows_left_out > 0 {
                    <p>{format!("Left out of the link to keep it short: {} table rows with the smallest changes.",
                        v.rows_left_out)}</p>
                }
            </div>
            { body }
        </section>
    }
}

impl App {
    /// Shows the comparison or run view a link carries (or why it cannot be read).
    fn open_view_link(&mut self, fragment: &str) {
        match view_link::decode(fragment) {
            Ok(v) => self.shared_view = Some(Rc::new(v)),
            Err(e) => {
                self.failed = vec![Outcome {
                    file: 0,
                    name: "the shared link".to_string(),
                    size: fragment.len() as u64,
                    worker_memory_bytes: 0,
                    result: Err(FileError::Link {
                        detail: e.to_string(),
                    }),
                }]
            }
        }
    }

    /// Every file of the load has its outcome: shows them, unless none could be read.
    fn loaded(&mut self) {
        let Some(l) = self.loading.take() else {
            return;
        };
        self.loads_ended += 1;
        self.load_workers = (l.pool.started, l.pool.peak);
        self.load_early = l.pool.early.as_ref().map_or_else(String::new, |e| {
            let ids: Vec<&str> = e.report.findings.iter().map(|f| f.id.as_str()).collect();
            format!("{}: {}", load::early_heading(e), ids.join(","))
        });
        self.load_memory = (l.pool.outcomes.iter().map(|o| o.worker_memory_bytes))
            .chain(l.pool.progress.iter().flatten().map(|p| p.memory_bytes))
            .max()
            .unwrap_or(0);
        let (handles, capture) = (l.pool.files.clone(), l.pool.capture.clone());
        let (outcomes, kept) = l.pool.finish();
        if outcomes.iter().any(|f| f.result.is_ok()) {
            self.show(outcomes, kept, handles, capture);
        } else {
            self.failed = outcomes;
        }
    }

    /// Shows `outcomes` (the files `handles`, with `capture` beside them; `kept` holds file 0's
    /// trace) in place of what was shown.
    fn show(
        &mut self,
        outcomes: Vec<Outcome>,
        kept: Option<AnalysisWorker>,
        handles: Vec<File>,
        capture: Option<File>,
    ) {
        self.client.hold(kept, handles, capture);
        self.early_kept = false;
        Rc::make_mut(&mut self.llm).forget_files();
        self.files = outcomes.into_iter().map(Rc::new).collect();
        self.selected = 0;
        self.compared = (0, 1);
        self.shared_view = None;
        self.tab = Tab::Findings;
        self.selected_finding = None;
        if let Some(link) = self.shared.take() {
            self.match_link(link);
        }
    }

    /// Shows the report a shared link carries (or why it cannot be read).
    fn open_link(&mut self, fragment: &str) {
        let (result, name) = match torchtraceap::share::decode(fragment) {
            Ok(link) => {
                self.selected_finding = link.selected_finding.clone();
                self.tab = Tab::Findings;
                self.shared = Some(SharedLink {
                    fingerprint: link.fingerprint.clone(),
                    omitted: link.omitted,
                    selected_finding: link.selected_finding,
                });
                let analyzed = Analyzed {
                    summary: None,
                    report: link.report,
                    fingerprint: Some(link.fingerprint),
                    profile: None,
                    modules: None,
                };
                (
                    Ok(Document::Analysis(Box::new(analyzed))),
                    "the shared analysis",
                )
            }
            Err(e) => (
                Err(FileError::Link {
                    detail: e.to_string(),
                }),
                "the shared link",
            ),
        };
        let outcome = Outcome {
            file: 0,
            name: name.to_string(),
            size: fragment.len() as u64,
            worker_memory_bytes: 0,
            result,
        };
        match outcome.result {
            Ok(_) => self.files = vec![Rc::new(outcome)],
            Err(_) => self.failed = vec![outcome],
        }
    }

    /// After a load that follows a shared link: when one of the files is the link's trace,
    /// shows it with what the sharer had selected.
    fn match_link(&mut self, link: SharedLink) {
        let found = self.files.iter().position(|f| {
            f.analyzed()
                .is_some_and(|a| a.fingerprint.as_deref() == Some(link.fingerprint.as_str()))
        });
        self.notice = Some(match found {
            Some(i) => {
                self.selected = i;
                self.selected_finding = link.selected_finding;
                format!(
                    "Full view restored: {} is the trace the shared link was made from.",
                    self.files[i].name
                )
            }
            None => "This is not the trace the shared link was made from (their fingerprints \
                     differ): showing its own analysis."
                .to_string(),
        });
    }

    fn start(&mut self, ctx: &Context<Self>, files: Vec<File>) {
        self.loading = None;
        self.notice = None;
        self.failed.clear();
        let link = ctx.link().clone();
        let on_message = link.callback(|(file, m)| Msg::FromLoad(file, m));
        let pool = Pool::new(files, self.capture.clone(), on_message);
        self.loading = Some(Loading {
            pool,
            _ticker: Interval::new(250, move || link.send_message(Msg::Tick)),
            started_ms: now_ms(),
            now_ms: now_ms(),
        });
        // No worker could start: every file has its outcome (why) already.
        if self.loading.as_ref().is_some_and(|l| l.pool.is_done()) {
            self.loaded();
        }
    }

    fn view_files(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let label = |f: &Outcome| {
            if f.result.is_err() {
                format!("{} (not read)", f.name)
            } else {
                f.name.clone()
            }
        };
        let tabs_for_files = match self.files.len() {
            0 | 1 => Html::default(),
            // A few files (the ranks of a small run): one button each.
            2..=MAX_FILE_TABS => html! {
                <nav class="files" aria-label="Files">
                    { for self.files.iter().enumerate().map(|(i, f)| {
                        let class = classes!("file-tab", (i == self.selected).then_some("active"),
                            f.result.is_err().then_some("failed"));
                        html! { <button {class} onclick={link.callback(move |_| Msg::Select(i))}>{label(f)}</button> }
                    }) }
                </nav>
            },
            // More: a list to choose from.
            n => {
                let onchange = link.callback(|e: Event| {
                    let select: HtmlSelectElement = e.target_unchecked_into();
                    Msg::Select(select.selected_index().max(0) as usize)
                });
                html! {
                    <nav class="files" aria-label="Files">
                        <label>{format!("File ({} of {n}): ", self.selected + 1)}
                            <select class="file-select" {onchange}>
                                { for self.files.iter().enumerate().map(|(i, f)| html! {
                                    <option selected={i == self.selected}>{label(f)}</option>
                                }) }
                            </select>
                        </label>
                    </nav>
                }
            }
        };
        let Some(file) = self.files.get(self.selected) else {
            return Html::default();
        };
        let body = match &file.result {
            Err(_) => error_panel(file),
            Ok(Document::Analysis(analyzed)) => self.view_analysis(ctx, file, analyzed),
            Ok(Document::Fleet(_)) => html! { <fleet::FleetView file={Rc::clone(file)} /> },
        };
        html! { <>{tabs_for_files}{body}</> }
    }

    fn view_analysis(&self, ctx: &Context<Self>, file: &Rc<Outcome>, a: &Analyzed) -> Html {
        let link = ctx.link();
        let tab = |t: Tab, label: String| {
            let class = classes!("tab", (self.tab == t).then_some("active"));
            html! { <button {class} role="tab" aria-selected={(self.tab == t).to_string()}
            onclick={link.callback(move |_| Msg::Show(t))}>{label}</button> }
        };
        let analysis = Rc::clone(file);
        let summary = a.summary.as_ref();
        let profiles = self
            .files
            .iter()
            .filter(|f| f.analyzed().is_some_and(|a| a.profile.is_some()))
            .count();
        let content = match (self.tab, summary) {
            (Tab::Findings, _) => html! {
                <findings::Findings file={analysis} selected={self.selected_finding.clone()}
                    on_select={link.callback(Msg::SelectFinding)}
                    on_timeline={summary.map(|_| link.callback(Msg::ShowOnTimeline))}
                    llm={summary.map(|_| Rc::clone(&self.llm))} on_llm={link.callback(Msg::Llm)} />
            },
            (Tab::Kernels, Some(s)) => table::kernels(&s.top_kernels),
            (Tab::Timeline, Some(_)) => html! {
                <timeline::Timeline key={self.client.viewers()} file={file.file} client={self.client.clone()}
                    focus={self.timeline_focus.clone()}
                    on_finding={link.callback(Msg::OpenFinding)} />
            },
            (Tab::Operators, Some(s)) => table::operators(&s.top_operators),
            (Tab::Roofline, Some(_)) => html! { <roofline::RooflineView file={analysis} /> },
            (Tab::Modules, _) if a.modules.is_some() => {
                html! { <modules::Modules file={analysis} /> }
            }
            (Tab::Compare, _) => html! {
                <compare::Compare files={self.files.clone()} before={self.compared.0}
                    after={self.compared.1} on_pick={link.callback(Msg::Pick)} />
            },
            (Tab::Run, _) => html! { <run::Run files={self.files.clone()} /> },
            _ => html! { <overview::Overview file={analysis} /> },
        };
        let note = match (&self.shared, summary) {
            (Some(link), _) => Some(banner::Made::Link(&link.omitted)),
            (None, None) if self.early_kept => Some(banner::Made::Early(&file.name)),
            (None, None) => Some(banner::Made::Saved(&file.name)),
            (None, Some(_)) => None,
        }
        .map(banner::banner);
        html! {
            <section class="analysis">
                { for note }
                <nav class="tabs" role="tablist">
                    { tab(Tab::Overview, "Overview".into()) }
                    { tab(Tab::Findings, format!("Findings ({})", a.report.findings.len())) }
                    if let Some(s) = summary {
                        { tab(Tab::Kernels, format!("Kernels ({})", s.top_kernels.len())) }
                        { tab(Tab::Operators, format!("Operators ({})", s.top_operators.len())) }
                        { tab(Tab::Timeline, "Timeline".into()) }
                        { tab(Tab::Roofline, "Roofline".into()) }
                    }
                    if a.modules.is_some() {
                        { tab(Tab::Modules, "Modules".into()) }
                    }
                    if profiles >= 2 {
                        { tab(Tab::Compare, "Compare".into()) }
                    }
                    if run::profiles(&self.files).is_some() {
                        { tab(Tab::Run, "Run".into()) }
                    }
                    <share::Share file={Rc::clone(file)} selected_finding={self.selected_finding.clone()} />
                    { llm::settings_button(&self.llm, &link.callback(Msg::Llm)) }
                    <export::Export file={Rc::clone(file)}
                        on_error={link.callback(Msg::Failed)}
                        on_perfetto={link.callback(|_| Msg::Perfetto)} />
                    { llm::settings_panel(&self.llm, &link.callback(Msg::Llm)) }
                </nav>
                { content }
            </section>
        }
    }
}
