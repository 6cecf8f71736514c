//! Getting traces into the page: a drop zone over the whole page, a file picker, the sample, and
//! a load's progress (each file's, when there are several).

use web_sys::{DragEvent, File, FileList, FilePropertyBag, HtmlInputElement};
use yew::prelude::*;

use super::pool::Pool;
use crate::format::{bytes, count, duration_s};
use crate::protocol::{Analyzed, Document, EarlyLook, Outcome, Progress, Stage};

fn files_of(list: Option<FileList>) -> Vec<File> {
    list.map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect())
        .unwrap_or_default()
}

#[derive(Properties, PartialEq)]
pub struct DropZoneProps {
    pub on_files: Callback<Vec<File>>,
    pub loads_ended: u32,
    /// Workers the last load started, and the most that ran at once.
    pub workers: (u32, u32),
    /// The largest wasm memory of the last load's workers, bytes.
    pub memory: u64,
    /// The last load's early look, as its heading says it, and the ids it found (`data-early`).
    pub early: String,
    pub children: Html,
}

/// The whole page accepts dropped files; it is outlined while files are dragged over it.
#[function_component(DropZone)]
pub fn drop_zone(props: &DropZoneProps) -> Html {
    let over = use_state(|| false);
    let ondragover = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(true);
        })
    };
    let ondragleave = {
        let over = over.clone();
        Callback::from(move |_: DragEvent| over.set(false))
    };
    let ondrop = {
        let over = over.clone();
        let on_files = props.on_files.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(false);
            on_files.emit(files_of(e.data_transfer().and_then(|d| d.files())));
        })
    };
    html! {
        <main class={classes!("page", (*over).then_some("dragging"))} data-loads={props.loads_ended.to_string()}
              data-workers={format!("{}/{}", props.workers.0, props.workers.1)}
              data-memory={props.memory.to_string()} data-early={props.early.clone()}
              {ondragover} {ondragleave} {ondrop}>
            { props.children.clone() }
        </main>
    }
}

#[derive(Properties, PartialEq)]
pub struct PickerProps {
    pub on_files: Callback<Vec<File>>,
    pub on_sample: Callback<()>,
    /// A graph capture trace chosen (`Some`) or removed (`None`).
    pub on_capture: Callback<Option<File>>,
    /// The name of the graph capture trace chosen, if any.
    pub capture: Option<String>,
    pub busy: bool,
}

#[function_component(Picker)]
pub fn picker(props: &PickerProps) -> Html {
    let onchange = {
        let on_files = props.on_files.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = files_of(input.files());
            // Let the same file be chosen again later.
            input.set_value("");
            on_files.emit(files);
        })
    };
    let on_sample = props.on_sample.reform(|_: MouseEvent| ());
    let on_capture = {
        let on_capture = props.on_capture.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let file = files_of(input.files()).into_iter().next();
            input.set_value("");
            if file.is_some() {
                on_capture.emit(file);
            }
        })
    };
    let on_remove = props.on_capture.reform(|_: MouseEvent| None);
    html! {
        <div class="picker">
            <label class="button primary">
                {"Open traces…"}
                <input type="file" id="file-input" multiple=true accept=".json,.gz,application/json,application/gzip"
                    {onchange} />
            </label>
            <button class="button" id="sample" onclick={on_sample} disabled={props.busy}>{"Try the sample trace"}</button>
            <label class="button" title="A trace of the warm-up that captured the CUDA/HIP graphs a trace replays (recorded with its operators): each replayed kernel gets the operator and module that launched it there.">
                {"Graph capture…"}
                <input type="file" id="capture-input" accept=".json,.gz,application/json,application/gzip"
                    onchange={on_capture} />
            </label>
            if let Some(name) = &props.capture {
                <p class="capture-chosen" id="capture-chosen">
                    {"The traces opened next have their graph replays tied to the capture trace "}
                    <code>{name}</code>{". "}
                    <button id="capture-remove" onclick={on_remove}>{"Remove"}</button>
                </p>
            }
        </div>
    }
}

