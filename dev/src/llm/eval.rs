//! A graded evaluation of an endpoint (`ttap-dev llm-eval`): a labelled set of windows, each with
//! the anti-pattern it holds and its key figure, the requests the app would send about them,
//! and the tally of the answers (right anti-pattern, citations found in the evidence, the key
//! figure cited, valid structured answers, latency, tokens). The transport is the caller's.
//!
//! The set: **generated** windows (the generator's six anti-patterns, each injected in every
//! step after the warm-up of a ResNet-50 on an A100) and **real** ones (the shared traces'
//! `present` labels in `models/real-labels.json`, judged by hand against `docs/LABELS.md`).
//! A case's request is the one about the rule finding of its anti-pattern; a generated case
//! whose finding the rules miss asks about the labelled window as an unexplained region when
//! the window model flags it; a case with neither is skipped, and said so. The key figure is
//! the time per step the finding claims, as its request states it (two decimals, ms).
//!
//! A third set, **unexplained**, asks for what only the LLM can add: a diagnosis of the real
//! windows the window model flags and no rule explains (`models/unexplained-labels.json`, judged
//! by hand from `scripts/window_stats.py`'s raw figures), graded against the anti-patterns each
//! label accepts.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};
use torchtraceap::ingest::{ingest_bytes, IngestOptions, Ingested};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect::scoring::{read_labelled, RealLabels};
use torchtraceap::internals::window::Window;
use torchtraceap::llm::answer::parse_answer;
use torchtraceap::llm::check::{check, Check, Kind};
use torchtraceap::llm::protocol::Usage;
use torchtraceap::llm::summary::{prompt, Flag, Prompt, SummaryOptions, WindowSummary};
use torchtraceap::AnalyzedTrace;

/// Where a case comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Generated,
    Real,
}

/// One labelled window and the request about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `generated:<id>` or `<trace path>:<id>`.
    pub name: String,
    pub source: Source,
    /// The anti-patterns a right answer names: the finding's id, or those an unexplained
    /// window's label accepts (`none` among them where the window is no problem to fix).
    pub accepted: Vec<String>,
    /// The rule whose own fix the answer's fix is graded against; none for a real unexplained
    /// window.
    pub rule: Option<String>,
    /// The time per step its finding claims (ms), when the request is about a finding.
    pub key_figure_ms: Option<f64>,
    pub prompt: Prompt,
}

/// A labelled window without a request, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// The summaries' options for the set: every flagged window, so that each finding has its
/// request.
fn options(budget: usize) -> SummaryOptions {
    SummaryOptions {
        budget,
        max_windows: usize::MAX,
        ..SummaryOptions::default()
    }
}

/// The generated cases: one trace per anti-pattern, injected at severity 0.8 in every step
/// after the first (the warm-up), without noise.
pub fn generated(budget: usize) -> (Vec<Case>, Vec<Skipped>) {
    let (mut cases, mut skipped) = (Vec::new(), Vec::new());
    for (k, pattern) in AntiPattern::ALL.into_iter().enumerate() {
        let steps = 6;
        let config = Config {
            model: Model::ResNet50,
            gpu: Gpu::A100,
            training: true,
            steps,
            batch: 32,
            seed: 29 + k as u64,
            injections: (1..steps)
                .map(|step| Injection {
                    pattern,
                    step,
                    severity: 0.8,
                })
                .collect(),
            noise: false,
        };
        let g = generate(&config);
        let name = format!("generated:{}", pattern.id());
        let ingested = match ingest_bytes(g.trace.as_bytes(), IngestOptions::default()) {
            Ok(i) => i,
            Err(e) => {
                skipped.push(Skipped {
                    name,
                    why: format!("the generated trace does not read back: {e}"),
                });
                continue;
            }
        };
        let labelled: Vec<(i64, &str)> = g.labels.iter().map(|l| (l.step, l.phase)).collect();
        match case_of(&ingested, pattern.id(), &labelled, budget) {
            Some((prompt, key)) => cases.push(Case {
                name,
                source: Source::Generated,
                accepted: vec![pattern.id().to_string()],
                rule: Some(pattern.id().to_string()),
                key_figure_ms: key,
                prompt,
            }),
            None => skipped.push(Skipped {
                name,
                why: "no request is about it: the rules miss it and the window model flags none of its windows".into(),
            }),
        }
    }
    (cases, skipped)
}

