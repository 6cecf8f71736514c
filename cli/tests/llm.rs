//! The LLM stage without a server: summaries of real and generated traces (deterministic, within
//! the budget, redacted), Ollama's recorded streams, timeouts and unreachable endpoints.
//! `tests/llm_server.rs` runs against a real llama-server.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::llm::answer::parse_answer;
use torchtraceap::llm::client::send;
use torchtraceap::llm::protocol::{Endpoint, LlmError, Protocol};
use torchtraceap::llm::stream::{parse_response, StreamParser};
use torchtraceap::llm::summary::{self, estimate_tokens, Flag, SummaryOptions};
use torchtraceap::report::Report;
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};

/// A generated training trace of 5 steps (the first warm-up): a host sync in every steady step
/// (a `loss.item()` each step, worst in step 2), and a slow DataLoader in steps 3 and 4 (half
/// of the steady steps, as a finding needs).
fn generated() -> String {
    let at = |pattern, step, severity| Injection {
        pattern,
        step,
        severity,
    };
    generate(&Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 5,
        batch: 32,
        seed: 7,
        injections: vec![
            at(AntiPattern::HostSync, 1, 0.6),
            at(AntiPattern::HostSync, 2, 0.8),
            at(AntiPattern::HostSync, 3, 0.6),
            at(AntiPattern::HostSync, 4, 0.6),
            at(AntiPattern::DataLoader, 3, 0.8),
            at(AntiPattern::DataLoader, 4, 0.5),
        ],
        noise: true,
    })
    .trace
}

/// The prompts of a trace's bytes with `opts`.
fn prompts_of(bytes: &[u8], opts: &SummaryOptions) -> Vec<summary::Prompt> {
    let ingested = ingest_bytes(bytes, IngestOptions::default()).expect("a trace");
    let a = Analysis::new(&ingested.trace);
    let detected = detect::run(&a);
    let report = Report::new(&a, &detected);
    let findings = detected.findings;
    summary::prompts(&summary::summarize(&a, &findings, &report, opts), opts)
}

#[test]
fn summaries_are_deterministic_bounded_and_cite_the_window() {
    let trace = generated();
    let opts = SummaryOptions::default();
    let first = prompts_of(trace.as_bytes(), &opts);
    assert_eq!(first, prompts_of(trace.as_bytes(), &opts));
    assert!(!first.is_empty());
    assert!(
        first.iter().any(|p| p.key == "finding:host-device-sync"),
        "{:?}",
        first.iter().map(|p| &p.key).collect::<Vec<_>>()
    );
    for p in &first {
        assert!(
            p.tokens <= opts.budget,
            "{} over budget: {}",
            p.key,
            p.tokens
        );
        assert_eq!(
            p.tokens,
            estimate_tokens(&p.system) + estimate_tokens(&p.user)
        );
        for needed in ["Trace: ", "Window: step ", "Flagged by ", "A100"] {
            assert!(
                p.user.contains(needed),
                "{} lacks {needed:?}:\n{}",
                p.key,
                p.user
            );
        }
        assert!(!p.user.contains("\"ph\""), "raw trace events in the prompt");
    }
    // A tight budget drops lines (least important first: kernels before the flagging lines).
    let tight = SummaryOptions {
        budget: estimate_tokens(summary::SYSTEM) + 200,
        ..SummaryOptions::default()
    };
    for p in prompts_of(trace.as_bytes(), &tight) {
        assert!(p.dropped_lines > 0, "{}", p.key);
        assert!(p.user.contains("Flagged by "), "{}", p.user);
        assert!(!p.user.contains("Kernel #"), "{}", p.user);
    }
}

