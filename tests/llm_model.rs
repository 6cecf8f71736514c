//! The LLM stage against a real instruction-tuned model: Qwen2.5-Coder from PyPI on llama.cpp's
//! `llama-server` (`scripts/llm-server.sh start-model`, which `scripts/test.sh` runs and which
//! prints `TTAP_REAL_LLM_URL` and `TTAP_REAL_LLM_MODEL`). A fixed subset of `ttap-dev
//! llm-eval`'s windows, two generated and four real, is asked with the local budget
//! (`summary::LOCAL_BUDGET`) and graded for meaning: floors a random model cannot pass (it names
//! the right anti-pattern one time in five, cites no figure of the request, never a fix's term).
//! Without the variables the test prints `SKIPPED:` and passes, or fails where
//! `TTAP_REQUIRE_LLM_SERVER` is set (CI).

// Only `repo` and `shared_traces` of it: `trace_files` serves the tests that read every trace.
#[allow(dead_code)]
mod common;

use std::time::Instant;

use torchtraceap::internals::detect::scoring::RealLabels;
use torchtraceap::llm::client::send;
use torchtraceap::llm::protocol::{Endpoint, LOCAL_SERVER};
use torchtraceap::llm::summary::LOCAL_BUDGET;
use torchtraceap_dev::llm::eval::{self, grade, row, Case, Tally, TABLE_HEADER};

/// The windows asked about: generated ones by anti-pattern, real ones by trace and label.
const GENERATED: [&str; 2] = ["dataloader-bottleneck", "host-device-sync"];
const REAL: [(&str, &str); 4] = [
    (
        "facebookresearch__HolisticTraceAnalysis/tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
        "allocator-churn",
    ),
    (
        "facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json",
        "dataloader-bottleneck",
    ),
    (
        "haraldger__High-Performance-Deep-Learning/resnet50_trace.json",
        "fp32-without-tensor-cores",
    ),
    // Recorded with Python frames: its request names the user's line (`train_single_gpu.py(41)`).
    (
        "AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz",
        "allocator-churn",
    ),
];

/// The fixed subset's cases, in order.
fn cases(traces: &std::path::Path) -> Vec<Case> {
    let (generated, _) = eval::generated(LOCAL_BUDGET);
    let mut cases: Vec<Case> = generated
        .into_iter()
        .filter(|c| c.rule.as_deref().is_some_and(|r| GENERATED.contains(&r)))
        .collect();
    let text = std::fs::read_to_string(common::repo().join("models/real-labels.json"))
        .expect("models/real-labels.json");
    let mut labels = RealLabels::from_json(&text).expect("the real labels read");
    labels
        .traces
        .retain(|t| REAL.iter().any(|(trace, _)| *trace == t.trace));
    let (real, skipped) = eval::real(&labels, traces, LOCAL_BUDGET);
    cases.extend(real.into_iter().filter(|c| {
        REAL.iter()
            .any(|(trace, id)| c.name == format!("{trace}:{id}"))
    }));
    assert_eq!(
        cases.len(),
        GENERATED.len() + REAL.len(),
        "every window of the subset has a request (skipped: {skipped:?})"
    );
    cases
}

#[test]
fn the_model_server_starts_where_the_page_looks_for_it() {
    let script = std::fs::read_to_string(common::repo().join("scripts/llm-server.sh")).unwrap();
    let port = script
        .lines()
        .find_map(|l| l.strip_prefix("MODEL_PORT="))
        .expect("scripts/llm-server.sh sets MODEL_PORT");
    assert_eq!(
        LOCAL_SERVER.rsplit(':').next(),
        Some(port),
        "the page looks for a local model server at {LOCAL_SERVER}; the script starts it on {port}"
    );
    let model = script
        .lines()
        .find_map(|l| l.strip_prefix("DEFAULT_MODEL="))
        .expect("scripts/llm-server.sh sets DEFAULT_MODEL");
    for pins in ["sha256", "requirements.txt"] {
        let path = common::repo().join(format!("scripts/llm-models/{model}.{pins}"));
        assert!(path.is_file(), "{} pins the default model", path.display());
    }
}

#[test]
fn a_real_model_reads_the_evidence_right() {
    let (Ok(url), Ok(model)) = (
        std::env::var("TTAP_REAL_LLM_URL"),
        std::env::var("TTAP_REAL_LLM_MODEL"),
    ) else {
        let why = "no real model server (set TTAP_REAL_LLM_URL and TTAP_REAL_LLM_MODEL, e.g. `eval \"$(scripts/llm-server.sh start-model)\"`)";
        assert!(
            std::env::var_os("TTAP_REQUIRE_LLM_SERVER").is_none(),
            "TTAP_REQUIRE_LLM_SERVER is set and {why}"
        );
        println!("SKIPPED: a_real_model_reads_the_evidence_right: {why}");
        return;
    };
    let Some(traces) = common::shared_traces("a_real_model_reads_the_evidence_right") else {
        return;
    };
    // Generous per request: two busy cores write 1–3 tokens a second where idle ones write 5–10.
    let endpoint = Endpoint {
        url,
        stream: false,
        temperature: 0.0,
        timeout_s: 900,
        ..Endpoint::local(&model)
    };
    let mut tally = Tally::default();
    for case in cases(&traces) {
        let started = Instant::now();
        let reply = send(&endpoint, &case.prompt, |_| {})
            .unwrap_or_else(|e| panic!("{}: the model server failed: {e}", case.name));
        let g = grade(&case, &reply.text, started.elapsed(), reply.usage, false);
        println!(
            "{}: {:.1} s, {} prompt tokens, names {:?}; {} of {} citations found, {} misread {:?}; key figure {}; fix named {:?}; call site named {:?}\n  answer: {}",
            case.name,
            g.latency.as_secs_f64(),
            g.usage.map_or(0, |u| u.prompt_tokens),
            g.check.anti_pattern,
            g.check.found(),
            g.check.citations.len(),
            g.check.misread().count(),
            g.check.misread().map(|c| &c.misread).collect::<Vec<_>>(),
            g.key_figure,
            g.check.fix_named,
            g.check.call_site_named,
            reply.text
        );
        tally.add(&case, Some(g));
    }
    println!("{TABLE_HEADER}{}", row(&model, &tally));
    let n = tally.cases;
    let (found, cited) = tally.citations();
    let (misread, figures) = tally.misread();
    let (named, fixes) = tally.fixes_named();
    assert_eq!(tally.valid(), n, "every answer is the schema's object");
    assert!(
        tally.right() + 1 >= n,
        "the right anti-pattern in {} of {n}",
        tally.right()
    );
    assert!(
        cited >= n,
        "the explanations cite figures or names: {cited} in {n} answers"
    );
    assert!(
        found * 10 >= cited * 8,
        "at least 80% of the citations are in the evidence: {found} of {cited}"
    );
    assert!(
        misread * 5 <= figures,
        "at most one figure in five misread: {misread} of {figures}"
    );
    assert!(
        tally.key_figures() * 2 >= tally.with_key_figure,
        "the key figure cited in at least half: {} of {}",
        tally.key_figures(),
        tally.with_key_figure
    );
    assert!(
        named * 2 >= fixes,
        "the fix names the rule's change in at least half: {named} of {fixes}"
    );
    // The request begins the rule's fix with the user's file and line, which a model that keeps
    // to the evidence carries into its fix (the random model names no file).
    let (sites, with_site) = tally.call_sites_named();
    assert_eq!(with_site, 1, "one request gives a call site");
    assert_eq!(
        sites, with_site,
        "the answer names the user's file and line"
    );
}
