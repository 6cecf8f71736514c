//! Asking an LLM about a flagged window: the settings panel (kept in the browser's local storage
//! only), the preview of the exact request body, and the answer streaming in beside its finding.
//!
//! Nothing is sent without the user's click on Send, and what is sent is the body the preview
//! shows (the Send button carries the very string rendered). The prompts come from the worker
//! (`ToWorker::Prompts`), which holds the trace; the page only turns a `Prompt` into a body with
//! `Endpoint::body`. The model's text is rendered as text nodes, never as HTML.
//!
//! The loop back to the ML stage: after an answer about an unexplained region the user can keep
//! a label for its window (the anti-pattern the answer names, preselected, or another, or "not
//! an anti-pattern") and export the kept labels as the ML stage's label file (`ml::labels`).
//! Labels live in this page's memory only until exported: never in local storage, a share link
//! or a request.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use torchtraceap::llm::protocol::{parse_answer, without_key, Answer, Endpoint, Protocol};
use torchtraceap::llm::summary::{estimate_tokens, Prompt, SummaryOptions};
use torchtraceap::ml::labels::{self, WindowLabel, NOT_AN_ANTI_PATTERN};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

use super::export::{download, stem};
use super::format::{bytes, count};
use crate::llm::{message, Failure, Request};
use crate::protocol::Outcome;

/// Where the settings are kept, the API key left out (the browser's local storage of this
/// page's origin).
const STORAGE_KEY: &str = "torchtraceap.llm-settings.v1";
/// Where the API key is kept: the session storage of this tab by default (gone when the tab
/// closes), the local storage when the user chose "remember on this device".
const KEY_STORAGE_KEY: &str = "torchtraceap.llm-key.v1";

/// The endpoint and how prompts are made. Stored in this browser only: never in a share link,
/// a saved report or a request other than the one to the endpoint itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub endpoint: Endpoint,
    pub summary: SummaryOptions,
    /// Keep the API key in local storage (across sessions) rather than for this tab's session.
    #[serde(default)]
    pub remember_key: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            endpoint: Endpoint::new("http://127.0.0.1:8080", Protocol::OpenAi, "codellama"),
            summary: SummaryOptions::default(),
            remember_key: false,
        }
    }
}

impl Settings {
    /// The stored settings, or the defaults when none are stored or they cannot be read (a
    /// later format, or edited by hand).
    pub fn load() -> Settings {
        let mut settings = storage()
            .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
            .map_or_else(Settings::default, |text| Settings::from_json(&text));
        let kept = key_storage(settings.remember_key)
            .and_then(|s| s.get_item(KEY_STORAGE_KEY).ok().flatten());
        // A key in the settings themselves (stored by an earlier version) stays for this
        // session only: saving moves it out of the local storage.
        settings.endpoint.api_key = kept.or(settings.endpoint.api_key.take());
        if settings.endpoint.api_key.is_some() && !settings.remember_key {
            let _ = settings.save();
        }
        settings
    }