/// A finding's summary describes a window the detector flags as that anti-pattern in a step it
/// concerns, not merely the first steady step (the DataLoader stall is in steps 3 and 4 of the
/// generator, not in steps 1 and 2).
#[test]
fn a_finding_is_summarised_at_its_flagged_window() {
    let trace = generated();
    let ingested = ingest_bytes(trace.as_bytes(), IngestOptions::default()).unwrap();
    let a = Analysis::new(&ingested.trace);
    let detected = detect::run(&a);
    let report = Report::new(&a, &detected);
    let findings = detected.findings;
    let summaries = summary::summarize(&a, &findings, &report, &SummaryOptions::default());
    let dataloader = summaries
        .iter()
        .find(|s| s.key == "finding:dataloader-bottleneck")
        .expect("the DataLoader stall is found");
    let finding = findings
        .iter()
        .find(|f| f.id == "dataloader-bottleneck")
        .unwrap();
    // Injected at steps 3 and 4 of the generator: ProfilerStep#(FIRST_STEP + 3) and + 4; the
    // gate holds in those 2 of the 4 steady steps.
    let first = torchtraceap_dev::synth::FIRST_STEP;
    let mut held: Vec<i64> = finding.step_costs.iter().map(|c| c.number).collect();
    held.sort();
    assert_eq!(held, [first + 3, first + 4]);
    assert_eq!(finding.evidence[0].steps, held);
    assert!(
        held.contains(&dataloader.step),
        "summarised at step {}, the stall is in {held:?}",
        dataloader.step
    );
    let step = a
        .steps
        .steps
        .iter()
        .find(|s| s.number == dataloader.step)
        .unwrap();
    assert_eq!(
        step.windows[dataloader.window].phase.label(),
        "data loading"
    );
}

#[test]
fn redaction_hides_user_names_stably() {
    let trace = generated();
    let plain = prompts_of(trace.as_bytes(), &SummaryOptions::default());
    let module = plain
        .iter()
        .flat_map(|p| p.user.lines())
        .find_map(|l| {
            ["Module #1: ", "Operator #1: "]
                .iter()
                .find_map(|m| l.split(m).nth(1))
        })
        .map(|l| l.split(" — ").next().unwrap().to_string())
        .expect("a module or operator line");
    let opts = SummaryOptions {
        redact: true,
        module_names: vec![module.clone()],
        ..SummaryOptions::default()
    };
    let redacted = prompts_of(trace.as_bytes(), &opts);
    assert_eq!(redacted, prompts_of(trace.as_bytes(), &opts));
    assert!(redacted.iter().all(|p| !p.user.contains(&module)));
    assert!(redacted.iter().any(|p| p.user.contains("<name1>")));
}

#[test]
fn unexplained_regions_are_summarised() {
    let ingested = ingest_bytes(generated().as_bytes(), IngestOptions::default()).unwrap();
    let a = Analysis::new(&ingested.trace);
    let report = Report::new(&a, &detect::Detected::default());
    let opts = SummaryOptions {
        max_windows: 100,
        ..SummaryOptions::default()
    };
    let s = summary::summarize(&a, &[], &report, &opts);
    assert_eq!(s.len(), report.unexplained.len());
    for (w, u) in s.iter().zip(&report.unexplained) {
        assert_eq!(w.flag, Flag::Unexplained(u.predicted_type.clone()));
        assert_eq!(w.step, u.step);
        assert!(w.text().contains("window detector"), "{}", w.text());
    }
}