/// The real cases: each `present` label of `labels` whose trace is under `dir`.
pub fn real(labels: &RealLabels, dir: &Path, budget: usize) -> (Vec<Case>, Vec<Skipped>) {
    let (mut cases, mut skipped) = (Vec::new(), Vec::new());
    for t in labels.traces.iter().filter(|t| !t.present.is_empty()) {
        let ingested = match read_labelled(dir, &t.trace) {
            Ok(i) => i,
            Err(e) => {
                skipped.push(Skipped {
                    name: t.trace.clone(),
                    why: e.to_string(),
                });
                continue;
            }
        };
        for id in t.present.keys() {
            let name = format!("{}:{id}", t.trace);
            match case_of(&ingested, id, &[], budget) {
                Some((prompt, key)) => cases.push(Case {
                    name,
                    source: Source::Real,
                    accepted: vec![id.clone()],
                    rule: Some(id.clone()),
                    key_figure_ms: key,
                    prompt,
                }),
                None => skipped.push(Skipped {
                    name,
                    why: format!("the rules find no {id} in it, so no request is about it"),
                }),
            }
        }
    }
    (cases, skipped)
}

/// The hand labels of unexplained windows (`models/unexplained-labels.json`).
#[derive(Clone, Debug, Deserialize)]
pub struct UnexplainedLabels {
    /// How the labels were judged.
    pub method: String,
    pub regions: Vec<UnexplainedLabel>,
}

/// One window the window model flags and no rule explains, labelled.
#[derive(Clone, Debug, Deserialize)]
pub struct UnexplainedLabel {
    /// The trace, relative to the shared traces' folder.
    pub trace: String,
    pub step: i64,
    /// Where the window starts, ms from the trace's first timestamp (as the report says).
    pub start_ms: f64,
    /// The anti-patterns a careful reader could defend as its cause, the first the label's own.
    pub accepted: Vec<String>,
    /// The raw figures the label was judged from.
    pub why: String,
}

/// The unexplained-window cases: each region of `labels` whose trace is under `dir`, asked
/// about as the app would (the unexplained region's request), graded against what its label
/// accepts.
pub fn unexplained(
    labels: &UnexplainedLabels,
    dir: &Path,
    budget: usize,
) -> (Vec<Case>, Vec<Skipped>) {
    let (mut cases, mut skipped) = (Vec::new(), Vec::new());
    let name =
        |l: &UnexplainedLabel| format!("{}:step {} at {:.3} ms", l.trace, l.step, l.start_ms);
    // Each trace read and analyzed once, for all its labelled regions.
    let mut traces: Vec<&str> = Vec::new();
    for l in &labels.regions {
        if !traces.contains(&l.trace.as_str()) {
            traces.push(&l.trace);
        }
    }
    for trace in traces {
        let regions = labels.regions.iter().filter(|l| l.trace == trace);
        let ingested = match read_labelled(dir, trace) {
            Ok(i) => i,
            Err(e) => {
                skipped.extend(regions.map(|l| Skipped {
                    name: name(l),
                    why: e.to_string(),
                }));
                continue;
            }
        };
        let analyzed = AnalyzedTrace::new(&ingested);
        let summaries = analyzed.window_summaries(&options(budget));
        for l in regions {
            match unexplained_summary(&analyzed, &summaries, l) {
                Some(s) => cases.push(Case {
                    name: name(l),
                    source: Source::Real,
                    accepted: l.accepted.clone(),
                    rule: None,
                    key_figure_ms: None,
                    prompt: prompt(s, budget),
                }),
                None => skipped.push(Skipped {
                    name: name(l),
                    why: "the report has no unexplained region there (the rules or the window model changed: label it again)".into(),
                }),
            }
        }
    }
    (cases, skipped)
}