    fn from_json(text: &str) -> Settings {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// Stores the settings, and the API key where [`Settings::remember_key`] says (removed
    /// from the other storage); the error says why the browser refused (private mode, quota).
    fn save(&self) -> Result<(), String> {
        let mut stored = self.clone();
        let key = stored.endpoint.api_key.take();
        let text = serde_json::to_string(&stored).expect("settings serialize");
        let refused = |e| format!("the browser refused to store them ({e:?})");
        storage()
            .ok_or_else(|| "this browser gives the page no local storage".to_string())?
            .set_item(STORAGE_KEY, &text)
            .map_err(refused)?;
        if let Some(other) = key_storage(!self.remember_key) {
            other.remove_item(KEY_STORAGE_KEY).map_err(refused)?;
        }
        let keys = key_storage(self.remember_key)
            .ok_or_else(|| "this browser gives the page no storage for the key".to_string())?;
        match key {
            Some(key) => keys.set_item(KEY_STORAGE_KEY, &key),
            None => keys.remove_item(KEY_STORAGE_KEY),
        }
        .map_err(refused)
    }

    /// Removes the settings and the key from both storages.
    fn forget() {
        for s in [storage(), key_storage(false)].into_iter().flatten() {
            let _ = s.remove_item(STORAGE_KEY);
            let _ = s.remove_item(KEY_STORAGE_KEY);
        }
    }

    /// The options the worker builds prompts with: every flagged window (one request per
    /// click, so no cap is needed).
    pub fn options(&self) -> SummaryOptions {
        SummaryOptions {
            max_windows: usize::MAX,
            ..self.summary.clone()
        }
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Where the API key goes: the local storage when remembered, else this tab's session storage.
fn key_storage(remember: bool) -> Option<web_sys::Storage> {
    if remember {
        storage()
    } else {
        web_sys::window()?.session_storage().ok().flatten()
    }
}

/// This page's origin (`http://127.0.0.1:8080`): what a cross-origin endpoint must allow.
fn page_origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}

/// A file's prompts, for the options they were made with.
#[derive(Clone, Debug, PartialEq)]
enum Prompts {
    Pending(SummaryOptions),
    Ready(SummaryOptions, Rc<Vec<Prompt>>),
    Failed(SummaryOptions, String),
}

impl Prompts {
    fn options(&self) -> &SummaryOptions {
        match self {
            Prompts::Pending(o) | Prompts::Ready(o, _) | Prompts::Failed(o, _) => o,
        }
    }
}

/// One question about one flagged window.
#[derive(Clone, Debug, PartialEq)]
enum Exchange {
    /// The request body is shown; nothing is sent yet.
    Preview,
    Sending {
        id: u64,
        request: Request,
        text: String,
    },
    Answered(Answer),
    Failed {
        message: String,
        text: String,
    },
}

/// The page's LLM state: settings, each file's prompts (from the worker) and the exchanges, by
/// file index and prompt key (`finding:<id>`, `unexplained:<step>:<window>`).
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    settings: Settings,
    settings_open: bool,
    /// Why the settings could not be stored, when the browser refused.
    storage_error: Option<String>,
    prompts: BTreeMap<usize, Prompts>,
    exchanges: BTreeMap<(usize, String), Exchange>,
    next_id: u64,
    /// The pattern the user picked for an answered region, by file and prompt key, until kept.
    choices: BTreeMap<(usize, String), String>,
    /// The labels the user kept, in the order kept; they outlive the files shown (each names
    /// its trace) until the page closes, and leave it only through Export labels.
    labels: Vec<WindowLabel>,
    /// Why the last export failed.
    export_error: Option<String>,
}

pub enum Msg {
    ToggleSettings,
    Settings(Settings),
    ForgetSettings,
    /// The findings of a file are shown: make sure its prompts are there.
    NeedPrompts(usize),
    Preview(usize, String),
    Close(usize, String),
    /// Send this body (the previewed text) for this file and key.
    Send(usize, String, String),
    Cancel(usize, String),
    Text(usize, String, u64, String),
    Ended(usize, String, u64, Result<String, Failure>),
    /// The pattern picked for the region `key` of `file` ("" for none yet).
    Choose(usize, String, String),
    /// Keep this label (replacing one for the same window of the same trace).
    Keep(WindowLabel),
    /// Drop the label for this label's window.
    Unkeep(WindowLabel),
    /// Offer the kept labels as a download.
    ExportLabels,
}

/// Prompts to ask the worker for: a file's, made with these options.
pub type PromptsRequest = (usize, SummaryOptions);

impl Default for State {
    /// The stored settings; no prompts or exchanges yet.
    fn default() -> State {
        State {
            settings: Settings::load(),
            settings_open: false,
            storage_error: None,
            prompts: BTreeMap::new(),
            exchanges: BTreeMap::new(),
            next_id: 0,
            choices: BTreeMap::new(),
            labels: Vec::new(),
            export_error: None,
        }
    }
}

impl State {
    /// A new set of files is shown: the old files' prompts and answers go, and requests still
    /// running for them are cancelled.
    pub fn forget_files(&mut self) {
        for exchange in self.exchanges.values() {
            if let Exchange::Sending { request, .. } = exchange {
                request.cancel();
            }
        }
        self.exchanges.clear();
        self.prompts.clear();
        self.choices.clear();
    }

    /// The worker's answer to a [`PromptsRequest`]; one made with other options than the
    /// current ones (the settings changed since) is dropped.
    pub fn prompts_arrived(
        &mut self,
        file: usize,
        options: SummaryOptions,
        result: Result<Vec<Prompt>, String>,
    ) {
        if options != self.settings.options() {
            return;
        }
        let prompts = match result {
            Ok(p) => Prompts::Ready(options, Rc::new(p)),
            Err(e) => Prompts::Failed(options, e),
        };
        self.prompts.insert(file, prompts);
    }

