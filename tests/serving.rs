//! Serving iterations: a vLLM, SGLang or TGI capture is split into its engine's iterations, each
//! typed prefill, decode or mixed, with per kind the time per iteration and its spread, GPU busy,
//! the host time between iterations, graph replays per iteration and tokens per second; the
//! rules that assume training stay off, and launch-bound reads the decode iterations. On the
//! generated captures of `scripts/serving_trace.py` (`tests/fixtures/vllm-serving*.json`), a
//! TGI loop written here (typed by its token ids' shape), and every real serving capture of the
//! shared set. Read through the report's JSON, as every front end reads it.

#[allow(dead_code)]
mod common;
mod kineto;

use serde_json::Value;
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::AnalyzedTrace;

/// The report of the trace in `bytes`, as JSON.
fn report(bytes: &[u8]) -> Value {
    let ingested = ingest_bytes(bytes, IngestOptions::default()).expect("a trace");
    serde_json::to_value(AnalyzedTrace::new(&ingested).report()).expect("serializable")
}

fn fixture(name: &str) -> Value {
    report(&std::fs::read(common::repo().join("tests/fixtures").join(name)).expect("readable"))
}

/// The kinds of the report's iterations, in order.
fn kinds(r: &Value) -> Vec<String> {
    r["serving"]["iterations"]
        .as_array()
        .expect("serving iterations")
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or("untyped").to_string())
        .collect()
}

/// The figures of the iterations of `kind`.
fn of_kind<'r>(r: &'r Value, kind: &str) -> &'r Value {
    r["serving"]["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .find(|k| k["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} iterations"))
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-6 * b.abs().max(1.0),
        "{what}: {a} vs {b}"
    );
}

#[test]
fn a_generated_vllm_capture_is_split_into_typed_iterations_with_their_figures() {
    let r = fixture("vllm-serving.pt.trace.json");
    assert_eq!(r["trace"]["step_source"], "serving_iterations");
    assert_eq!(r["steps"].as_array().unwrap().len(), 9);
    let mut expected = vec!["prefill", "prefill", "mixed"];
    expected.extend(["decode"; 6]);
    assert_eq!(kinds(&r), expected);
    // Every iteration is the whole step; none is a warm-up.
    assert_eq!(r["trace"]["steady_steps"], 9);
    let iterations = r["serving"]["iterations"].as_array().unwrap();
    for (i, s) in iterations.iter().zip(r["steps"].as_array().unwrap()) {
        assert_eq!(i["number"], s["number"]);
        close(
            i["ms"].as_f64().unwrap(),
            s["duration_ms"].as_f64().unwrap(),
            "ms",
        );
        assert_eq!(i["typed_by"], "annotation");
    }
    // The annotations' tokens: 2048 and 1900 prompt tokens, 300 + 8, then 9 per decode.
    let tokens: Vec<u64> = iterations
        .iter()
        .map(|i| i["tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(tokens, [2048, 1900, 308, 9, 9, 9, 9, 9, 9]);
    // A replay per layer (4) in prefill, one full graph per decode.
    let prefill = of_kind(&r, "prefill");
    let decode = of_kind(&r, "decode");
    assert_eq!(prefill["time"]["n"], 2);
    assert_eq!(decode["time"]["n"], 6);
    assert_eq!(prefill["graph_replays_per_iteration"], 4.0);
    assert_eq!(decode["graph_replays_per_iteration"], 1.0);
    // Tokens per second: the kind's tokens over its time.
    let decode_ms: f64 = iterations[3..]
        .iter()
        .map(|i| i["ms"].as_f64().unwrap())
        .sum();
    close(
        decode["tokens_per_s"].as_f64().unwrap(),
        54.0 / (decode_ms / 1e3),
        "decode tokens/s",
    );
    // The scheduler's host time (scripts/serving_trace.py: update_from_output 250 or 280 µs
    // and 50 µs after it, 20 µs, then schedule 180, 220 or 260 µs and 20 µs, 15 + 5 µs after
    // the sync): between 0.515 and 0.625 ms, with a spread.
    let gap = &decode["host_gap"];
    assert!(gap["min_ms"].as_f64().unwrap() >= 0.5, "{gap}");
    assert!(gap["max_ms"].as_f64().unwrap() <= 0.63, "{gap}");
    assert!(gap["sd_ms"].as_f64().unwrap() > 0.0, "{gap}");
    assert_eq!(gap["n"], 5, "the last iteration has no next one");
    // GPU busy: a decode iteration waits on the host more than a prefill one.
    assert!(prefill["gpu_busy_pct"].as_f64().unwrap() > 80.0);
    assert!(decode["gpu_busy_pct"].as_f64().unwrap() < 60.0);
    // The rules that assume training stay off.
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"host-only-time"), "{ids:?}");
}

