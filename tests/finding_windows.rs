//! Every finding on every real trace of `../shared/traces` points at its evidence: the window
//! "Show on timeline" opens and the LLM request is about (the first of
//! `Report::finding_windows`), every band drawn for it, and the windows a share link carries,
//! each hold one of its evidence events (or, for a finding whose evidence is no event, time it
//! claims). Skips, saying so, where the folder is absent.

mod common;

use std::fs::File;

use common::{shared_traces, trace_files};
use torchtraceap::ingest::{ingest_reader, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect::{self, Finding};
use torchtraceap::llm::summary::{summarize, Flag, SummaryOptions};
use torchtraceap::report::{evidence_events, overlaps, Report};
use torchtraceap::share::{self, ShareOptions, SharedReport};
use torchtraceap::timeline::bands;

/// Whether window `(step, w)` holds one of `f`'s evidence events or, where it has none, time it
/// claimed.
fn holds_evidence(a: &Analysis<'_>, f: &Finding, (step, w): (usize, usize)) -> bool {
    let win = &a.steps.steps[step].windows[w];
    let range = (win.start, win.end);
    let events = evidence_events(f);
    if events.is_empty() {
        f.claimed
            .iter()
            .any(|(s, iv)| *s == step && iv.iter().any(|&(x, y)| x < range.1 && y > range.0))
    } else {
        events.iter().any(|&i| overlaps(a, i, range))
    }
}

#[test]
fn every_finding_points_at_a_window_that_holds_its_evidence() {
    let Some(dir) = shared_traces("every_finding_points_at_a_window_that_holds_its_evidence")
    else {
        return;
    };
    let (mut checked, mut by_events, mut failures) = (0, 0, Vec::new());
    for path in trace_files(&dir) {
        let Ok(ingested) = ingest_reader(
            File::open(&path).unwrap(),
            IngestOptions::default(),
            4 << 20,
            |_| {},
        ) else {
            continue;
        };
        let t = &ingested.trace;
        let a = Analysis::new(t);
        let detected = detect::run(&a);
        let report = Report::new(&a, &detected);
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let summaries = summarize(&a, &detected.findings, &report, &SummaryOptions::default());
        let link = share::encode(
            &SharedReport::new(report.clone(), String::from("fp1-test")),
            &ShareOptions::default(),
        )
        .unwrap();
        let shared = share::decode(&link.fragment).unwrap().report;
        let drawn = bands::bands(&a, &detected.findings, &report);
        for f in &detected.findings {
            checked += 1;
            by_events += usize::from(!evidence_events(f).is_empty());
            let mut fail = |what: String| failures.push(format!("{name}: {}: {what}", f.id));
            let windows = report.finding_windows(&a, f);
            let Some(&first) = windows.first() else {
                fail("no window".into());
                continue;
            };
            if !holds_evidence(&a, f, first) {
                let w = &a.steps.steps[first.0].windows[first.1];
                fail(format!(
                    "its window (step {}, {}) holds none of its evidence",
                    a.steps.steps[first.0].number,
                    w.phase.label()
                ));
            }
            for &sw in &windows {
                if !holds_evidence(&a, f, sw) {
                    fail(format!(
                        "band at step index {} window {} holds none",
                        sw.0, sw.1
                    ));
                }
            }
            // The bands are those windows, the first band the one "Show on timeline" opens.
            let mine: Vec<(i64, i64)> = drawn
                .iter()
                .filter(|b| b.finding == f.id)
                .map(|b| (b.start, b.end))
                .collect();
            let expected: Vec<(i64, i64)> = windows
                .iter()
                .map(|&(s, w)| {
                    let win = &a.steps.steps[s].windows[w];
                    (win.start, win.end)
                })
                .collect();
            if mine != expected {
                fail(format!("bands {mine:?} are not its windows {expected:?}"));
            }
            // The LLM request is about the same window.
            let request = summaries
                .iter()
                .find(|s| s.flag == Flag::Finding(f.id.to_string()));
            match request {
                Some(s) if (s.step, s.window) == (a.steps.steps[first.0].number, first.1) => {}
                Some(s) => fail(format!(
                    "the request is about step {} window {}",
                    s.step, s.window
                )),
                None if summaries.len() < SummaryOptions::default().max_windows => {
                    fail("no request".into())
                }
                None => {}
            }
            // A share link carries the same first window.
            if let Some(entry) = shared.findings.iter().find(|e| e.id == f.id) {
                let w = entry.windows.first().map(|w| (w.step, w.window));
                if w != Some((a.steps.steps[first.0].number, first.1)) {
                    fail(format!("the link's window is {w:?}"));
                }
            }
        }
    }
    eprintln!(
        "finding windows: {checked} findings on the shared traces ({by_events} with evidence events), {} hold none of their evidence",
        failures.len()
    );
    assert!(checked > 50, "only {checked} findings checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