pub fn welcome() -> Html {
    html! {
        <section class="welcome">
            <h2>{"Drop PyTorch profiler traces here"}</h2>
            <p>
                {"TorchTraceAP reads the Chrome-trace JSON that "}<code>{"torch.profiler"}</code>
                {" writes ("}<code>{"*.pt.trace.json"}</code>{", plain or "}<code>{".json.gz"}</code>
                {"), finds performance anti-patterns (input pipeline stalls, host-device syncs, \
                  launch overhead, missing tensor cores, exposed communication, …) and shows what \
                  each one costs per step and the code to change."}
            </p>
            <p>{"Several files at once are read as the ranks of one run. The trace stays on your \
                 machine: it is read by this page, in a background worker, and never sent anywhere."}</p>
            <p class="offline-note">{"Works offline after the first visit; traces never leave this \
                 browser. A new version of the site is taken on the next load."}</p>
        </section>
    }
}

/// Fetches the bundled sample (a file of this site) as a `File`, as if the user had chosen it.
pub async fn fetch_sample(url: &str) -> Result<File, String> {
    let failed = |what: &str| {
        format!("Could not load the sample trace ({url}): {what}. Reload the page, or open a trace of your own.")
    };
    let response = gloo_net::http::Request::get(url)
        .send()
        .await
        .map_err(|e| failed(&e.to_string()))?;
    if !response.ok() {
        return Err(failed(&format!(
            "the server answered {}",
            response.status()
        )));
    }
    let bytes = response
        .binary()
        .await
        .map_err(|e| failed(&e.to_string()))?;
    let parts: js_sys::Array =
        std::iter::once(js_sys::Uint8Array::from(bytes.as_slice())).collect();
    let name = url.rsplit('/').next().unwrap_or(url);
    let options = FilePropertyBag::new();
    options.set_type("application/gzip");
    File::new_with_blob_sequence_and_options(&parts, name, &options)
        .map_err(|e| failed(&format!("{e:?}")))
}

/// A file's state in a load, as the progress list says it (`queued`: no worker has it yet).
fn file_state(
    progress: Option<&Progress>,
    outcome: Option<&Outcome>,
    queued: bool,
) -> (String, f64) {
    match (outcome, progress) {
        (Some(o), _) if o.result.is_err() => ("not read".into(), 1.0),
        (Some(_), _) => ("done".into(), 1.0),
        (None, Some(p)) if p.stage == Stage::Analyzing => ("analyzing".into(), 1.0),
        (None, Some(p)) => {
            let fraction = p.bytes as f64 / p.total_bytes.max(1) as f64;
            (format!("reading, {:.0} %", fraction * 100.0), fraction)
        }
        (None, None) if queued => ("waiting for a worker".into(), 0.0),
        (None, None) => ("starting".into(), 0.0),
    }
}