/// Tokens per window and per request on every shared trace, against the raw size (printed).
#[test]
fn summary_sizes_on_the_shared_traces() {
    let Some(dir) = common::shared_traces("summary_sizes_on_the_shared_traces") else {
        return;
    };
    let opts = SummaryOptions::default();
    println!("trace | file bytes | JSON bytes | requests | window tokens (min–max) | request tokens (max) | lines dropped");
    for f in common::trace_files(&dir) {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(ingested) = ingest_bytes(&bytes, IngestOptions::default()) else {
            continue;
        };
        let a = Analysis::new(&ingested.trace);
        let detected = detect::run(&a);
        let report = Report::new(&a, &detected);
        let findings = detected.findings;
        let prompts = summary::prompts(&summary::summarize(&a, &findings, &report, &opts), &opts);
        let w: Vec<usize> = prompts.iter().map(|p| p.window_tokens).collect();
        let r = prompts.iter().map(|p| p.tokens).max().unwrap_or(0);
        assert!(r <= opts.budget, "{}: {r} tokens", f.display());
        println!(
            "{} | {} | {} | {} | {}–{} | {} | {}",
            rel(&dir, &f),
            bytes.len(),
            ingested.report.json_bytes,
            prompts.len(),
            w.iter().min().unwrap_or(&0),
            w.iter().max().unwrap_or(&0),
            r,
            prompts.iter().map(|p| p.dropped_lines).sum::<usize>()
        );
    }
}

/// Where the trace records Python frames, a finding's rule fix begins with the user's file and
/// line, so that a model copying the fix says where the change goes (TraceLens' DDP ResNet-18,
/// `allocator-churn`, around `train_single_gpu.py(41): main`).
#[test]
fn the_rules_fix_begins_with_the_users_file_and_line() {
    let Some(dir) = common::shared_traces("the_rules_fix_begins_with_the_users_file_and_line")
    else {
        return;
    };
    let path = dir.join(
        "AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz",
    );
    let ingested = ingest_bytes(&std::fs::read(&path).unwrap(), IngestOptions::default())
        .expect("the gzip trace reads");
    let analyzed = torchtraceap::AnalyzedTrace::new(&ingested);
    let prompt = analyzed
        .prompts(&SummaryOptions::default())
        .into_iter()
        .find(|p| p.key == "finding:allocator-churn")
        .expect("a request about allocator-churn");
    assert!(
        prompt.user.contains(
            "to apply at `train_single_gpu.py(41): main` (the user's code around the longest evidence event, from the trace's Python stack): In `train_single_gpu.py` line 41: Let the caching allocator"
        ),
        "{}",
        prompt.user
    );
}

/// The request about finding `id` of the shared trace `trace` at the local budget, checked to
/// have dropped lines (the budget binds); `None` where the shared traces are absent (said).
fn local_budget_request(test: &str, trace: &str, id: &str) -> Option<String> {
    let path = common::shared_traces(test)?.join(trace);
    let ingested = ingest_bytes(&std::fs::read(&path).unwrap(), IngestOptions::default())
        .expect("the gzip trace reads");
    let opts = SummaryOptions {
        budget: summary::LOCAL_BUDGET,
        ..SummaryOptions::default()
    };
    let prompt = torchtraceap::AnalyzedTrace::new(&ingested)
        .prompts(&opts)
        .into_iter()
        .find(|p| p.key == format!("finding:{id}"))
        .unwrap_or_else(|| panic!("a request about {id}"));
    assert!(
        prompt.dropped_lines > 0,
        "the budget binds: {}",
        prompt.user
    );
    Some(prompt.user)
}

/// At the local budget, a window with many evidence events keeps the rule's fix: the events past
/// the first few go first (TraceLens' MI210 capture, `layout-transforms`, 8 events in its window).
#[test]
fn the_local_budget_keeps_the_rules_fix_over_more_evidence_events() {
    let Some(user) = local_budget_request(
        "the_local_budget_keeps_the_rules_fix",
        "AMD-AGI__TraceLens/tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz",
        "layout-transforms",
    ) else {
        return;
    };
    assert!(user.contains("The rule's fix: "), "{user}");
    assert!(user.contains("Evidence event in this window"), "{user}");
}

/// At the local budget the rule's fix is never dropped, even where the finding's own lines leave
/// no room for it (TimeSformer's `unfused-attention`, whose long flagging line filled the budget:
/// the request went without its fix and its call site, and the model's fix named no change).
#[test]
fn the_local_budget_never_drops_the_rules_fix() {
    let Some(user) = local_budget_request(
        "the_local_budget_never_drops_the_rules_fix",
        "AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
        "unfused-attention",
    ) else {
        return;
    };
    assert!(
        user.contains("The rule's fix, to apply at `")
            && user.contains("scaled_dot_product_attention"),
        "{user}"
    );
}

