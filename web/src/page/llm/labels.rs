//! The loop back to the ML stage: an unexplained region's window as a label of the ML stage's
//! label file (`ml::labels`), and how kept labels are named and told apart.

use torchtraceap::ml::labels::{WindowLabel, NOT_AN_ANTI_PATTERN};

use crate::page::export::stem;
use crate::protocol::Outcome;

/// Whether two labels are for the same window of the same trace.
pub(super) fn same_window(a: &WindowLabel, b: &WindowLabel) -> bool {
    a.fingerprint == b.fingerprint && a.step == b.step && a.window == b.window && a.phase == b.phase
}

/// `<trace>.labels.json` when every label is for one trace, else `torchtraceap.labels.json`.
pub(super) fn labels_file_name(labels: &[WindowLabel]) -> String {
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
pub(super) fn region_label(outcome: &Outcome, key: &str) -> Option<WindowLabel> {
    let analyzed = outcome.analyzed()?;
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
pub(super) fn pattern_name(pattern: &str) -> String {
    if pattern == NOT_AN_ANTI_PATTERN {
        "not an anti-pattern".to_string()
    } else {
        pattern.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::llm::state::{Msg, State};
    use crate::page::llm::view::region_title;
    use torchtraceap::llm::summary::Prompt;
    use torchtraceap::ml::labels;
    use wasm_bindgen_test::wasm_bindgen_test;
    use yew::Callback;

    #[wasm_bindgen_test]
    fn a_kept_region_is_exported_in_the_ml_stage_s_label_format() {
        use torchtraceap_dev::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};
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
        let trace = torchtraceap::AnalyzedTrace::new(&ingested);
        let analyzed = crate::protocol::Analyzed {
            summary: None,
            report: trace.report().clone(),
            fingerprint: Some(trace.fingerprint().to_string()),
            profile: None,
            modules: None,
        };
        let outcome = Outcome {
            file: 0,
            name: "run.pt.trace.json.gz".into(),
            size: 0,
            worker_memory_bytes: 0,
            result: Ok(crate::protocol::Document::Analysis(Box::new(
                analyzed.clone(),
            ))),
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