/// Window `index` of the step numbered `step`.
fn window<'a>(a: &'a Analysis<'_>, step: i64, index: usize) -> Option<&'a Window> {
    a.steps
        .steps
        .iter()
        .find(|s| s.number == step)?
        .windows
        .get(index)
}

/// The summary of the unexplained region `label` names, if the report still has it.
fn unexplained_summary<'s>(
    analyzed: &AnalyzedTrace<'_>,
    summaries: &'s [WindowSummary],
    label: &UnexplainedLabel,
) -> Option<&'s WindowSummary> {
    let origin = analyzed.trace().meta.span.map_or(0, |s| s.0);
    summaries.iter().find(|s| {
        matches!(s.flag, Flag::Unexplained(_))
            && s.step == label.step
            && window(analyzed.analysis(), s.step, s.window)
                .is_some_and(|w| ((w.start - origin) as f64 / 1e6 - label.start_ms).abs() < 0.01)
    })
}

/// The request about `id` in `ingested`: its finding's (with the finding's time per step), else
/// an unexplained region on a labelled window (step, phase).
fn case_of(
    ingested: &Ingested,
    id: &str,
    labelled: &[(i64, &str)],
    budget: usize,
) -> Option<(Prompt, Option<f64>)> {
    let analyzed = AnalyzedTrace::new(ingested);
    let a = analyzed.analysis();
    let opts = options(budget);
    let summaries = analyzed.window_summaries(&opts);
    let phase = |step: i64, index: usize| Some(window(a, step, index)?.phase.label());
    let finding = summaries
        .iter()
        .position(|s| s.flag == Flag::Finding(id.to_string()));
    let chosen = finding.or_else(|| {
        summaries.iter().position(|s| {
            matches!(s.flag, Flag::Unexplained(_))
                && labelled
                    .iter()
                    .any(|&(step, p)| s.step == step && phase(s.step, s.window) == Some(p))
        })
    })?;
    let key = finding.and_then(|_| {
        analyzed
            .findings()
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.impact.ms_per_step)
    });
    Some((prompt(&summaries[chosen], opts.budget), key))
}

/// One answer to one case, graded.
#[derive(Clone, Debug, PartialEq)]
pub struct Graded {
    pub check: Check,
    /// The answer names the case's anti-pattern.
    pub right: bool,
    /// The explanation cites the key figure.
    pub key_figure: bool,
    pub latency: Duration,
    pub usage: Option<Usage>,
    /// The server refused the answer schema; the answer is to the request without it.
    pub schema_refused: bool,
}

/// Grades the answer `text` to `case`.
pub fn grade(
    case: &Case,
    text: &str,
    latency: Duration,
    usage: Option<Usage>,
    schema_refused: bool,
) -> Graded {
    let answer = parse_answer(text);
    let check = check(&case.prompt.user, &answer, case.rule.as_deref());
    Graded {
        right: check
            .anti_pattern
            .as_ref()
            .is_some_and(|said| case.accepted.contains(said)),
        key_figure: case
            .key_figure_ms
            .is_some_and(|ms| check.cites(ms, "ms", 2)),
        check,
        latency,
        usage,
        schema_refused,
    }
}

impl Graded {
    /// The cited figures the request holds (those a misreading is counted among).
    pub fn figures_found(&self) -> usize {
        let found = self.check.citations.iter();
        found.filter(|c| c.found && c.kind == Kind::Figure).count()
    }
}

/// A model's results over the set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub cases: usize,
    /// Cases whose request failed (no answer).
    pub failed: usize,
    pub graded: Vec<Graded>,
    /// Cases with a key figure.
    pub with_key_figure: usize,
}

impl Tally {
    pub fn add(&mut self, case: &Case, result: Option<Graded>) {
        self.cases += 1;
        self.with_key_figure += usize::from(case.key_figure_ms.is_some());
        match result {
            Some(g) => self.graded.push(g),
            None => self.failed += 1,
        }
    }

    pub fn right(&self) -> usize {
        self.graded.iter().filter(|g| g.right).count()
    }