fn rel(dir: &Path, f: &Path) -> String {
    f.strip_prefix(dir).unwrap_or(f).display().to_string()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(common::repo().join("tests/fixtures/ollama").join(name)).unwrap()
}

/// The text of a recorded stream fed in pieces of `size` bytes.
fn replay(name: &str, size: usize) -> Result<String, LlmError> {
    let bytes = fixture(name);
    let mut p = StreamParser::new(Protocol::Ollama);
    let mut text = String::new();
    for piece in bytes.chunks(size) {
        text.extend(p.feed(piece)?);
    }
    text.extend(p.finish()?);
    Ok(text)
}

#[test]
fn ollama_recorded_streams() {
    for size in [1, 2, 3, 7, 64, 4096] {
        let text = replay("chat-stream.ndjson", size).unwrap();
        let a = parse_answer(&text);
        assert_eq!(
            a.anti_pattern.as_deref(),
            Some("host-device synchronization")
        );
        assert_eq!(a.confidence, Some(0.7));
        assert!(a.fix.unwrap().contains(".item()"));
        let free = parse_answer(&replay("chat-free-text.ndjson", size).unwrap());
        assert!(!free.structured());
        assert_eq!(
            free.text,
            "The window is slow because the DataLoader has num_workers=0."
        );
        let missing = replay("chat-model-missing.ndjson", size).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("not found, try pulling it first"),
            "{missing}"
        );
        let cut = replay("chat-cut.ndjson", size).unwrap_err();
        assert!(matches!(cut, LlmError::Malformed { .. }), "{cut}");
    }
    let whole = String::from_utf8(fixture("chat-nostream.json")).unwrap();
    let a = parse_answer(&parse_response(Protocol::Ollama, &whole).unwrap());
    assert_eq!(a.anti_pattern.as_deref(), Some("launch-bound"));
    assert!(a.fix.unwrap().contains("reduce-overhead"));
}

fn prompt() -> summary::Prompt {
    prompts_of(generated().as_bytes(), &SummaryOptions::default()).remove(0)
}

#[test]
fn a_closed_port_is_unreachable() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Endpoint::new(&format!("http://127.0.0.1:{port}"), Protocol::OpenAi, "m");
    let err = send(&e, &prompt(), |_| {}).unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("is the server running"), "{err}");
}

#[test]
fn a_silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = conn.read(&mut buf);
        std::thread::sleep(std::time::Duration::from_secs(3));
    });
    let mut e = Endpoint::new(&format!("http://127.0.0.1:{port}"), Protocol::Ollama, "m");
    e.timeout_s = 1;
    let err = send(&e, &prompt(), |_| {}).unwrap_err();
    assert_eq!(err, LlmError::Timeout { seconds: 1 });
    server.join().unwrap();
}

#[test]
fn explain_dry_run_prints_the_exact_bodies() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let trace = dir.join("t.json");
    std::fs::write(&trace, generated()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ttap"))
        .arg("explain")
        .arg(&trace)
        .args([
            "--dry-run",
            "--redact",
            "--budget",
            "900",
            "--protocol",
            "ollama",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let expected = prompts_of(
        generated().as_bytes(),
        &SummaryOptions {
            budget: 900,
            redact: true,
            ..SummaryOptions::default()
        },
    );
    assert_eq!(stdout.lines().count(), expected.len());
    for (line, p) in stdout.lines().zip(&expected) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["messages"][1]["content"], p.user.as_str());
        assert_eq!(v["model"], "codellama");
        assert!(
            stderr.contains(&format!("{} bytes, about {} tokens", line.len(), p.tokens)),
            "{stderr}"
        );
    }
}