    /// Applies `msg`; returns the prompts to ask the worker for. `send` delivers the messages of
    /// requests in flight.
    pub fn update(&mut self, msg: Msg, send: &Callback<Msg>) -> Vec<PromptsRequest> {
        match msg {
            Msg::ToggleSettings => self.settings_open = !self.settings_open,
            Msg::Settings(settings) => {
                self.storage_error = settings.save().err();
                self.settings = settings;
                // Files whose prompts were made with other options need new ones.
                let options = self.settings.options();
                let files: Vec<usize> = self
                    .prompts
                    .iter()
                    .filter(|(_, p)| *p.options() != options)
                    .map(|(f, _)| *f)
                    .collect();
                return files.into_iter().filter_map(|f| self.need(f)).collect();
            }
            Msg::ForgetSettings => {
                Settings::forget();
                self.storage_error = None;
                self.settings = Settings::default();
                let files: Vec<usize> = self.prompts.keys().copied().collect();
                return files.into_iter().filter_map(|f| self.need(f)).collect();
            }
            Msg::NeedPrompts(file) => return self.need(file).into_iter().collect(),
            Msg::Preview(file, key) => {
                self.exchanges.insert((file, key), Exchange::Preview);
                return self.need(file).into_iter().collect();
            }
            Msg::Close(file, key) => {
                self.exchanges.remove(&(file, key));
            }
            Msg::Send(file, key, body) => self.send(file, key, body, send),
            Msg::Cancel(file, key) => {
                if let Some(Exchange::Sending { request, .. }) =
                    self.exchanges.get(&(file, key.clone()))
                {
                    request.cancel();
                }
            }
            Msg::Text(file, key, id, piece) => {
                if let Some(Exchange::Sending {
                    id: current, text, ..
                }) = self.exchanges.get_mut(&(file, key))
                {
                    if *current == id {
                        text.push_str(&piece);
                    }
                }
            }
            Msg::Ended(file, key, id, result) => {
                let slot = (file, key);
                let Some(Exchange::Sending {
                    id: current, text, ..
                }) = self.exchanges.get(&slot)
                else {
                    return Vec::new();
                };
                if *current != id {
                    return Vec::new();
                }
                let ended = match result {
                    Ok(answer) => Exchange::Answered(parse_answer(&answer)),
                    Err(failure) => Exchange::Failed {
                        message: self.failure_message(&failure),
                        text: text.clone(),
                    },
                };
                self.exchanges.insert(slot, ended);
            }
            Msg::Choose(file, key, pattern) => {
                self.choices.insert((file, key), pattern);
            }
            Msg::Keep(label) => {
                self.labels.retain(|l| !same_window(l, &label));
                self.labels.push(label);
            }
            Msg::Unkeep(label) => self.labels.retain(|l| !same_window(l, &label)),
            Msg::ExportLabels => {
                self.export_error = download(
                    &labels_file_name(&self.labels),
                    "application/json",
                    &labels::to_json(&self.labels),
                )
                .err();
            }
        }
        Vec::new()
    }

    /// Asks for `file`'s prompts unless they are there (or on their way) for the current options.
    fn need(&mut self, file: usize) -> Option<PromptsRequest> {
        let options = self.settings.options();
        if self
            .prompts
            .get(&file)
            .is_some_and(|p| *p.options() == options)
        {
            return None;
        }
        self.prompts.insert(file, Prompts::Pending(options.clone()));
        Some((file, options))
    }

    /// What to tell the user about `failure`: never the API key, even where the server echoed
    /// it back.
    fn failure_message(&self, failure: &Failure) -> String {
        without_key(&message(failure, &page_origin()), &self.settings.endpoint)
    }

    fn send(&mut self, file: usize, key: String, body: String, send: &Callback<Msg>) {
        let request = match Request::new() {
            Ok(r) => r,
            Err(failure) => {
                let message = self.failure_message(&failure);
                self.exchanges.insert(
                    (file, key),
                    Exchange::Failed {
                        message,
                        text: String::new(),
                    },
                );
                return;
            }
        };
        self.next_id += 1;
        let id = self.next_id;
        self.exchanges.insert(
            (file, key.clone()),
            Exchange::Sending {
                id,
                request: request.clone(),
                text: String::new(),
            },
        );
        let endpoint = self.settings.endpoint.clone();
        let send = send.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let on_text = {
                let (send, key) = (send.clone(), key.clone());
                move |piece: &str| send.emit(Msg::Text(file, key.clone(), id, piece.to_string()))
            };
            let result = request.send(&endpoint, &body, on_text).await;
            send.emit(Msg::Ended(file, key, id, result));
        });
    }

    /// The prompt for `key` of `file`, when the prompts are there.
    fn prompt(&self, file: usize, key: &str) -> Option<&Prompt> {
        match self.prompts.get(&file)? {
            Prompts::Ready(_, p) => p.iter().find(|p| p.key == key),
            _ => None,
        }
    }
}

/// Whether two labels are for the same window of the same trace.
fn same_window(a: &WindowLabel, b: &WindowLabel) -> bool {
    a.fingerprint == b.fingerprint && a.step == b.step && a.window == b.window && a.phase == b.phase
}