/// A load's progress: the file read (or, for several, how many are done and how many workers
/// read them), its bytes and events, and a line per file when there are several.
pub fn progress(pool: &Pool, elapsed_ms: f64, on_cancel: Callback<MouseEvent>) -> Html {
    let elapsed = duration_s(elapsed_ms / 1e3);
    let n = pool.files.len();
    let outcome = |i: usize| pool.outcomes.iter().find(|o| o.file == i);
    let total: u64 = pool.files.iter().map(|f| f.size() as u64).sum();
    let read: u64 = (0..n)
        .map(|i| match (outcome(i), &pool.progress[i]) {
            (Some(o), _) => o.size,
            (None, Some(p)) => p.bytes,
            (None, None) => 0,
        })
        .sum();
    let events: u64 = pool.progress.iter().flatten().map(|p| p.events).sum();
    // The workers still at work hold memory; a finished one has freed its own.
    let memory: u64 = (0..n)
        .filter(|&i| outcome(i).is_none())
        .filter_map(|i| pool.progress[i].as_ref().map(|p| p.memory_bytes))
        .sum();
    let label = match (n, pool.progress.first().and_then(Option::as_ref)) {
        (1, Some(p)) if p.stage == Stage::Analyzing => format!("Analyzing {}", p.name),
        (1, Some(p)) if p.workers > 1 => format!("Reading {} with {} workers", p.name, p.workers),
        (1, Some(p)) => format!("Reading {}", p.name),
        (1, None) => format!("Starting on {}", pool.files[0].name()),
        _ => format!(
            "Analyzing {n} files, {} at a time: {} done",
            pool.limit(),
            pool.outcomes.len()
        ),
    };
    let detail = format!(
        "{} of {} · {} events · {} of memory · {elapsed}",
        bytes(read),
        bytes(total),
        count(events),
        bytes(memory)
    );
    html! {
        <section class="loading" aria-live="polite">
            <div class="loading-head">
                <span class="loading-label">{label}</span>
                <button class="cancel" onclick={on_cancel}>{"Cancel"}</button>
            </div>
            <progress max="1" value={(read as f64 / total.max(1) as f64).to_string()}></progress>
            <span class="loading-detail">{detail}</span>
            if let Some(look) = pool.early.as_ref().filter(|e| outcome(e.file).is_none()) {
                { early_look(look) }
            }
            if n > 1 {
                <ol class="load-files">
                    { for pool.files.iter().enumerate().map(|(i, f)| {
                        let (state, fraction) = file_state(pool.progress[i].as_ref(), outcome(i), pool.queued(i));
                        html! {
                            <li class="load-file">
                                <span class="name">{f.name()}</span>
                                <progress max="1" value={fraction.to_string()}></progress>
                                <span class="state">{state}</span>
                            </li>
                        }
                    }) }
                </ol>
            }
        </section>
    }
}

/// A large trace's early look while it is read: what its first whole steps say.
fn early_look(look: &EarlyLook) -> Html {
    let r = &look.report;
    let word = r.step_word();
    html! {
        <div class="early" id="early-findings">
            <h3>{early_heading(look)}</h3>
            <p class="early-note">{format!("What the first {word}s say, read from the start of each part of \
                the file; the whole file's analysis replaces it when the file is read.")}</p>
            if r.findings.is_empty() {
                <p>{format!("No anti-pattern in these {word}s.")}</p>
            } else {
                <ul class="early-findings">
                    { for r.findings.iter().map(|f| html! {
                        <li data-id={f.id.clone()}>
                            <span class={classes!("severity", f.severity.clone())}>{&f.severity}</span>
                            {" "}<strong>{&f.title}</strong>
                            {format!(" · {:.2} ms per {word} ({:.1}%)", f.impact_ms_per_step, f.impact_pct_of_step)}
                        </li>
                    }) }
                </ul>
            }
        </div>
    }
}

/// "Early findings: steps 10–21 (12 whole), from 12.5 % of the file".
pub fn early_heading(look: &EarlyLook) -> String {
    format!(
        "Early findings: {}s {}–{} ({} whole), from {:.1} % of the file",
        look.report.step_word(),
        look.steps.0,
        look.steps.1,
        look.whole_steps,
        100.0 * look.read as f64 / look.len.max(1) as f64
    )
}

/// What the page shows of a load cancelled after its early look: that look's report alone (as a
/// saved report is shown, without the trace), and the notice that says so; `None` when the look
/// is of no file of the load.
pub fn early_outcome(look: &EarlyLook, pool: &Pool) -> Option<(Outcome, String)> {
    let file = pool.files.get(look.file)?;
    let name = file.name();
    let analyzed = Analyzed {
        summary: None,
        report: look.report.clone(),
        fingerprint: None,
        profile: None,
        modules: None,
    };
    let said = format!(
        "Loading cancelled; shown: the early look at {name} ({}), what its first {}s say, not the \
         whole file's analysis.",
        early_heading(look).trim_start_matches("Early findings: "),
        look.report.step_word()
    );
    let outcome = Outcome {
        file: 0,
        name: format!("{name} (early look)"),
        size: file.size() as u64,
        worker_memory_bytes: 0,
        result: Ok(Document::Analysis(Box::new(analyzed))),
    };
    Some((outcome, said))
}