    pub fn valid(&self) -> usize {
        self.graded.iter().filter(|g| g.check.valid).count()
    }

    pub fn key_figures(&self) -> usize {
        self.graded.iter().filter(|g| g.key_figure).count()
    }

    pub fn schema_refused(&self) -> usize {
        self.graded.iter().filter(|g| g.schema_refused).count()
    }

    /// Citations found in the evidence, and all citations.
    pub fn citations(&self) -> (usize, usize) {
        self.graded.iter().fold((0, 0), |(f, n), g| {
            (f + g.check.found(), n + g.check.citations.len())
        })
    }

    /// Figures cited as another quantity than the request gives them as (`llm::quantity`), and
    /// the figures found in the evidence.
    pub fn misread(&self) -> (usize, usize) {
        self.graded.iter().fold((0, 0), |(m, n), g| {
            (m + g.check.misread().count(), n + g.figures_found())
        })
    }

    /// Answers whose fix names a change the rule's own fix names, and the answers with a fix
    /// to grade (about a finding).
    pub fn fixes_named(&self) -> (usize, usize) {
        let graded = self.graded.iter().filter_map(|g| g.check.fix_named);
        graded.fold((0, 0), |(y, n), named| (y + usize::from(named), n + 1))
    }

    /// Answers that name the user's line of code their request gives, and the answers whose
    /// request gives one (the trace records Python frames).
    pub fn call_sites_named(&self) -> (usize, usize) {
        let graded = self.graded.iter().filter_map(|g| g.check.call_site_named);
        graded.fold((0, 0), |(y, n), named| (y + usize::from(named), n + 1))
    }

    /// The median time the server read a prompt before its first answer token, where it said.
    pub fn first_token(&self) -> Option<Duration> {
        let mut ms: Vec<u64> = self
            .graded
            .iter()
            .filter_map(|g| g.usage?.prompt_ms)
            .collect();
        ms.sort_unstable();
        ms.get(ms.len().checked_sub(1)? / 2)
            .map(|&m| Duration::from_millis(m))
    }

    /// The latency at quantile `q` (nearest rank) of the answered cases.
    pub fn latency(&self, q: f64) -> Option<Duration> {
        let mut l: Vec<Duration> = self.graded.iter().map(|g| g.latency).collect();
        l.sort();
        let rank = ((q * l.len() as f64).ceil() as usize).clamp(1, l.len().max(1));
        l.get(rank - 1).copied()
    }

    /// Mean prompt and answer tokens of the answers the server counted, and how many.
    pub fn tokens(&self) -> Option<(f64, f64, usize)> {
        let counted: Vec<Usage> = self.graded.iter().filter_map(|g| g.usage).collect();
        let n = counted.len();
        (n > 0).then(|| {
            let sum = |f: fn(&Usage) -> u64| counted.iter().map(f).sum::<u64>() as f64 / n as f64;
            (sum(|u| u.prompt_tokens), sum(|u| u.answer_tokens), n)
        })
    }

    /// Mean prompt tokens the server took from its cache (a prefix read for an earlier
    /// request), over the answers where it said.
    pub fn cached_tokens(&self) -> Option<f64> {
        let said: Vec<u64> = self
            .graded
            .iter()
            .filter_map(|g| g.usage?.cached_tokens)
            .collect();
        (!said.is_empty()).then(|| said.iter().sum::<u64>() as f64 / said.len() as f64)
    }
}

/// `part of whole (percent)`, or `–` for none.
pub fn share(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".to_string()
    } else {
        format!(
            "{part}/{whole} ({:.0}%)",
            100.0 * part as f64 / whole as f64
        )
    }
}

/// The table's header, Markdown.
pub const TABLE_HEADER: &str = "| model | windows | answered | right anti-pattern | cited figures and names in the evidence | figures misread | key figure cited | fix names the rule's change | call site named | valid structured answers | latency median / p90 | first token (median) | tokens in (from the cache) / out (mean) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