/// `<trace>.labels.json` when every label is for one trace, else `torchtraceap.labels.json`.
fn labels_file_name(labels: &[WindowLabel]) -> String {
    let trace = labels.first().and_then(|l| l.trace.as_deref());
    match trace {
        Some(t) if labels.iter().all(|l| l.trace.as_deref() == Some(t)) => {
            format!("{}.labels.json", stem(t))
        }
        _ => "torchtraceap.labels.json".to_string(),
    }
}

/// The label an unexplained region's key (`unexplained:<step>:<window index>`) would get in
/// this trace, with `pattern` empty: its window's phase from the report, the trace's name and
/// fingerprint. `None` for other keys and for a report without its trace.
fn region_label(outcome: &Outcome, key: &str) -> Option<WindowLabel> {
    let analyzed = outcome.result.as_ref().ok()?;
    let mut parts = key.strip_prefix("unexplained:")?.split(':');
    let step: i64 = parts.next()?.parse().ok()?;
    let index: usize = parts.next()?.parse().ok()?;
    let window = analyzed
        .report
        .windows
        .iter()
        .filter(|w| w.step == step)
        .nth(index)?;
    Some(WindowLabel {
        step,
        phase: window.phase.clone(),
        pattern: String::new(),
        window: Some(index),
        trace: Some(outcome.name.clone()),
        fingerprint: Some(analyzed.fingerprint.clone()?),
    })
}

/// How a pattern is offered in the list.
fn pattern_name(pattern: &str) -> String {
    if pattern == NOT_AN_ANTI_PATTERN {
        "not an anti-pattern".to_string()
    } else {
        pattern.to_string()
    }
}

/// After an answer about a region: the label to keep for its window, with the anti-pattern the
/// answer names preselected.
fn keep_view(
    state: &State,
    file: usize,
    key: &str,
    region: WindowLabel,
    on: &Callback<Msg>,
) -> Html {
    let Some(Exchange::Answered(answer)) = state.exchanges.get(&(file, key.to_string())) else {
        return Html::default();
    };
    let said = answer.anti_pattern.as_deref();
    let suggested = said.and_then(labels::pattern_of);
    let kept = state.labels.iter().find(|l| same_window(l, &region));
    let choice = state
        .choices
        .get(&(file, key.to_string()))
        .cloned()
        .or_else(|| kept.map(|l| l.pattern.clone()))
        .or_else(|| suggested.map(str::to_string))
        .unwrap_or_default();
    let onchange = {
        let (on, k) = (on.clone(), key.to_string());
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            on.emit(Msg::Choose(file, k.clone(), select.value()));
        })
    };
    let keep = {
        let label = WindowLabel {
            pattern: choice.clone(),
            ..region.clone()
        };
        on.reform(move |_| Msg::Keep(label.clone()))
    };
    let note = match (said, suggested) {
        (Some(s), Some(p)) => format!("The answer says \u{201c}{s}\u{201d}: {}.", pattern_name(p)),
        (Some(s), None) => format!(
            "The answer says \u{201c}{s}\u{201d}, which names none of the detectors' anti-patterns."
        ),
        (None, _) => "The answer names no anti-pattern.".to_string(),
    };
    let note = if choice.is_empty() {
        format!("{note} Choose one to keep a label.")
    } else {
        note
    };
    let place = match region.window {
        Some(w) => format!("step {} {} (window {})", region.step, region.phase, w + 1),
        None => format!("step {} {}", region.step, region.phase),
    };
    html! {
        <div class="llm-label">
            <div class="llm-actions">
                <label>{"Label this window as "}
                    <select class="llm-label-choice" {onchange}>
                        <option value="" selected={choice.is_empty()}>{"Choose…"}</option>
                        { for labels::patterns().map(|p| html! {
                            <option value={p} selected={choice == p}>{pattern_name(p)}</option>
                        }) }
                    </select>
                </label>
                <button class="llm-keep" disabled={choice.is_empty()} onclick={keep}>
                    { if kept.is_some() { "Update label" } else { "Keep as label" } }
                </button>
            </div>
            <p class="llm-label-note">{note}</p>
            if let Some(l) = kept {
                <p class="llm-kept">
                    {format!("Kept: {place} is {}. ", pattern_name(&l.pattern))}
                    <button class="llm-unkeep" onclick={
                        let l = l.clone();
                        on.reform(move |_| Msg::Unkeep(l.clone()))
                    }>{"Remove"}</button>
                </p>
            }
        </div>
    }
}

