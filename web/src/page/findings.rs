//! The findings, ranked by the time they cost per step: severity, impact, how sure (the gate's
//! inputs), the worst steps, evidence, the fix and its code with a copy button; then the notes
//! (never ranked) and where the step's time goes.

use std::rc::Rc;

use torchtraceap::report::{FindingEntry, Report, VERSION};
use torchtraceap::Part;
use yew::prelude::*;

use super::llm;
use crate::format::{count, ms};
use crate::protocol::Outcome;

#[derive(Properties, PartialEq)]
pub struct FindingsProps {
    pub file: Rc<Outcome>,
    /// The finding the user opened (it is shown open and scrolled to).
    pub selected: Option<String>,
    pub on_select: Callback<String>,
    /// Shows a finding on the timeline; `None` where there is no trace (a saved report, a link).
    pub on_timeline: Option<Callback<String>>,
    /// The LLM questions, where the worker holds the trace (not for a saved report or a link).
    pub llm: Option<Rc<llm::State>>,
    pub on_llm: Callback<llm::Msg>,
}

#[function_component(Findings)]
pub fn findings(props: &FindingsProps) -> Html {
    let copied = use_state(|| None::<usize>);
    // Bring the selected finding into view when it changes (a shared link's selection).
    use_effect_with(props.selected.clone(), |selected| {
        let element = selected.as_ref().and_then(|id| {
            web_sys::window()?
                .document()?
                .get_element_by_id(&format!("finding-{id}"))
        });
        if let Some(element) = element {
            element.scroll_into_view();
        }
    });
    // The prompts are made in the worker as soon as the findings are shown (nothing is sent).
    let file = props.file.file;
    let has_llm = props.llm.is_some();
    {
        let on_llm = props.on_llm.clone();
        use_effect_with((file, has_llm), move |(file, has_llm)| {
            if *has_llm {
                on_llm.emit(llm::Msg::NeedPrompts(*file));
            }
        });
    }
    let Some(a) = props.file.analyzed() else {
        return Html::default();
    };
    let ask = |key: String| match &props.llm {
        Some(state) => llm::ask(state, file, &key, &props.on_llm),
        None => Html::default(),
    };
    let findings = &a.report.findings;
    let unexplained = &a.report.unexplained;
    html! {
        <section class="findings">
            if a.report.version < VERSION {
                <p class="older-version">{format!(
                    "Made by an older version of TorchTraceAP (report version {}; this one writes {VERSION}): \
                     its findings have no time split, gate or worst steps, and may count the same time twice. \
                     Drop the trace again for a current analysis.",
                    a.report.version
                )}</p>
            }
            if findings.is_empty() {
                <div class="empty">
                    <h2>{"No anti-pattern found by the rules"}</h2>
                    <p>{format!(
                        "None of the detectors' thresholds is crossed in the {} steady step(s) of this trace.",
                        a.report.trace.steady_steps
                    )}</p>
                </div>
            }
            { for findings.iter().enumerate().map(|(i, f)| {
                let selected = props.selected.as_deref() == Some(f.id.as_str());
                card(i, f, &a.report, selected, &copied, props, ask(format!("finding:{}", f.id)))
            }) }
            if !unexplained.is_empty() {
                <article class="unexplained">
                    <h3>{"Unexplained suspicious regions"}</h3>
                    <p>{"Windows the window detector flags where no rule finding of that type concerns \
                         the step: worth a look on the timeline, or a question for the LLM."}</p>
                    <ul>
                        { for unexplained.iter().map(|u| html! {
                            <li>
                                {format!("Step {} {} ({} long): {:.0}% anomalous, most like ",
                                    u.step, u.phase, ms(u.duration_ms), u.anomaly_probability * 100.0)}
                                <code>{&u.predicted_type}</code>
                            </li>
                        }) }
                    </ul>
                    if let Some(state) = &props.llm {
                        <llm::Regions state={Rc::clone(state)} outcome={Rc::clone(&props.file)} on={props.on_llm.clone()} />
                    }
                </article>
            }
            if let Some(state) = &props.llm {
                { llm::labels_bar(state, &props.file, &props.on_llm) }
            }
            { notes(&a.report) }
            { split(&a.report) }
        </section>
    }
}

