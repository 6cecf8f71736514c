//! The hand labels of unexplained windows (`models/unexplained-labels.json`, judged from
//! `scripts/window_stats.py`'s raw figures) against the shared traces: each region is still
//! flagged and unexplained in its report, so `ttap-dev llm-eval unexplained` asks about all of
//! them; and an unexplained window's request names the runtime calls that held the host, where a
//! finding's request (whose evidence events say it) does not.

// Only `repo` and `shared_traces` of it.
#[allow(dead_code)]
mod common;

use torchtraceap::llm::summary::{DEFAULT_BUDGET, LOCAL_BUDGET};
use torchtraceap_dev::llm::eval::{self, UnexplainedLabels};

fn labels() -> UnexplainedLabels {
    let path = common::repo().join("models/unexplained-labels.json");
    let text = std::fs::read_to_string(&path).expect("models/unexplained-labels.json");
    serde_json::from_str(&text).expect("the unexplained labels read")
}

#[test]
fn every_labelled_region_is_asked_about_with_the_calls_that_held_the_host() {
    let Some(traces) = common::shared_traces("every_labelled_region_is_asked_about") else {
        return;
    };
    let labels = labels();
    assert!(
        labels.regions.len() >= 10,
        "{} regions",
        labels.regions.len()
    );
    let (cases, skipped) = eval::unexplained(&labels, &traces, LOCAL_BUDGET);
    assert!(
        skipped.is_empty(),
        "labels without their region: {skipped:?}"
    );
    assert_eq!(cases.len(), labels.regions.len());
    for c in &cases {
        assert!(c.rule.is_none() && c.key_figure_ms.is_none(), "{}", c.name);
        assert!(
            c.prompt.user.contains("no rule finding explains it"),
            "{}: {}",
            c.name,
            c.prompt.user
        );
    }
    // The DLRM windows: the host waits 145 ms in one cudaMemcpyAsync under aten::copy_, which
    // only the runtime-call line says.
    let dlrm: Vec<_> = cases
        .iter()
        .filter(|c| c.name.contains("negative_queue_length_values_check"))
        .collect();
    assert_eq!(dlrm.len(), 5);
    for c in dlrm {
        let line = c
            .prompt
            .user
            .lines()
            .find(|l| l.starts_with("Runtime call #1:"))
            .unwrap_or_else(|| panic!("{}: no runtime call line in {}", c.name, c.prompt.user));
        assert!(
            line.contains("cudaMemcpyAsync") && line.contains("under aten::copy_"),
            "{line}"
        );
    }
}

#[test]
fn a_findings_request_has_no_runtime_call_lines() {
    let Some(traces) = common::shared_traces("a_findings_request_has_no_runtime_call_lines") else {
        return;
    };
    let text = std::fs::read_to_string(common::repo().join("models/real-labels.json"))
        .expect("models/real-labels.json");
    let mut labels =
        torchtraceap::internals::detect::scoring::RealLabels::from_json(&text).expect("labels");
    labels.traces.truncate(12);
    // The full budget: the local one could drop such a line anyway.
    let (cases, _) = eval::real(&labels, &traces, DEFAULT_BUDGET);
    assert!(!cases.is_empty());
    for c in &cases {
        assert!(!c.prompt.user.contains("Runtime call #"), "{}", c.name);
    }
}