/// The kept labels and their export, when there are any.
fn labels_bar(state: &State, on: &Callback<Msg>) -> Html {
    if state.labels.is_empty() {
        return Html::default();
    }
    let traces: std::collections::BTreeSet<_> =
        state.labels.iter().map(|l| &l.fingerprint).collect();
    html! {
        <div class="llm-labels">
            <div class="llm-actions">
                <span class="llm-labels-count">{format!(
                    "{} label(s) kept for {} trace(s), in this page only (not in share links or saved \
                     reports) until exported.", state.labels.len(), traces.len()
                )}</span>
                <button class="llm-export-labels" onclick={on.reform(|_| Msg::ExportLabels)}>{"Export labels"}</button>
            </div>
            <p class="llm-note">{"The file is the ML stage's label format (read by "}<code>{"ttap eval --labels"}</code>
                {" and "}<code>{"ttap features --labels"}</code>{" with the trace)."}</p>
            if let Some(e) = &state.export_error {
                <p class="llm-error" role="alert">{e}</p>
            }
        </div>
    }
}

/// The button that opens the settings panel.
pub fn settings_button(state: &State, on: &Callback<Msg>) -> Html {
    html! {
        <button class="llm-settings-button" aria-expanded={state.settings_open.to_string()}
            onclick={on.reform(|_| Msg::ToggleSettings)}>{"LLM settings"}</button>
    }
}

/// The settings panel, when open.
pub fn settings_panel(state: &State, on: &Callback<Msg>) -> Html {
    if !state.settings_open {
        return Html::default();
    }
    let s = &state.settings;
    // Each field sends the whole settings with its change.
    let text = |id: &'static str,
                label: &'static str,
                kind: &'static str,
                value: String,
                set: fn(&mut Settings, String)| {
        let (current, on) = (s.clone(), on.clone());
        let oninput = Callback::from(move |e: InputEvent| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let mut next = current.clone();
            set(&mut next, input.value());
            on.emit(Msg::Settings(next));
        });
        html! {
            <label for={id}>{label}
                <input {id} type={kind} {value} {oninput} autocomplete="off" spellcheck="false" />
            </label>
        }
    };
    let number =
        |id: &'static str, label: &'static str, value: u64, set: fn(&mut Settings, u64)| {
            let (current, on) = (s.clone(), on.clone());
            let onchange = Callback::from(move |e: Event| {
                let input: HtmlInputElement = e.target_unchecked_into();
                let mut next = current.clone();
                match input.value().trim().parse::<u64>() {
                    Ok(v) if v > 0 => set(&mut next, v),
                    // Not a positive whole number: the field shows the current value again.
                    _ => input.set_value(&value.to_string()),
                }
                on.emit(Msg::Settings(next));
            });
            html! {
                <label for={id}>{label}
                    <input {id} type="number" min="1" value={value.to_string()} {onchange} />
                </label>
            }
        };
    let check = |id: &'static str,
                 label: &'static str,
                 checked: bool,
                 set: fn(&mut Settings, bool)| {
        let (current, on) = (s.clone(), on.clone());
        let onchange = Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let mut next = current.clone();
            set(&mut next, input.checked());
            on.emit(Msg::Settings(next));
        });
        html! {
            <label class="check" for={id}><input {id} type="checkbox" {checked} {onchange} />{label}</label>
        }
    };
    let on_protocol = {
        let (current, on) = (s.clone(), on.clone());
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            let mut next = current.clone();
            next.endpoint.protocol = if select.value() == "ollama" {
                Protocol::Ollama
            } else {
                Protocol::OpenAi
            };
            on.emit(Msg::Settings(next));
        })
    };
    let ollama = s.endpoint.protocol == Protocol::Ollama;
    html! {
        <div class="llm-settings" role="dialog" aria-label="LLM settings">
            <div class="llm-grid">
                { text("llm-url", "Endpoint URL", "url", s.endpoint.url.clone(), |s, v| s.endpoint.url = v) }
                <label for="llm-protocol">{"Protocol"}
                    <select id="llm-protocol" onchange={on_protocol}>
                        <option value="openai" selected={!ollama}>{"OpenAI-compatible (/v1/chat/completions)"}</option>
                        <option value="ollama" selected={ollama}>{"Ollama (/api/chat)"}</option>
                    </select>
                </label>
                { text("llm-model", "Model", "text", s.endpoint.model.clone(), |s, v| s.endpoint.model = v) }
                { text("llm-key", "API key (optional)", "password", s.endpoint.api_key.clone().unwrap_or_default(),
                    |s, v| s.endpoint.api_key = Some(v).filter(|k| !k.is_empty())) }
                { number("llm-budget", "Token budget per request", s.summary.budget as u64, |s, v| s.summary.budget = v as usize) }
                { number("llm-max-tokens", "Answer tokens at most", u64::from(s.endpoint.max_tokens),
                    |s, v| s.endpoint.max_tokens = u32::try_from(v).unwrap_or(u32::MAX)) }
                { number("llm-timeout", "Timeout (seconds)", s.endpoint.timeout_s, |s, v| s.endpoint.timeout_s = v) }
            </div>
            <div class="llm-checks">
                { check("llm-remember-key", "Remember the API key on this device (otherwise it is kept for this tab only, until it closes)",
                    s.remember_key, |s, v| s.remember_key = v) }
                { check("llm-stream", "Stream the answer", s.endpoint.stream, |s, v| s.endpoint.stream = v) }
                { check("llm-redact", "Redact file paths, host names and the names to hide", s.summary.redact, |s, v| s.summary.redact = v) }
                { text("llm-names", "Names to hide (comma-separated: models, modules, projects)", "text", s.summary.module_names.join(", "), |s, v| {
                    s.summary.module_names = v.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
                }) }
            </div>
            <p class="llm-note">{"Kept in this browser only (the API key for this tab's session unless you \
                choose to remember it): never in a share link, a saved report or a message. Nothing is sent until you press Send on a previewed request, and then only to this \
                endpoint. A server on another origin must allow this page's origin ("}<code>{page_origin()}</code>{")."}</p>
            if let Some(e) = &state.storage_error {
                <p class="llm-error" role="alert">{format!("The settings apply to this page but could not be kept: {e}.")}</p>
            }
            <button class="llm-forget" onclick={on.reform(|_| Msg::ForgetSettings)}>{"Forget these settings"}</button>
        </div>
    }
}