/// Observations that are not ranked findings.
fn notes(r: &Report) -> Html {
    if r.notes.is_empty() {
        return Html::default();
    }
    html! {
        <article class="notes">
            <h3>{"Notes"}</h3>
            <p>{"Observations without a time estimate, or patterns seen too rarely or too cheaply to be findings."}</p>
            <ul>{ for r.notes.iter().map(|n| html! { <li><code>{&n.id}</code>{" "}{&n.text}</li> }) }</ul>
        </article>
    }
}

/// Where a steady step's time goes on the main GPU, parts with time only.
fn split(r: &Report) -> Html {
    let total: f64 = r.split.iter().map(|p| p.ms).sum();
    if total <= 0.0 {
        return Html::default();
    }
    html! {
        <article class="split">
            <h3>{r.split_heading()}</h3>
            <p>{format!("Mean of the steady {}s on the main GPU: each part counted once, {} in all. Findings claim time from these parts, never the same time twice.", r.step_word(), ms(total))}</p>
            <table>
                <tbody>
                    { for r.split.iter().filter(|p| p.ms > 0.0).map(|p| html! {
                        <tr>
                            <td>{Part::ALL.iter().find(|q| q.id() == p.part).map_or(p.part.as_str(), |q| q.label())}</td>
                            <td class="num">{ms(p.ms)}</td>
                            <td class="num">{format!("{:.1}%", 100.0 * p.ms / total)}</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </article>
    }
}

fn card(
    i: usize,
    f: &FindingEntry,
    report: &Report,
    selected: bool,
    copied: &UseStateHandle<Option<usize>>,
    props: &FindingsProps,
    ask: Html,
) -> Html {
    let show = props.on_timeline.as_ref().map(|on_timeline| {
        let id = f.id.clone();
        let onclick = on_timeline.reform(move |_: MouseEvent| id.clone());
        html! { <button class="button show-on-timeline" {onclick}>{"Show on timeline"}</button> }
    });
    let select = {
        let id = f.id.clone();
        props.on_select.reform(move |_: MouseEvent| id.clone())
    };
    let on_copy = {
        let copied = copied.clone();
        let snippet = f.fix_snippet.clone();
        Callback::from(move |_: MouseEvent| {
            if crate::js::copy_to_clipboard(&snippet) {
                copied.set(Some(i));
            }
        })
    };
    let step = report.step_word();
    let copy_label = if **copied == Some(i) {
        "Copied"
    } else {
        "Copy"
    };
    html! {
        <article class={classes!("finding", f.severity.clone(), selected.then_some("selected"))}
                 id={format!("finding-{}", f.id)}>
            <header onclick={select}>
                <span class={classes!("severity", f.severity.clone())}>{&f.severity}</span>
                <h3>{&f.title}</h3>
                <span class="impact" title={f.impact_method.clone()}>
                    {format!("{} per {step} ({:.1}%)", ms(f.impact_ms_per_step), f.impact_pct_of_step)}
                </span>
            </header>
            <p class="summary">{&f.summary}</p>
            if let Some(module) = &f.module {
                <p class="finding-module">{"Module: "}<code>{module}</code>
                    {" (the module frame holding most of the evidence's time)"}</p>
            }
            if let Some(g) = &f.gate {
                <p class="gate">{format!(
                    "Confidence {:.0}%: the gate ({} ≥ {}) holds in {} of {} steady {step}s, median {:.1} ({:.1}× the threshold).",
                    f.confidence * 100.0, g.quantity, g.figures.threshold, g.figures.held_steps, g.figures.steady_steps, g.figures.median, g.figures.margin
                )}</p>
            }
            if !f.worst_steps.is_empty() {
                <p class="worst-steps">{format!("Worst {step}s: {}", f.worst_steps.iter()
                    .map(|c| format!("{} ({})", c.step, ms(c.ms)))
                    .collect::<Vec<_>>().join(", "))}</p>
            }
            { where_line(f, report) }
            { for show }
            <details open={i == 0 || selected}>
                <summary>{format!("Evidence ({}) · confidence {:.0}%", f.evidence.len(), f.confidence * 100.0)}</summary>
                <ul class="evidence">
                    { for f.evidence.iter().map(|e| html! {
                        <li>
                            {&e.what}
                            if let Some(n) = e.count { <span class="count">{format!(" ×{}", count(n))}</span> }
                            if !e.steps.is_empty() {
                                <span class="steps">{format!(" · {step}s {}", steps_text(&e.steps))}</span>
                            }
                            if !e.events.is_empty() {
                                <ul class="events" title="Event names as the trace recorded them: data, not advice">
                                    { for e.events.iter().map(|ev| html! { <li><q class="data"><code>{ev}</code></q></li> }) }
                                </ul>
                            }
                        </li>
                    }) }
                </ul>
            </details>
            <div class="fix">
                <p><strong>{"Fix: "}</strong>{&f.fix}</p>
                if !f.fix_snippet.is_empty() {
                    <div class="snippet">
                        <button class="copy" onclick={on_copy}>{copy_label}</button>
                        <pre><code>{&f.fix_snippet}</code></pre>
                    </div>
                }
            </div>
            {ask}
        </article>
    }
}

/// Where the finding points (the best window holding its evidence: what "Show on timeline" opens
/// and the LLM request is about), with the window detector's view of that window beside it.
fn where_line(f: &FindingEntry, report: &Report) -> Html {
    let Some(w) = f.windows.first() else {
        return Html::default();
    };
    let model = report
        .windows
        .iter()
        .find(|e| e.step == w.step && (e.start_ms - w.start_ms).abs() < 1e-6)
        .and_then(|e| Some((e.anomaly_probability?, e.predicted_type.clone()?)));
    let events = match w.evidence_events {
        0 => String::new(),
        1 => ", 1 evidence event".to_string(),
        n => format!(", {} evidence events", count(n)),
    };
    html! {
        <p class="finding-window">
            {format!(
                "Where: {} {}, {} window ({}–{} from the trace's start): {} claimed here{events}",
                report.step_word(), w.step, w.phase, ms(w.start_ms), ms(w.start_ms + w.duration_ms), ms(w.claimed_ms)
            )}
            if f.windows.len() > 1 {
                {format!("; {} windows in all", f.windows.len())}
            }
            if let Some((p, kind)) = model {
                <span class="window-model" title="The window detector's view of this window, shown beside the rule: it did not choose the window">
                    {format!(" · window detector: {:.0}%, likely ", p * 100.0)}<code>{kind}</code>
                </span>
            }
        </p>
    }
}

/// Ranges of steps a line of evidence lists before it says how many more there are.
const MAX_RANGES: usize = 10;

/// Steps as ranges: 3-6, 9; past [`MAX_RANGES`] ranges (a long trace with the pattern in every
/// other step), the first of them and the count of the rest.
fn steps_text(steps: &[i64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let mut j = i;
        while j + 1 < steps.len() && steps[j + 1] == steps[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}–{}", steps[i], steps[j])
        } else {
            steps[i].to_string()
        });
        i = j + 1;
    }
    if parts.len() > MAX_RANGES {
        let more = parts.len() - MAX_RANGES;
        parts.truncate(MAX_RANGES);
        return format!(
            "{}, … {more} more ranges ({} steps in all)",
            parts.join(", "),
            steps.len()
        );
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn consecutive_steps_read_as_ranges() {
        assert_eq!(super::steps_text(&[3, 4, 5, 6, 9, 11, 12]), "3–6, 9, 11–12");
        assert_eq!(super::steps_text(&[]), "");
        let every_other: Vec<i64> = (0..30).map(|k| 2 * k).collect();
        assert_eq!(
            super::steps_text(&every_other),
            "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, … 20 more ranges (30 steps in all)"
        );
    }
}
