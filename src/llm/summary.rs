//! Compact, deterministic text summaries of the flagged windows, and the prompts built from them.
//!
//! Redaction is `super::redact`; the unit tests here cover the token estimate and the budget
//! dropping the least important lines first.
//!
//! A flagged window is the window a rule finding points at (the best of the windows that hold
//! its evidence: `Report::finding_windows`) or one of the report's `unexplained` regions. Its
//! summary is a list of [`Line`]s, each with an importance; a request that is over its token
//! budget loses its least important lines first (the last window's first), never its header
//! lines nor a finding's fix: first the window detector's view, memory, modules and the lesser operators and
//! kernels, then the window's GPU and host metrics, then the top three operators and kernels; a
//! finding's gate and its evidence events inside the window go last.
//!
//! Every request about one trace begins with the same bytes (the fixed [`SYSTEM`] message, then
//! the trace's line), so that a server that caches prompt prefixes (llama.cpp's `llama-server`)
//! reads them once per trace.
//!
//! **Token estimate:** `ceil(bytes / 4)` of the UTF-8 text ([`estimate_tokens`]). LLaMA-family
//! tokenizers average 3.5–4.5 bytes per token on English and identifiers; the default budget
//! ([`DEFAULT_BUDGET`]) leaves about a quarter of a 4096-token context for the answer.
//!
//! Reads the analysis, the findings and the report; pure (no clock, no I/O): the same trace gives
//! the same prompts, natively and in wasm32.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

use super::line::{cut, ms, Line};
use crate::analysis::Analysis;
use crate::detect::Finding;
use crate::report::Report;

/// Default prompt budget, in estimated tokens: fits a 4096-token context with room for the
/// answer (`max_tokens`).
pub const DEFAULT_BUDGET: usize = 3072;
/// The budget for a small model on the user's own machine (a 0.5–1.5B model on a laptop's
/// CPU reads 35–100 prompt tokens a second): the finding, its gate and evidence, the top
/// operators and kernels; the window's metrics, memory and modules go first. About 800 tokens
/// as Qwen2.5's tokenizer counts them, which reads digits one by one: the bundled sample's
/// request is 663 estimated tokens and 907 counted (1.37 a token), 605 and 839 within 640.
pub const LOCAL_BUDGET: usize = 580;
/// The window detector's view of a finding's window is sent only from this probability up: a
/// small model takes a label beside the finding for the diagnosis, even at probability 0.00.
const WINDOW_MODEL_SHOWN: f32 = 0.5;
/// Default number of flagged windows (findings first, then unexplained regions).
pub const DEFAULT_MAX_WINDOWS: usize = 8;

/// The estimated token count of `text`: one token per 4 bytes, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// How the prompts are built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryOptions {
    /// The most estimated tokens of one request's messages (system and user).
    pub budget: usize,
    /// Flagged windows summarised, at most.
    pub max_windows: usize,
    /// Replace file paths, host names and [`SummaryOptions::module_names`] with placeholders.
    pub redact: bool,
    /// Names the user wants hidden (module, model or project names), replaced as substrings.
    pub module_names: Vec<String>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            budget: DEFAULT_BUDGET,
            max_windows: DEFAULT_MAX_WINDOWS,
            redact: false,
            module_names: Vec::new(),
        }
    }
}

/// Why a window is flagged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Flag {
    /// A rule finding (its detector id).
    Finding(String),
    /// A region the window detector flags that no finding explains (its predicted type).
    Unexplained(String),
}

/// The summary of one flagged window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    /// Stable key for a front end: `finding:<id>` or `unexplained:<step>:<window index>`.
    pub key: String,
    /// A short title: what flagged it, where.
    pub title: String,
    pub flag: Flag,
    /// The step number and the window's index in it.
    pub step: i64,
    pub window: usize,
    pub lines: Vec<Line>,
}

impl WindowSummary {
    /// The summary as text (every line).
    pub fn text(&self) -> String {
        join(self.lines.iter())
    }
}