/// Why a finding has no prompt: `llm::summary` summarizes a window of a steady-state step.
const NO_WINDOW: &str = "No window of this finding can be summarized for an LLM: the trace has no \
    steady-state step with windows.";

/// The question about one flagged window (`key`) of `file`: a button, then the preview, then
/// the answer.
pub fn ask(state: &State, file: usize, key: &str, on: &Callback<Msg>) -> Html {
    let slot = (file, key.to_string());
    let k = key.to_string();
    let close = on.reform(move |_| Msg::Close(file, k.clone()));
    let k = key.to_string();
    let preview = on.reform(move |_| Msg::Preview(file, k.clone()));
    let Some(exchange) = state.exchanges.get(&slot) else {
        if let Some(Prompts::Ready(..)) = state.prompts.get(&file) {
            if state.prompt(file, key).is_none() {
                return html! {
                    <p class="llm-none">{NO_WINDOW}</p>
                };
            }
        }
        return html! {
            <div class="llm"><button class="llm-ask" onclick={preview}>{"Ask the LLM…"}</button></div>
        };
    };
    let body = match exchange {
        Exchange::Preview => preview_view(state, file, key, on, close),
        Exchange::Sending { text, .. } => {
            let k = key.to_string();
            html! {
                <div class="llm-answer streaming" aria-live="polite">
                    <div class="llm-head">
                        <span class="llm-status">{"Answer arriving…"}</span>
                        <button class="llm-cancel" onclick={on.reform(move |_| Msg::Cancel(file, k.clone()))}>{"Cancel"}</button>
                    </div>
                    <pre class="llm-text">{text}</pre>
                </div>
            }
        }
        Exchange::Answered(answer) => html! {
            <div class="llm-answer done">
                { answer_view(answer) }
                <div class="llm-actions">
                    <button class="llm-again" onclick={preview}>{"Ask again"}</button>
                    <button class="llm-close" onclick={close}>{"Close"}</button>
                </div>
            </div>
        },
        Exchange::Failed { message, text } => html! {
            <div class="llm-answer failed">
                <p class="llm-error" role="alert">{message}</p>
                if !text.is_empty() {
                    <p class="llm-partial-label">{"What had arrived:"}</p>
                    <pre class="llm-text">{text}</pre>
                }
                <div class="llm-actions">
                    <button class="llm-again" onclick={preview}>{"Try again"}</button>
                    <button class="llm-close" onclick={close}>{"Close"}</button>
                </div>
            </div>
        },
    };
    html! { <div class="llm">{body}</div> }
}

