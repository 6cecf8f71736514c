//! The `ttap` binary: what it prints and how it exits, on traces written here and on bad input.

mod synth;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use torchtraceap::internals::detect::{DETECTORS, OBSERVERS};

fn ttap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ttap"))
        .args(args)
        .output()
        .expect("ttap runs")
}

fn temp_file(dir: impl AsRef<Path>, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.as_ref().join(name);
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
    let scratch = tempfile::tempdir().unwrap();
    let path = temp_file(&scratch, "two_steps.pt.trace.json", two_steps().as_bytes());
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
    let scratch = tempfile::tempdir().unwrap();
    let plain = temp_file(&scratch, "a.json", two_steps().as_bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(two_steps().as_bytes()).unwrap();
    let packed = temp_file(&scratch, "b.json.gz", &gz.finish().unwrap());
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
    let scratch = tempfile::tempdir().unwrap();
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
    let plain = temp_file(&scratch, "sample.json", &plain);
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

#[test]
fn unusable_input_exits_2_with_a_message_naming_the_file() {
    let scratch = tempfile::tempdir().unwrap();
    let bad = temp_file(
        &scratch,
        "resource_fork.json",
        b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ",
    );
    let good = temp_file(&scratch, "good.json", two_steps().as_bytes());
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
    let scratch = tempfile::tempdir().unwrap();
    let text = two_steps();
    let cut = &text.as_bytes()[..text.len() * 2 / 3];
    let path = temp_file(&scratch, "cut.json", cut);
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
    let scratch = tempfile::tempdir().unwrap();
    // Two 9 ms steps of 12 kernels of 125 µs, 250 µs apart (host-only-time needs at least 10
    // per step): the last ends 100 + 11 × 250 + 20 + 125 = 2 995 µs into the step, and the host
    // runs alone for the rest.
    let path = temp_file(&scratch, "analyze.json", steps_of(12, 125, 250).as_bytes());
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
    let bad = temp_file(&scratch, "not_a_trace.json", b"{\"hello\": 1}");
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
fn export_writes_a_perfetto_trace_that_reads_back_and_says_what_a_range_cuts() {
    let scratch = tempfile::tempdir().unwrap();
    let trace = temp_file(&scratch, "export.json", two_steps().as_bytes());
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

#[test]
fn a_serving_capture_is_shown_as_its_iterations_by_kind() {
    // The generated vLLM capture (scripts/serving_trace.py): 2 prefill, 6 decode, 1 mixed.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/vllm-serving.pt.trace.json")
        .to_string_lossy()
        .into_owned();
    let inspected = stdout(&ttap(&["inspect", &fixture]));
    assert!(
        inspected.contains("steps       9 serving iterations (no ProfilerStep#"),
        "{inspected}"
    );
    let md = stdout(&ttap(&["analyze", &fixture]));
    let table = md
        .split_once("## Serving iterations\n\n9 iterations of the engine's model runner")
        .unwrap_or_else(|| panic!("no serving section in:\n{md}"))
        .1;
    // The table's rows: after its header and rule, up to the blank line.
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("|---"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            let cells: Vec<&str> = r.split(" | ").collect();
            (cells[0].trim_start_matches("| "), cells[1])
        })
        .collect();
    assert_eq!(
        kinds,
        [("prefill", "2"), ("decode", "6"), ("mixed", "1")],
        "{md}"
    );
    // The decode row: time ± sd (min–max), 1 graph replay per iteration.
    assert!(
        rows[1].contains(" ms (") && rows[1].contains("| 1.0 |"),
        "{}",
        rows[1]
    );
    // The detectors list says which rules serving captures leave off or read in decode.
    let list = stdout(&ttap(&["analyze", "--list"]));
    assert!(list.contains("; off for serving captures"), "{list}");
    assert!(
        list.contains("; on serving captures, their decode iterations"),
        "{list}"
    );
}

/// `tests/fixtures/graph-warm-up.pt.trace.json`: a warm-up recorded with its operators
/// (`Block_0` runs `aten::mm`, fp16 4096², then `aten::add`, one launch each);
/// `graph-replay.pt.trace.json`: one `cudaGraphLaunch` replaying the same two kernels.
#[test]
fn a_capture_trace_given_beside_a_replay_attributes_its_kernels() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/");
    let warm_up = format!("{fixture}graph-warm-up.pt.trace.json");
    let replay = format!("{fixture}graph-replay.pt.trace.json");
    let (warm_up, replay) = (warm_up.as_str(), replay.as_str());
    let text = |o: Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let alone = text(ttap(&["analyze", replay]));
    assert!(alone.contains("none tied to the operator"), "{alone}");
    let md = text(ttap(&["analyze", "--capture", warm_up, replay]));
    assert!(
        md.contains("2 of them (2.00 ms) tied by kernel order and name"),
        "{md}"
    );
    assert!(
        md.contains("warm-up.pt.trace.json), 0.00 ms unattributed"),
        "{md}"
    );
    // The module tree: nothing without the capture, both kernels under Block_0 with it.
    let o = ttap(&["modules", replay]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Block_0"));
    let tree = text(ttap(&["modules", "--capture", warm_up, replay]));
    let block = tree
        .lines()
        .find(|l| l.ends_with("Block_0"))
        .unwrap_or_else(|| panic!("{tree}"));
    assert!(block.trim_start().starts_with("2.000"), "{block}");
    // One replay trace per capture.
    let o = ttap(&["analyze", "--capture", warm_up, replay, replay]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("give one trace file, not 2 files"), "{err}");
}

#[test]
fn an_early_look_reports_the_first_steps_of_a_large_trace_or_says_why_it_cannot() {
    use synth::{at, config, synth};
    use torchtraceap_dev::synth::AntiPattern;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let big = dir.join("big.pt.trace.json");
    let stalls = (0..160)
        .map(|s| at(AntiPattern::DataLoader, s, 0.6))
        .collect();
    synth(&big, &config(160, 3, stalls), None);
    let big = big.to_str().unwrap();
    let o = ttap(&["analyze", "--early", big]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.starts_with(&format!("Early look at {big}: "))
            && said.contains(" whole steps (10–")
            && said
                .trim_end()
                .ends_with("the whole file's report can differ."),
        "{said}"
    );
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("(`dataloader-bottleneck`)"), "{md}");
    // A small trace: no early look, and what to run instead.
    let small = temp_file(&scratch, "small-early.json", two_steps().as_bytes());
    let o = ttap(&["analyze", "--early", small.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no early look: it needs a plain (not gzip) trace of 64 MiB or more")
            && err.contains("run `ttap analyze "),
        "{err}"
    );
}