/// One request: the messages to send about one flagged window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    pub key: String,
    pub title: String,
    pub system: String,
    pub user: String,
    /// Estimated tokens of the window's summary as sent.
    pub window_tokens: usize,
    /// Estimated tokens of the whole request's messages.
    pub tokens: usize,
    /// Summary lines left out to fit the budget.
    pub dropped_lines: usize,
}

/// The system message: what to answer, as one JSON object.
pub const SYSTEM: &str =
    "You are a PyTorch performance engineer. You get a summary of one window of a \
PyTorch profiler trace that an analyzer flagged, with the metrics and evidence that flagged it. \
Answer with one JSON object and nothing else: {\"anti_pattern\": the id of the anti-pattern \
(a rule's id such as dataloader-bottleneck, or none), \"explanation\": why this window is slow, citing the numbers \
with what they measure as the summary says it, \"fix\": the concrete code or configuration change, naming the \
API and its arguments (start from the rule's fix where the summary gives one) and the file and line to change \
where the summary gives a call site, \"confidence\": a number from 0 to 1}.";

fn join<'a>(lines: impl Iterator<Item = &'a Line>) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&l.text);
        s.push('\n');
    }
    s
}

/// A code snippet on one line: a line that continues a call (after `,` or `(`) joins it with a
/// space, the others with `; `.
fn one_line(snippet: &str) -> String {
    let mut out = String::new();
    for line in snippet.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with([',', '(']) { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

/// The flagged windows of an analysis, summarised: findings in rank order, then the report's
/// unexplained regions, at most `opts.max_windows`. Redaction is applied when `opts.redact`.
pub fn summarize(
    a: &Analysis<'_>,
    findings: &[Finding],
    report: &Report,
    opts: &SummaryOptions,
) -> Vec<WindowSummary> {
    let header = trace_line(a, report);
    // A serving capture's steps are its engine's iterations.
    let step_word = a.step_word();
    let mut out = Vec::new();
    for f in findings {
        if let Some((step, win)) = finding_window(a, report, f) {
            let mut lines = vec![header.clone()];
            lines.push(Line {
                importance: 0,
                text: format!(
                    "Flagged by rule `{}` ({}): {}. Severity {}, about {:.2} ms per {step_word} ({:.1}% of the {step_word}), confidence {:.2}.",
                    f.id,
                    f.title,
                    f.summary,
                    f.severity.label(),
                    f.impact.ms_per_step,
                    f.impact.pct_of_step,
                    f.confidence
                ),
            });
            lines.extend(evidence_lines(a, report, f, (step, win)));
            for e in &f.evidence {
                let mut t = format!("Evidence: {}", e.what);
                if let Some(n) = e.count {
                    let _ = write!(t, " ({n})");
                }
                if !e.events.is_empty() {
                    let names: Vec<String> = e.events.iter().take(3).map(|n| cut(n)).collect();
                    let _ = write!(t, ": {}", names.join(", "));
                }
                lines.push(Line {
                    importance: 1,
                    text: t,
                });
            }
            out.push(window_summary(
                a,
                format!("finding:{}", f.id),
                format!("{} ({step_word} {})", f.title, a.steps.steps[step].number),
                Flag::Finding(f.id.to_string()),
                (step, win),
                lines,
            ));
        }
    }
    for u in &report.unexplained {
        let Some((step, win)) = locate(a, u.step, u.start_ms) else {
            continue;
        };
        let lines = vec![
            header.clone(),
            Line {
                importance: 0,
                text: format!(
                    "Flagged by the window detector: probability {:.2} that it holds an anti-pattern, most likely `{}`; no rule finding explains it.",
                    u.anomaly_probability, u.predicted_type
                ),
            },
        ];
        out.push(window_summary(
            a,
            format!("unexplained:{}:{}", u.step, win),
            format!("Unexplained {} window ({step_word} {})", u.phase, u.step),
            Flag::Unexplained(u.predicted_type.clone()),
            (step, win),
            lines,
        ));
    }
    out.truncate(opts.max_windows);
    if opts.redact {
        let mut r = super::redact::Redactor::new(&opts.module_names);
        for s in &mut out {
            s.title = r.redact(&s.title);
            for l in &mut s.lines {
                l.text = r.redact(&l.text);
            }
        }
    }
    out
}

/// The prompts for `summaries`, one per flagged window, each within `opts.budget` estimated
/// tokens when its never-dropped lines allow it (they are kept even when they do not fit).
pub fn prompts(summaries: &[WindowSummary], opts: &SummaryOptions) -> Vec<Prompt> {
    summaries.iter().map(|s| prompt(s, opts.budget)).collect()
}

/// One request's prompt, dropping the least important lines (the last of them first) until the
/// messages fit `budget`.
pub fn prompt(s: &WindowSummary, budget: usize) -> Prompt {
    let fixed = estimate_tokens(SYSTEM);
    let mut keep = vec![true; s.lines.len()];
    let mut order: Vec<usize> = (0..s.lines.len())
        .filter(|&i| s.lines[i].importance > 0)
        .collect();
    // Least important first; among equals, the later line first.
    order.sort_by(|&x, &y| {
        s.lines[y]
            .importance
            .cmp(&s.lines[x].importance)
            .then(y.cmp(&x))
    });
    let mut bytes: usize = s.lines.iter().map(|l| l.text.len() + 1).sum();
    let mut dropped = 0;
    for i in order {
        if fixed + bytes.div_ceil(4) <= budget {
            break;
        }
        keep[i] = false;
        bytes -= s.lines[i].text.len() + 1;
        dropped += 1;
    }
    let user = join(s.lines.iter().zip(&keep).filter(|p| *p.1).map(|p| p.0));
    let window_tokens = estimate_tokens(&user);
    Prompt {
        key: s.key.clone(),
        title: s.title.clone(),
        system: SYSTEM.to_string(),
        tokens: fixed + window_tokens,
        user,
        window_tokens,
        dropped_lines: dropped,
    }
}

fn trace_line(a: &Analysis<'_>, report: &Report) -> Line {
    let t = &report.trace;
    let device = a
        .trace
        .meta
        .devices
        .iter()
        .find_map(|d| {
            let name = d.name.as_deref().filter(|n| !n.is_empty())?;
            Some(match (d.total_global_mem, d.num_sms) {
                (Some(m), Some(sms)) => format!(
                    "{name} ({:.0} GiB, {sms} SMs)",
                    m as f64 / (1u64 << 30) as f64
                ),
                _ => name.to_string(),
            })
        })
        .unwrap_or_else(|| "no GPU listed".to_string());
    let step = report.step_word();
    let mut text = format!(
        "Trace: {} profile on {device}; {} steady-state {step}s, mean {step} {:.3} ms",
        t.era, t.steady_steps, t.mean_step_ms
    );
    if let (Some(r), Some(w)) = (t.rank, t.world_size) {
        let _ = write!(text, "; rank {r} of {w}");
    }
    text.push('.');
    Line {
        importance: 0,
        text,
    }
}

/// The window a finding points at: the first of the windows that hold its evidence
/// (`Report::finding_windows`, best first), as the timeline's "Show on timeline" does.
fn finding_window(a: &Analysis<'_>, report: &Report, f: &Finding) -> Option<(usize, usize)> {
    report.finding_windows(a, f).into_iter().next()
}

/// Evidence events listed per window, at most.
const EVIDENCE_IN_WINDOW: usize = 8;
/// Of those, the ones kept as long as the rule's fix (the longest).
const EVIDENCE_KEPT: usize = 3;

/// The finding's gate and its figures, what it claims in the window, its evidence events inside
/// the window (longest first) or, where its evidence is no event, the stretches it claims
/// there; and the window detector's view of the window, beside (it never chose the window).
fn evidence_lines(
    a: &Analysis<'_>,
    report: &Report,
    f: &Finding,
    (step, win): (usize, usize),
) -> Vec<Line> {
    let s = &a.steps.steps[step];
    let w = &s.windows[win];
    let range = (w.start, w.end);
    let g = &f.gate;
    let claimed: Vec<(i64, i64)> = f
        .claimed
        .iter()
        .filter(|c| c.0 == step)
        .flat_map(|c| crate::attribution::intersect(&c.1, &[range]))
        .collect();
    let mut out = vec![Line {
        importance: 1,
        text: format!(
            "Gate: {} at least {} held in {} of {} steady {}s (median {:.2}); the time the rule claims covers {:.3} ms of this window.",
            g.gate.quantity,
            g.gate.threshold,
            g.held_steps,
            g.steady_steps,
            a.step_word(),
            g.median,
            ms(claimed.iter().map(|c| c.1 - c.0).sum())
        ),
    }];
    let mut events: Vec<usize> = crate::report::evidence_events(f)
        .into_iter()
        .filter(|&i| crate::report::overlaps(a, i, range))
        .collect();
    events.sort_by_key(|&i| (std::cmp::Reverse(a.trace.events.dur[i]), i));
    let held = events.len();
    for (k, &i) in events.iter().take(EVIDENCE_IN_WINDOW).enumerate() {
        let e = &a.trace.events;
        out.push(Line {
            // Past the first few, a budget drops them before the others.
            importance: if k < EVIDENCE_KEPT { 1 } else { 2 },
            text: format!(
                "Evidence event in this window: {} at {:.3} ms into the {}, {:.3} ms long.",
                cut(a.trace.name_of(i)),
                ms(e.start[i] - s.start),
                a.step_word(),
                ms(e.dur[i])
            ),
        });
    }
    let site = events
        .first()
        .and_then(|&i| super::call_site::call_site(a.trace, i));
    // The fix itself begins with the file and line: a small model copies the rule's fix into
    // its answer, and so names where the change goes (Qwen2.5-Coder-1.5B: 2 of 2 windows, 0 of 2
    // with the place only before the fix; docs/LLM.md).
    let (to_apply, place) = site
        .map(|site| {
            let at = format!(
                ", to apply at `{}` (the user's code around the longest evidence event, from the trace's Python stack)",
                cut(site)
            );
            let place = super::call_site::frame(site)
                .map(|(file, line)| {
                    let base = file.rsplit('/').next().unwrap_or(file);
                    format!("In `{base}` line {line}: ")
                })
                .unwrap_or_default();
            (at, place)
        })
        .unwrap_or_default();
    // Never dropped: without it a small model's fix names no change (0 of 5 windows, 5 of 5
    // with it), and the budget took it from 2 of the 100 labelled windows (docs/LLM.md).
    out.push(Line {
        importance: 0,
        text: format!(
            "The rule's fix{to_apply}: {place}{} For example: `{}`",
            f.fix.summary,
            one_line(f.fix.snippet)
        ),
    });
    if held > EVIDENCE_IN_WINDOW {
        out.push(Line {
            importance: 1,
            text: format!(
                "And {} more evidence events in this window.",
                held - EVIDENCE_IN_WINDOW
            ),
        });
    }
    if held == 0 {
        for c in claimed.iter().take(EVIDENCE_IN_WINDOW) {
            out.push(Line {
                importance: 1,
                text: format!(
                    "Claimed stretch: {:.3}–{:.3} ms into the {} ({:.3} ms).",
                    ms(c.0 - s.start),
                    ms(c.1 - s.start),
                    a.step_word(),
                    ms(c.1 - c.0)
                ),
            });
        }
    }
    if let Some(e) = report.step_windows(a, step).and_then(|es| es.get(win)) {
        let likely = e.anomaly_probability.filter(|&p| p >= WINDOW_MODEL_SHOWN);
        if let (Some(p), Some(kind)) = (likely, e.predicted_type.as_deref()) {
            out.push(Line {
                importance: 4,
                text: format!(
                    "Window detector (beside the rule, not what chose the window): probability {p:.2} that the window holds an anti-pattern, most likely `{kind}`."
                ),
            });
        }
    }
    out
}

/// The step index and window index of a report window (by its step number and start).
fn locate(a: &Analysis<'_>, number: i64, start_ms: f64) -> Option<(usize, usize)> {
    let origin = a.trace.meta.span.map_or(0, |s| s.0);
    let step = a.steps.steps.iter().position(|s| s.number == number)?;
    let win = a.steps.steps[step]
        .windows
        .iter()
        .position(|w| (ms(w.start - origin) - start_ms).abs() < 1e-6)?;
    Some((step, win))
}

fn window_summary(
    a: &Analysis<'_>,
    key: String,
    title: String,
    flag: Flag,
    (step, win): (usize, usize),
    mut lines: Vec<Line>,
) -> WindowSummary {
    let s = &a.steps.steps[step];
    let w = &s.windows[win];
    let word = a.step_word();
    lines.insert(
        1,
        Line {
            importance: 0,
            text: format!(
                "Window: {word} {}{}, window {} of {} ({}{}), {:.3}–{:.3} ms into a {:.3} ms {word} ({:.3} ms long).",
                s.number,
                if s.warmup { " (warm-up)" } else { "" },
                win + 1,
                s.windows.len(),
                w.phase.label(),
                w.label.as_deref().map(|l| format!(", opened by `{}`", cut(l))).unwrap_or_default(),
                ms(w.start - s.start),
                ms(w.end - s.start),
                ms(s.dur()),
                ms(w.end - w.start)
            ),
        },
    );
    lines.extend(super::contents::window_lines(a, w));
    if matches!(flag, Flag::Unexplained(_)) {
        lines.extend(super::contents::host_call_lines(a.trace, w));
    }
    WindowSummary {
        key,
        title,
        flag,
        step: s.number,
        window: win,
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lines: &[(u8, &str)]) -> WindowSummary {
        WindowSummary {
            key: "k".into(),
            title: "t".into(),
            flag: Flag::Finding("x".into()),
            step: 1,
            window: 0,
            lines: lines
                .iter()
                .map(|&(importance, text)| Line {
                    importance,
                    text: text.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_snippet_is_one_line() {
        assert_eq!(
            one_line("loader = DataLoader(ds, num_workers=8,\n                    pin_memory=True)\nx = x.to(d)"),
            "loader = DataLoader(ds, num_workers=8, pin_memory=True); x = x.to(d)"
        );
    }

    #[test]
    fn tokens_are_bytes_over_four_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("µ"), 1);
    }

    #[test]
    fn least_important_lines_go_first_and_the_budget_holds() {
        let long = "x".repeat(400);
        let s = summary(&[
            (0, "header"),
            (3, &long),
            (1, &long),
            (4, &long),
            (3, &long),
            (2, &long),
        ]);
        let fixed = estimate_tokens(SYSTEM);
        let all = prompt(&s, 100_000);
        assert_eq!(all.dropped_lines, 0);
        // Room for the header and two long lines: the importance-1 and -2 lines stay.
        let p = prompt(&s, fixed + 2 + 2 * 101 + 1);
        assert_eq!(p.dropped_lines, 3);
        assert!(p.tokens <= fixed + 2 + 2 * 101 + 1, "{}", p.tokens);
        assert_eq!(p.user.lines().count(), 3);
        assert!(p.user.starts_with("header\n"));
        // Between equals, the later line is dropped first.
        let s2 = summary(&[(0, "h"), (3, "first"), (3, "second")]);
        let p2 = prompt(&s2, fixed + estimate_tokens("h\nfirst\n"));
        assert_eq!(p2.user, "h\nfirst\n");
        // Header lines stay even over the budget.
        let p3 = prompt(&s, 1);
        assert_eq!(p3.user, "header\n");
        assert_eq!(p3.tokens, fixed + estimate_tokens("header\n"));
    }
}