fn preview_view(
    state: &State,
    file: usize,
    key: &str,
    on: &Callback<Msg>,
    close: Callback<MouseEvent>,
) -> Html {
    let prompt = match state.prompts.get(&file) {
        None | Some(Prompts::Pending(_)) => {
            return html! { <div class="llm-preview"><p class="llm-status">{"Summarizing the window…"}</p></div> };
        }
        Some(Prompts::Failed(_, e)) => {
            return html! {
                <div class="llm-preview">
                    <p class="llm-error" role="alert">{format!("Could not summarize the window: {e}")}</p>
                    <button class="llm-close" onclick={close}>{"Close"}</button>
                </div>
            };
        }
        Some(Prompts::Ready(..)) => match state.prompt(file, key) {
            Some(p) => p,
            None => {
                return html! {
                    <div class="llm-preview">
                        <p class="llm-none">{NO_WINDOW}</p>
                        <button class="llm-close" onclick={close}>{"Close"}</button>
                    </div>
                };
            }
        },
    };
    let endpoint = &state.settings.endpoint;
    let body = endpoint.body(prompt);
    let budget = state.settings.summary.budget;
    let dropped = match prompt.dropped_lines {
        0 => String::new(),
        n => format!("; {n} summary line(s) left out to fit"),
    };
    let meta = format!(
        "POST {} · {} ({} bytes) · about {} tokens: the messages {} of the {}-token budget{dropped}.",
        endpoint.chat_url(),
        bytes(body.len() as u64),
        count(body.len() as u64),
        count(estimate_tokens(&body) as u64),
        count(prompt.tokens as u64),
        count(budget as u64),
    );
    let headers = if endpoint.api_key.is_some() {
        "Headers: Content-Type: application/json, and the API key as Authorization: Bearer …; \
         no cookies, no referrer."
    } else {
        "Headers: Content-Type: application/json; no key, no cookies, no referrer."
    };
    let send = {
        let (k, body) = (key.to_string(), body.clone());
        on.reform(move |_| Msg::Send(file, k.clone(), body.clone()))
    };
    html! {
        <div class="llm-preview">
            <p class="llm-meta">{meta}<br />{headers}</p>
            <details class="llm-readable">
                <summary>{"The summary as the model reads it"}</summary>
                <pre>{&prompt.user}</pre>
            </details>
            <p class="llm-body-label">{"The exact request body:"}</p>
            <pre class="llm-body">{body}</pre>
            <div class="llm-actions">
                <button class="llm-send button primary" onclick={send}>{"Send"}</button>
                <button class="llm-close" onclick={close}>{"Close"}</button>
                <span class="llm-note">{"Nothing is sent until you press Send."}</span>
            </div>
        </div>
    }
}

fn answer_view(a: &Answer) -> Html {
    if !a.structured() {
        return html! { <pre class="llm-text">{&a.text}</pre> };
    }
    let field = |label: &'static str, class: &'static str, value: &Option<String>| match value {
        Some(v) => html! { <><dt>{label}</dt><dd class={class}>{v}</dd></> },
        None => Html::default(),
    };
    html! {
        <>
            <dl class="llm-structured">
                { field("Anti-pattern", "llm-anti-pattern", &a.anti_pattern) }
                { field("Explanation", "llm-explanation", &a.explanation) }
                { field("Fix", "llm-fix", &a.fix) }
                if let Some(c) = a.confidence {
                    <dt>{"Confidence"}</dt><dd class="llm-confidence">{format!("{:.0}%", c * 100.0)}</dd>
                }
            </dl>
            <details class="llm-raw">
                <summary>{"The model's text"}</summary>
                <pre class="llm-text">{&a.text}</pre>
            </details>
        </>
    }
}

#[derive(Properties, PartialEq)]
pub struct RegionsProps {
    pub state: Rc<State>,
    /// The trace the regions are in: its file index, name and fingerprint (for the labels).
    pub outcome: Rc<Outcome>,
    pub on: Callback<Msg>,
}

/// The question about an unexplained region: the regions the worker summarized to choose from
/// (a trace may have dozens), and the chosen one's question.
#[function_component(Regions)]
pub fn regions(props: &RegionsProps) -> Html {
    let chosen = use_state(|| None::<String>);
    let file = props.outcome.file;
    let Some(Prompts::Ready(_, prompts)) = props.state.prompts.get(&file) else {
        return Html::default();
    };
    let regions: Vec<&Prompt> = prompts
        .iter()
        .filter(|p| p.key.starts_with("unexplained:"))
        .collect();
    let Some(first) = regions.first() else {
        return Html::default();
    };
    let key = chosen
        .as_ref()
        .filter(|k| regions.iter().any(|p| &p.key == *k))
        .unwrap_or(&first.key)
        .clone();
    let onchange = Callback::from(move |e: Event| {
        let select: HtmlSelectElement = e.target_unchecked_into();
        chosen.set(Some(select.value()));
    });
    html! {
        <div class="llm-region">
            <label>{"Ask the LLM about a region: "}
                <select class="llm-region-select" {onchange}>
                    { for regions.iter().map(|p| html! {
                        <option value={p.key.clone()} selected={p.key == key}>{region_title(p)}</option>
                    }) }
                </select>
            </label>
            { ask(&props.state, file, &key, &props.on) }
            if let Some(region) = region_label(&props.outcome, &key) {
                { keep_view(&props.state, file, &key, region, &props.on) }
            }
            { labels_bar(&props.state, &props.on) }
        </div>
    }
}

