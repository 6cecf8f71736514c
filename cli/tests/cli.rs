//! The `ttap` binary: what it prints and how it exits, on traces written here and on bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use torchtraceap::detect::{DETECTORS, OBSERVERS};

fn ttap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ttap"))
        .args(args)
        .output()
        .expect("ttap runs")
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ttap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

/// A small two-step trace with one GPU stream: three 500 µs kernels 1 ms apart per step.
fn two_steps() -> String {
    steps_of(3, 500, 1_000)
}

/// Two 9 ms steps, 10 ms apart, each with `kernels` GEMMs of `kernel_us` on stream 7 of
/// device 0, launched every `every_us` from 100 µs into the step, each starting 20 µs after its
/// launch.
fn steps_of(kernels: i64, kernel_us: i64, every_us: i64) -> String {
    let mut events = Vec::new();
    for step in 0..2 {
        let t0 = 1_000 + step * 10_000;
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": {t0}, "dur": 9000}}"#
        ));
        for k in 0..kernels {
            let ts = t0 + 100 + k * every_us;
            let corr = step * 1_000 + k;
            events.push(format!(
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 10, "args": {{"correlation": {corr}}}}}"#
            ));
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_f16f16", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"correlation": {corr}, "device": 0, "stream": 7}}}}"#,
                ts + 20,
                kernel_us
            ));
        }
    }
    format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8, "computeMinor": 0, "numSms": 108}}],
            "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 2}}, "traceEvents": [{}]}}"#,
        events.join(",\n")
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn inspect_prints_what_the_trace_holds() {
    let path = temp_file("two_steps.pt.trace.json", two_steps().as_bytes());
    let out = ttap(&["inspect", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "NVIDIA A100-SXM4-80GB, 80 GiB, sm 8.0, 108 SMs",
        "rank        0 of 2 (nccl)",
        "2 ProfilerStep ranges, mean 9.000 ms: #0 9.000 ms, #1 9.000 ms",
        "gpu_kernel 6",
        "6 of 6 GPU events linked to their launch",
        "busy 3.000 ms",
        "sm80_xmma_gemm_f16f16",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn inspect_json_is_machine_readable_and_covers_every_file() {
    let plain = temp_file("a.json", two_steps().as_bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(two_steps().as_bytes()).unwrap();
    let packed = temp_file("b.json.gz", &gz.finish().unwrap());
    let out = ttap(&[
        "inspect",
        "--json",
        plain.to_str().unwrap(),
        packed.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = v.as_array().unwrap();
    assert_eq!(files.len(), 2);
    for f in files {
        let s = &f["summary"];
        assert_eq!(s["steps"]["count"], 2);
        assert_eq!(s["events_by_kind"]["gpu_kernel"], 6);
        assert_eq!(s["gpu_busy"][0]["busy_ms"], 3.0);
    }
    assert_eq!(files[1]["summary"]["format"]["gzip"], true);
}

/// `TTAP_THREADS` (unset, one, two or three threads) changes how a trace is read, never what
/// is read, for plain and gzip input alike.
#[test]
fn the_reading_threads_change_nothing_but_the_time() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../www/samples/resnet50-a100-dataloader.pt.trace.json.gz"
    );
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(sample).unwrap()),
        &mut plain,
    )
    .unwrap();
    let plain = temp_file("sample.json", &plain);
    for file in [sample, plain.to_str().unwrap()] {
        let inspect = |threads: Option<&str>| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_ttap"));
            command.args(["inspect", "--json", file]);
            match threads {
                Some(n) => command.env("TTAP_THREADS", n),
                None => command.env_remove("TTAP_THREADS"),
            };
            let out = command.output().expect("ttap runs");
            assert!(out.status.success(), "{}", stderr(&out));
            stdout(&out)
        };
        let unset = inspect(None);
        assert!(unset.contains("\"gpu_kernel\""), "{unset}");
        for n in ["1", "2", "3"] {
            // Not assert_eq: the reports are long; the file and thread count say enough.
            assert!(
                inspect(Some(n)) == unset,
                "{file}: TTAP_THREADS={n} reads otherwise than unset"
            );
        }
    }
}

/// A command that fails says so once, after `error: `, naming what failed and where (here the
/// labels file that holds no labels), and exits 2 without writing its output.
#[test]
fn a_failing_command_names_the_file_it_could_not_use() {
    let bad = temp_file("not-labels.json", b"{\"a\": 1}");
    let table = bad.with_file_name("never-written.md");
    let out = ttap(&[
        "eval-rules",
        "--labels",
        bad.to_str().unwrap(),
        "--out",
        table.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).lines().collect::<Vec<_>>(),
        [format!(
            "error: {}: not a real-trace label file: missing field `format` at line 1 column 8",
            bad.display()
        )]
    );
    assert!(!table.exists());
}

#[test]
fn unusable_input_exits_2_with_a_message_naming_the_file() {
    let bad = temp_file(
        "resource_fork.json",
        b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ",
    );
    let good = temp_file("good.json", two_steps().as_bytes());
    let out = ttap(&["inspect", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("resource_fork.json") && err.contains("AppleDouble"),
        "{err}"
    );
    assert!(
        stdout(&out).contains("good.json"),
        "the good file is still reported"
    );

    let missing = Path::new("/nonexistent/trace.json");
    let out = ttap(&["inspect", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("could not read the input"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_truncated_trace_is_shown_with_a_warning() {
    let text = two_steps();
    let cut = &text.as_bytes()[..text.len() * 2 / 3];
    let path = temp_file("cut.json", cut);
    let out = ttap(&["inspect", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("TRUNCATED") && text.contains("cut off"),
        "{text}"
    );
}

#[test]
fn analyze_reports_findings_in_markdown_and_json_and_gates_ci() {
    // Two 9 ms steps of 12 kernels of 125 µs, 250 µs apart (host-only-time needs at least 10
    // per step): the last ends 100 + 11 × 250 + 20 + 125 = 2 995 µs into the step, and the host
    // runs alone for the rest.
    let path = temp_file("analyze.json", steps_of(12, 125, 250).as_bytes());
    let md = ttap(&["analyze", path.to_str().unwrap()]);
    assert!(md.status.success(), "{}", stderr(&md));
    let text = stdout(&md);
    assert!(text.starts_with("# TorchTraceAP report"), "{text}");
    assert!(text.contains("`host-only-time`"), "{text}");
    assert!(
        text.contains("Estimated impact:") && text.contains("```python"),
        "{text}"
    );

    let json = ttap(&["analyze", "--format", "json", path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let report = &v[0]["report"];
    assert_eq!(report["format"], "torchtraceap.report");
    assert_eq!(report["version"], 3);
    assert_eq!(report["steps"].as_array().unwrap().len(), 2);
    // Per stream: twelve 125 µs kernels on stream 7 of device 0, in a 9 ms step.
    let stream = &report["steps"][1]["streams"][0];
    assert_eq!(
        (stream["device"].as_i64(), stream["stream"].as_i64()),
        (Some(0), Some(7))
    );
    assert_eq!(stream["compute_ms"], 1.5);
    assert_eq!(stream["idle_ms"], 7.5);
    let first = &report["findings"][0];
    assert_eq!(first["id"], "host-only-time");
    // GPU idle before the first kernel (120 µs) and after the last (9 000 - 2 995 = 6 005 µs):
    // 6.125 ms of the 9 ms step.
    let impact = first["impact_ms_per_step"].as_f64().unwrap();
    assert!((impact - 6.125).abs() < 1e-6, "{first}");
    assert_eq!(first["severity"], "high", "{first}");
    // The gate held in both steady steps at 68% of the step (25% needed: margin 2.7).
    let gate = &first["gate"];
    assert_eq!(
        (gate["held_steps"].as_u64(), gate["steady_steps"].as_u64()),
        (Some(2), Some(2)),
        "{gate}"
    );
    assert_eq!(gate["threshold"], 25.0);
    assert_eq!(first["confidence"], 1.0);
    let worst = first["worst_steps"].as_array().unwrap();
    assert_eq!(worst.len(), 2, "{first}");
    assert!(worst.iter().all(|w| w["ms"] == 6.125), "{first}");
    // The step split: its parts sum to the 9 ms step; 11 gaps of 125 µs wait on launches.
    let split = report["split"].as_array().unwrap();
    let part = |id: &str| {
        split
            .iter()
            .find(|p| p["part"] == id)
            .unwrap_or_else(|| panic!("no {id} in {split:?}"))["ms"]
            .as_f64()
            .unwrap()
    };
    let sum: f64 = split.iter().map(|p| p["ms"].as_f64().unwrap()).sum();
    assert!((sum - 9.0).abs() < 1e-9, "{split:?}");
    assert_eq!(
        (
            part("busy_matmul_conv"),
            part("idle_host_only"),
            part("idle_launch")
        ),
        (1.5, 6.125, 1.375)
    );
    assert_eq!(report["notes"], serde_json::json!([]));

    let gated = ttap(&["analyze", "--fail-on", "low", path.to_str().unwrap()]);
    assert_eq!(
        gated.status.code(),
        Some(1),
        "a finding at or above the gate fails the run"
    );
    let bad = temp_file("not_a_trace.json", b"{\"hello\": 1}");
    assert_eq!(
        ttap(&["analyze", bad.to_str().unwrap()]).status.code(),
        Some(2)
    );
}

#[test]
fn analyze_lists_every_detector_with_its_threshold() {
    let out = ttap(&["analyze", "--list"]);
    assert!(out.status.success());
    let text = stdout(&out);
    // Detectors with their gates, then the observers under Notes, with when they speak.
    let (detectors, notes) = text
        .split_once("\nNotes")
        .unwrap_or_else(|| panic!("no Notes section in:\n{text}"));
    for d in DETECTORS {
        assert!(
            detectors.contains(d.id()),
            "{} missing from:\n{text}",
            d.id()
        );
        assert!(detectors.contains(&d.threshold()), "{}: no gate", d.id());
    }
    for o in OBSERVERS.iter().map(|o| o.about()) {
        assert!(
            notes.contains(o.id),
            "{} missing from the notes:\n{text}",
            o.id
        );
        assert!(!detectors.contains(o.id), "{} listed as a detector", o.id);
    }
    assert_eq!(
        detectors.matches("gate: ").count(),
        DETECTORS.len(),
        "{text}"
    );
    assert_eq!(notes.matches("when: ").count(), OBSERVERS.len(), "{text}");
    assert!(notes.contains("ddp-without-nccl"), "{text}");
}

#[test]
fn synth_writes_a_trace_and_labels_that_features_joins() {
    let dir = std::env::temp_dir().join(format!("ttap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trace, labels) = (dir.join("synth.json"), dir.join("synth.labels.json"));
    let out = ttap(&[
        "synth",
        "--model",
        "vit_b16",
        "--gpu",
        "h100",
        "--steps",
        "4",
        "--batch",
        "16",
        "--inject",
        "host-device-sync@2:0.7",
        "--out",
        trace.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = ttap(&[
        "features",
        trace.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ]);
    assert!(rows.status.success(), "{}", stderr(&rows));
    let labelled: Vec<(i64, String)> = stdout(&rows)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["label"] != "none")
        .map(|r| {
            (
                r["step"].as_i64().unwrap(),
                r["phase"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(labelled, vec![(12, "forward".to_string())]);

    let bad = ttap(&[
        "synth",
        "--out",
        trace.to_str().unwrap(),
        "--inject",
        "dataloader-bottleneck@9",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("past the last step"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn synth_with_ranks_writes_one_trace_and_labels_file_per_rank() {
    let dir = std::env::temp_dir().join(format!("ttap-cli-ranks-{}", std::process::id()));
    let out = ttap(&[
        "synth",
        "--ranks",
        "2",
        "--steps",
        "3",
        "--batch",
        "8",
        "--inject",
        "dataloader-bottleneck@2:0.5@rank1",
        "--out",
        dir.to_str().unwrap(),
        "--labels",
        dir.join("labels-{rank}.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (rank, labelled) in [(0, false), (1, true)] {
        let trace = dir.join(format!("rank-{rank}.pt.trace.json"));
        let shown = ttap(&["inspect", trace.to_str().unwrap()]);
        assert!(
            stdout(&shown).contains(&format!("{rank} of 2 (nccl)")),
            "{}",
            stdout(&shown)
        );
        let labels = std::fs::read_to_string(dir.join(format!("labels-{rank}.json"))).unwrap();
        assert_eq!(
            labels.contains("dataloader-bottleneck"),
            labelled,
            "{labels}"
        );
    }
    for (args, says) in [
        (
            &["--ranks", "2", "--inject", "dataloader-bottleneck@1@rank2"][..],
            "past the last rank",
        ),
        (
            &["--inject", "dataloader-bottleneck@1@rank0"][..],
            "needs --ranks",
        ),
    ] {
        let bad = ttap(&[&["synth", "--out", dir.to_str().unwrap()][..], args].concat());
        assert_eq!(bad.status.code(), Some(2));
        assert!(stderr(&bad).contains(says), "{}", stderr(&bad));
    }
}

#[test]
fn train_writes_a_model_that_eval_reads_and_reports_on() {
    let dir = std::env::temp_dir().join(format!("ttap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (model, training, evaluation, base_set) = (
        dir.join("model.json"),
        dir.join("TRAINING.md"),
        dir.join("EVALUATION.md"),
        dir.join("base-set.bin.gz"),
    );
    let out = ttap(&[
        "train",
        "--traces",
        "10",
        "--trees",
        "3",
        "--out",
        model.to_str().unwrap(),
        "--report",
        training.to_str().unwrap(),
        "--base-set",
        base_set.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(&training).unwrap();
    assert!(report.contains("10 generated traces"), "{report}");
    // The base set for retraining in the browser: every anomalous window of the ten scenarios.
    let base =
        torchtraceap::ml::base_set::BaseSet::decode(&std::fs::read(&base_set).unwrap()).unwrap();
    assert!(base.labels.iter().any(Option::is_some) && base.labels.iter().any(Option::is_none));
    let out = ttap(&[
        "eval",
        "--model",
        model.to_str().unwrap(),
        "--traces",
        "4",
        "--kmeans-traces",
        "10",
        "--clusters",
        "3",
        "--real",
        dir.join("no-traces-here").to_str().unwrap(),
        "--out",
        evaluation.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(&evaluation).unwrap();
    for line in [
        "| random forest (this model) |",
        "| rule detectors (finding confidence as score) |",
        "| k-means (distance to the nearest centroid) |",
        "Scoring 10000 windows",
        "SKIPPED: no trace under",
    ] {
        assert!(report.contains(line), "{line} missing from:\n{report}");
    }
    // A model file that is not one is refused with the file's name.
    let out = ttap(&["eval", "--model", training.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("TRAINING.md: not a window-forest model"));
}

#[test]
fn labels_exported_by_the_web_app_are_read_by_features_and_scored_by_eval() {
    let dir = temp_file("labels-x", b"").parent().unwrap().to_path_buf();
    let trace = dir.join("labelled.pt.trace.json");
    let out = ttap(&[
        "synth",
        "--out",
        trace.to_str().unwrap(),
        "--inject",
        "dataloader-bottleneck@3:0.8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ingested = torchtraceap::ingest::ingest_bytes(
        &std::fs::read(&trace).unwrap(),
        torchtraceap::ingest::IngestOptions::default(),
    )
    .unwrap();
    let fp = torchtraceap::share::fingerprint(&ingested.trace);
    // What the web app's Export labels writes: the generator's entries with the window's index
    // in its step, the trace's name and fingerprint.
    let label = |step: i64, phase: &str, window: usize, pattern: &str| {
        torchtraceap::ml::labels::WindowLabel {
            step,
            phase: phase.into(),
            pattern: pattern.into(),
            window: Some(window),
            trace: Some("labelled.pt.trace.json".into()),
            fingerprint: Some(fp.clone()),
        }
    };
    let labels = vec![
        label(13, "data loading", 0, "dataloader-bottleneck"),
        label(14, "forward", 1, "none"),
    ];
    let file = temp_file(
        "web.labels.json",
        torchtraceap::ml::labels::to_json(&labels).as_bytes(),
    );
    let out = ttap(&[
        "eval",
        "--labels",
        file.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("2 labels from"), "{text}");
    assert!(
        text.contains("| 13 | data loading | 1 | `dataloader-bottleneck` |"),
        "{text}"
    );
    assert!(text.contains("| 14 | forward | 2 | `none` |"), "{text}");
    assert!(
        text.contains("The model agrees with 2 of 2 labelled windows"),
        "{text}"
    );
    assert!(
        text.contains("AUROC of the probability, anti-pattern against \"none\": 1.000"),
        "{text}"
    );

    let out = ttap(&[
        "features",
        trace.to_str().unwrap(),
        "--labels",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let labelled: Vec<(i64, &str)> = rows
        .iter()
        .filter(|r| r["label"] != "none")
        .map(|r| (r["step"].as_i64().unwrap(), r["label"].as_str().unwrap()))
        .collect();
    assert_eq!(labelled, [(13, "dataloader-bottleneck")]);

    // Another trace: the labels are not for it.
    let other = dir.join("other.pt.trace.json");
    let out = ttap(&["synth", "--seed", "2", "--out", other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        vec![
            "eval",
            "--labels",
            file.to_str().unwrap(),
            "--trace",
            other.to_str().unwrap(),
        ],
        vec![
            "features",
            other.to_str().unwrap(),
            "--labels",
            file.to_str().unwrap(),
        ],
    ] {
        let out = ttap(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("none of the 2 labels in"),
            "{}",
            stderr(&out)
        );
    }
    // A label naming a window the trace does not have.
    let stray = temp_file(
        "stray.labels.json",
        torchtraceap::ml::labels::to_json(&[label(99, "forward", 0, "none")]).as_bytes(),
    );
    let out = ttap(&[
        "eval",
        "--labels",
        stray.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("label 0 of")
            && stderr(&out).contains("(step 99 forward of labelled.pt.trace.json) names no window"),
        "{}",
        stderr(&out)
    );
    // --labels without a trace, and with the scenario options, is refused by the parser.
    let out = ttap(&["eval", "--labels", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = ttap(&[
        "eval",
        "--labels",
        file.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--traces",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn export_writes_a_perfetto_trace_that_reads_back_and_says_what_a_range_cuts() {
    let trace = temp_file("export.json", two_steps().as_bytes());
    let out = trace.with_extension("perfetto.json");
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    let export = |steps: &[&str]| ttap(&[&["export", "--perfetto", t, "-o", o], steps].concat());
    let done = export(&[]);
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(stderr(&done).contains("14 events"), "{}", stderr(&done));
    let analyzed = |p: &str| stdout(&ttap(&["analyze", "--format", "json", p]));
    let (before, after): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&analyzed(t)).unwrap(),
        serde_json::from_str(&analyzed(o)).unwrap(),
    );
    assert_eq!(before[0]["fingerprint"], after[0]["fingerprint"]);
    assert_eq!(before[0]["report"]["steps"], after[0]["report"]["steps"]);

    let cut = export(&["--steps", "1..1"]);
    assert!(cut.status.success(), "{}", stderr(&cut));
    let said = stderr(&cut);
    assert!(
        said.contains("cut: steps 1..1 of 0..1: 7 of 14 events"),
        "{said}"
    );

    let wrong = export(&["--steps", "4..5"]);
    assert_eq!(wrong.status.code(), Some(2));
    let said = stderr(&wrong);
    assert!(
        said.contains("no step numbered 4 in this trace (its steps are 0..1)"),
        "{said}"
    );
    assert!(!out.exists(), "no half-written file is left");
}