/// One model's row of the table.
pub fn row(model: &str, t: &Tally) -> String {
    let (found, cited) = t.citations();
    let answered = t.graded.len();
    let secs =
        |d: Option<Duration>| d.map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64()));
    let cached = t
        .cached_tokens()
        .map_or(String::new(), |c| format!(" ({c:.0})"));
    let tokens = t.tokens().map_or("–".into(), |(i, o, n)| {
        if n == answered {
            format!("{i:.0}{cached} / {o:.0}")
        } else {
            format!("{i:.0}{cached} / {o:.0} ({n} counted)")
        }
    });
    let (misread, figures) = t.misread();
    let (named, fixes) = t.fixes_named();
    let (sites, with_site) = t.call_sites_named();
    format!(
        "| {model} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {tokens} |\n",
        t.cases,
        share(answered, t.cases),
        share(t.right(), t.cases),
        share(found, cited),
        share(misread, figures),
        share(t.key_figures(), t.with_key_figure),
        share(named, fixes),
        share(sites, with_site),
        share(t.valid(), t.cases),
        secs(t.latency(0.5)),
        secs(t.latency(0.9)),
        secs(t.first_token()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(key: Option<f64>) -> Case {
        Case {
            name: "c".into(),
            source: Source::Generated,
            accepted: vec!["dataloader-bottleneck".into()],
            rule: Some("dataloader-bottleneck".into()),
            key_figure_ms: key,
            prompt: Prompt {
                key: "finding:dataloader-bottleneck".into(),
                title: "t".into(),
                system: String::new(),
                user: "about 12.35 ms per step (41.2% of the step); aten::copy_".into(),
                window_tokens: 1,
                tokens: 1,
                dropped_lines: 0,
            },
        }
    }

    #[test]
    fn answers_are_graded_and_tallied() {
        let good = r#"{"anti_pattern":"dataloader-bottleneck","explanation":"12.35 ms per step, 41% of it, in aten::copy_","fix":"num_workers=8","confidence":0.9}"#;
        let wrong = r#"{"anti_pattern":"host-device-sync","explanation":"aten::item takes 3.0 ms","fix":"f","confidence":0.2}"#;
        let mut t = Tally::default();
        let ms = |m| Duration::from_millis(m);
        let usage = Some(Usage {
            prompt_tokens: 100,
            answer_tokens: 50,
            cached_tokens: Some(30),
            prompt_ms: Some(40),
        });
        t.add(
            &case(Some(12.35)),
            Some(grade(&case(Some(12.35)), good, ms(100), usage, false)),
        );
        t.add(
            &case(Some(12.35)),
            Some(grade(&case(Some(12.35)), wrong, ms(300), None, true)),
        );
        t.add(
            &case(Some(12.35)),
            Some(grade(&case(None), "free text", ms(200), None, false)),
        );
        t.add(&case(None), None);
        assert_eq!((t.cases, t.failed, t.graded.len()), (4, 1, 3));
        assert_eq!(t.right(), 1);
        assert_eq!(t.valid(), 2);
        assert_eq!(t.key_figures(), 1);
        assert_eq!(t.with_key_figure, 3);
        assert_eq!(t.schema_refused(), 1);
        assert_eq!(t.citations(), (3, 5));
        assert_eq!(t.latency(0.5), Some(ms(200)));
        assert_eq!(t.latency(0.9), Some(ms(300)));
        assert_eq!(t.tokens(), Some((100.0, 50.0, 1)));
        assert_eq!(t.cached_tokens(), Some(30.0));
        assert_eq!(t.misread(), (0, 2));
        assert_eq!(t.fixes_named(), (1, 2));
        assert_eq!(t.first_token(), Some(ms(40)));
        let r = row("m", &t);
        assert!(
            r.starts_with("| m | 4 | 3/4 (75%) | 1/4 (25%) | 3/5 (60%) | 0/2 (0%) | 1/3 (33%) | 1/2 (50%) | – | 2/4 (50%) | 0.20 s / 0.30 s | 0.04 s | 100 (30) / 50 (1 counted) |"),
            "{r}"
        );
        assert_eq!(share(0, 0), "–");
    }
}