/// A region's title with its window's number (`unexplained:<step>:<index>`): several windows
/// of one step can share a phase.
fn region_title(p: &Prompt) -> String {
    match p
        .key
        .rsplit(':')
        .next()
        .and_then(|i| i.parse::<usize>().ok())
    {
        Some(i) => format!("{}, window {}", p.title, i + 1),
        None => p.title.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn settings_read_back_and_unreadable_ones_fall_back_to_the_defaults() {
        let mut s = Settings::default();
        s.endpoint.api_key = Some("k".into());
        s.summary.module_names = vec!["MyNet".into()];
        assert_eq!(Settings::from_json(&serde_json::to_string(&s).unwrap()), s);
        assert_eq!(
            Settings::from_json("{\"endpoint\": 3}"),
            Settings::default()
        );
        assert_eq!(Settings::from_json(""), Settings::default());
        assert_eq!(s.options().max_windows, usize::MAX);
        assert_eq!(s.options().budget, s.summary.budget);
    }

    #[wasm_bindgen_test]
    fn a_kept_region_is_exported_in_the_ml_stage_s_label_format() {
        use torchtraceap::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};
        let generated = generate(&Config {
            model: Model::ResNet50,
            gpu: Gpu::A100,
            training: true,
            steps: 4,
            batch: 8,
            seed: 3,
            injections: vec![Injection {
                pattern: AntiPattern::HostSync,
                step: 2,
                severity: 0.8,
            }],
            noise: false,
        });
        let ingested = torchtraceap::ingest::ingest_bytes(
            generated.trace.as_bytes(),
            torchtraceap::ingest::IngestOptions::default(),
        )
        .unwrap();
        let kept = crate::session::Kept::new(ingested);
        let analyzed = crate::protocol::Analyzed::with_report(kept.ingested, kept.report.clone());
        let outcome = Outcome {
            file: 0,
            name: "run.pt.trace.json.gz".into(),
            size: 0,
            worker_memory_bytes: 0,
            result: Ok(analyzed.clone()),
        };
        // Step 12's second window (its key's index is 1), as the worker's prompt names it.
        let region = region_label(&outcome, "unexplained:12:1").unwrap();
        let second = analyzed
            .report
            .windows
            .iter()
            .filter(|w| w.step == 12)
            .nth(1);
        assert_eq!(region.phase, second.unwrap().phase);
        assert_eq!((region.step, region.window), (12, Some(1)));
        assert_eq!(region.fingerprint, analyzed.fingerprint);
        assert_eq!(region.trace.as_deref(), Some("run.pt.trace.json.gz"));
        assert_eq!(region_label(&outcome, "finding:host-device-sync"), None);
        assert_eq!(region_label(&outcome, "unexplained:99:0"), None);

        // The answer's words preselect a detector id; the user's own choice replaces it.
        assert_eq!(
            labels::pattern_of("GPU waits on .item() syncs"),
            Some("host-device-sync")
        );
        let mut state = State::default();
        let noop = Callback::noop();
        for pattern in ["host-device-sync", NOT_AN_ANTI_PATTERN] {
            state.update(
                Msg::Keep(WindowLabel {
                    pattern: pattern.into(),
                    ..region.clone()
                }),
                &noop,
            );
        }
        assert_eq!(state.labels.len(), 1, "one label per window");
        assert_eq!(state.labels[0].pattern, NOT_AN_ANTI_PATTERN);
        // The exported text reads back through the CLI's reader, for this trace only.
        let text = labels::to_json(&state.labels);
        let read = labels::parse(&text, "export").unwrap();
        assert_eq!(read, state.labels);
        let fingerprint = analyzed.fingerprint.unwrap();
        assert_eq!(
            labels::for_trace(read, &fingerprint, "export", "run").unwrap(),
            state.labels
        );
        assert_eq!(labels_file_name(&state.labels), "run.labels.json");
        state.forget_files();
        assert_eq!(state.labels.len(), 1, "labels outlive the files shown");
        state.update(Msg::Unkeep(region), &noop);
        assert!(state.labels.is_empty());
    }

    #[wasm_bindgen_test]
    fn regions_are_told_apart_by_their_window() {
        let p = Prompt {
            key: "unexplained:12:3".into(),
            title: "Unexplained slice window (step 12)".into(),
            system: String::new(),
            user: String::new(),
            window_tokens: 0,
            tokens: 0,
            dropped_lines: 0,
        };
        assert_eq!(
            region_title(&p),
            "Unexplained slice window (step 12), window 4"
        );
    }
}