#[test]
fn launch_bound_reads_the_decode_iterations_of_an_eager_capture() {
    let r = fixture("vllm-serving-eager.pt.trace.json");
    assert_eq!(kinds(&r).iter().filter(|k| *k == "decode").count(), 6);
    assert_eq!(of_kind(&r, "decode")["graph_replays_per_iteration"], 0.0);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "launch-bound-small-kernels")
        .expect("launch-bound");
    // Judged over the 6 decode iterations, held in each; its cost is per decode iteration.
    assert_eq!(f["gate"]["steady_steps"], 6, "{}", f["gate"]);
    assert_eq!(f["gate"]["held_steps"], 6);
    let decode_ms = of_kind(&r, "decode")["time"]["mean_ms"].as_f64().unwrap();
    close(
        f["impact_ms_per_step"].as_f64().unwrap()
            / (f["impact_pct_of_step"].as_f64().unwrap() / 100.0),
        decode_ms,
        "the step launch-bound's share is of",
    );
}

/// TGI's loop: `generate_token` frames (no annotation); the first iteration prefills 2 prompts
/// of 7 tokens, the next two decode them, told by `aten::embedding`'s token ids.
fn tgi_trace() -> String {
    let mut events = Vec::new();
    let host = |cat: &str, name: &str, span: (i64, i64), args: &str| {
        kineto::complete(cat, name, (200, 200), span, args)
    };
    for (k, tokens) in [7, 1, 1].into_iter().enumerate() {
        let t = 10_000 * k as i64;
        let c = k as u64 + 1;
        events.extend([
            host(
                "python_function",
                "/usr/src/server/text_generation_server/models/flash_causal_lm.py(1650): generate_token",
                (t, 5_000),
                "",
            ),
            host(
                "cpu_op",
                "aten::embedding",
                (t + 100, 50),
                &format!(r#""Input Dims": [[32000, 4096], [2, {tokens}]], "Input type": ["c10::BFloat16", "long int"]"#),
            ),
            host("cuda_runtime", "cudaLaunchKernel", (t + 110, 5), &format!(r#""correlation": {c}"#)),
            kineto::complete(
                "kernel",
                "indexSelectLargeIndex",
                (0, 7),
                (t + 120, 2_000),
                &format!(r#""correlation": {c}, "device": 0, "stream": 7"#),
            ),
        ]);
    }
    kineto::document(
        &[kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 80 << 30)],
        "",
        &events,
        "tgi",
    )
}

/// The timeline's step strip names a serving capture's iterations by kind, as the report's
/// serving table does, and a training trace's steps as steps.
#[test]
fn the_timeline_labels_iterations_by_kind() {
    let bytes = std::fs::read(common::repo().join("tests/fixtures/vllm-serving.pt.trace.json"))
        .expect("readable");
    let ingested = ingest_bytes(&bytes, IngestOptions::default()).expect("a trace");
    let analyzed = AnalyzedTrace::new(&ingested);
    let strip = analyzed.step_strip();
    assert_eq!(strip.heading, "iterations");
    let numbers: Vec<i64> = analyzed
        .analysis()
        .steps
        .steps
        .iter()
        .map(|s| s.number)
        .collect();
    let expected: Vec<String> = kinds(&report(&bytes))
        .iter()
        .zip(&numbers)
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    let labels: Vec<&str> = strip.marks.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, expected);
    assert!(labels[0].starts_with("prefill ") && labels[8].starts_with("decode "));

    // The bundled sample: a generated ResNet-50 training trace.
    let training =
        std::fs::read(common::repo().join("www/samples/resnet50-a100-dataloader.pt.trace.json.gz"))
            .expect("readable");
    let ingested = ingest_bytes(&training, IngestOptions::default()).expect("a trace");
    let strip = AnalyzedTrace::new(&ingested).step_strip();
    assert_eq!(strip.heading, "steps");
    assert!(!strip.marks.is_empty());
    assert!(strip
        .marks
        .iter()
        .all(|m| m.label.starts_with("step ") && m.end > m.start));
}

#[test]
fn a_tgi_loop_without_annotations_is_typed_by_its_token_ids() {
    let r = report(tgi_trace().as_bytes());
    assert_eq!(r["trace"]["step_source"], "serving_iterations");
    assert_eq!(kinds(&r), ["prefill", "decode", "decode"]);
    let iterations = r["serving"]["iterations"].as_array().unwrap();
    assert!(iterations.iter().all(|i| i["typed_by"] == "shapes"));
    let tokens: Vec<u64> = iterations
        .iter()
        .map(|i| i["tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(tokens, [14, 2, 2]);
    // 10 ms apart, host work of 5 ms each: 5 ms of host time between iterations.
    close(
        of_kind(&r, "decode")["host_gap"]["mean_ms"]
            .as_f64()
            .unwrap(),
        5.0,
        "gap",
    );
}

#[test]
fn every_real_serving_capture_is_split_and_typed() {
    let Some(dir) = common::shared_traces("real serving captures") else {
        return;
    };
    // Each holds one iteration of the model runner: (file, kind, requests, tokens, graph
    // replays), as its annotation and runtime calls say (python3 + json over the raw files).
    for (file, kind, requests, tokens, replays) in [
        (
            "tests__traces__b200__eager_trace.json.gz",
            "prefill",
            1,
            888,
            0,
        ),
        (
            "tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            "decode",
            32,
            32,
            1,
        ),
        (
            "tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
            "decode",
            32,
            32,
            1,
        ),
        (
            "tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
            "mixed",
            46,
            8192,
            25,
        ),
    ] {
        let path = dir.join("AMD-AGI__TraceLens").join(file);
        let r = report(&std::fs::read(&path).expect("readable"));
        assert_eq!(r["trace"]["step_source"], "serving_iterations", "{file}");
        assert_eq!(kinds(&r), [kind], "{file}");
        let i = &r["serving"]["iterations"][0];
        assert_eq!(i["typed_by"], "annotation", "{file}");
        assert_eq!(i["requests"], requests, "{file}");
        assert_eq!(i["tokens"], tokens, "{file}");
        assert_eq!(i["graph_replays"], replays, "{file}");
        assert_eq!(
            i["host_gap_ms"],
            Value::Null,
            "{file}: one iteration, no gap"
        );
        let k = of_kind(&r, kind);
        close(
            k["tokens_per_s"].as_f64().unwrap(),
            tokens as f64 / (i["ms"].as_f64().unwrap() / 1e3),
            file,
        );
    }
}

#[test]
fn a_link_carries_the_figures_per_kind() {
    use torchtraceap::share::{decode, encode, ShareOptions};
    let bytes = std::fs::read(common::repo().join("tests/fixtures/vllm-serving.pt.trace.json"))
        .expect("readable");
    let ingested = ingest_bytes(&bytes, IngestOptions::default()).expect("a trace");
    let analyzed = AnalyzedTrace::new(&ingested);
    let link = encode(&analyzed.shared(), &ShareOptions::default()).expect("a link");
    let read = decode(&link.fragment).expect("read back");
    let (sent, got) = (
        analyzed.report().serving.as_ref().expect("serving"),
        read.report.serving.as_ref().expect("carried"),
    );
    assert_eq!(got.kinds, sent.kinds);
    assert!(got.iterations.is_empty(), "not each iteration");
    assert_eq!(got.count(), 9);
    assert!(read
        .report
        .to_markdown("link")
        .contains("## Serving iterations\n\n9 iterations"));
}

#[test]
fn a_serving_report_counts_per_iteration() {
    let bytes =
        std::fs::read(common::repo().join("tests/fixtures/vllm-serving-eager.pt.trace.json"))
            .expect("readable");
    let ingested = ingest_bytes(&bytes, IngestOptions::default()).expect("a trace");
    let md = AnalyzedTrace::new(&ingested).report().to_markdown("eager");
    for said in [
        "steady-state iterations, mean",
        "| time recoverable per iteration |",
        "kernels per iteration",
        "ms per iteration between them",
        "- Estimated impact: ",
        "held in 6 of 6 steady iterations",
        "## Where an iteration's time goes",
    ] {
        assert!(md.contains(said), "{said:?} missing:\n{md}");
    }
    assert!(
        !md.contains(" per step"),
        "a step named in a serving report:\n{md}"
    );
    // A training capture keeps its steps.
    let sample =
        std::fs::read(common::repo().join("www/samples/resnet50-a100-dataloader.pt.trace.json.gz"));
    let ingested = ingest_bytes(
        &sample.expect("the bundled sample"),
        IngestOptions::default(),
    )
    .expect("a trace");
    let md = AnalyzedTrace::new(&ingested).report().to_markdown("sample");
    assert!(md.contains("| time recoverable per step |") && !md.contains("iteration"));
}

#[test]
fn the_llm_request_of_a_serving_capture_counts_per_iteration() {
    use torchtraceap::llm::answer::parse_answer;
    use torchtraceap::llm::check::check;
    use torchtraceap::llm::summary::SummaryOptions;
    let bytes =
        std::fs::read(common::repo().join("tests/fixtures/vllm-serving-eager.pt.trace.json"))
            .expect("readable");
    let ingested = ingest_bytes(&bytes, IngestOptions::default()).expect("a trace");
    let analyzed = AnalyzedTrace::new(&ingested);
    let summaries = analyzed.window_summaries(&SummaryOptions::default());
    let w = summaries
        .iter()
        .find(|w| w.key == "finding:launch-bound-small-kernels")
        .expect("the launch-bound finding's window");
    let sent = w.text();
    for said in [
        "9 steady-state iterations, mean iteration 2.950 ms",
        "Window: iteration 4, window 1 of 1 (slice), 0.000–1.597 ms into a 1.597 ms iteration",
        "about 0.69 ms per iteration (45.7% of the iteration)",
        "held in 6 of 6 steady iterations",
        "ms into the iteration (",
    ] {
        assert!(sent.contains(said), "{said:?} missing:\n{sent}");
    }
    assert!(w.title.ends_with("(iteration 4)"), "{}", w.title);
    // Only the rule's own words (its gate, its fix) still say "step".
    for line in sent.lines().filter(|l| l.contains("step")) {
        assert!(
            line.starts_with("Gate: ") || line.starts_with("The rule's fix: "),
            "{line}"
        );
    }
    // An answer that reads the figures as the request gives them misreads none; one that
    // takes the iteration's length for the time it loses misreads it.
    let answer = |explanation: &str| {
        parse_answer(&format!(
            r#"{{"anti_pattern": "launch-bound-small-kernels", "explanation": "{explanation}", "fix": "CUDA graphs", "confidence": 0.9}}"#
        ))
    };
    let read = check(
        &sent,
        &answer("The GPU idles 0.69 ms per iteration of the 1.597 ms iteration."),
        Some("launch-bound-small-kernels"),
    );
    assert_eq!((read.found(), read.misread().count()), (2, 0), "{read:?}");
    let misread = check(
        &sent,
        &answer("The decode loses 1.597 ms per iteration."),
        Some("launch-bound-small-kernels"),
    );
    assert_eq!(misread.misread().count(), 1, "{misread:?}");
}
