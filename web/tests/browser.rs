//! The core in the browser: the worker's analysis, run by wasm in headless Chromium.

use torchtraceap::ingest::{Ingest, IngestOptions};
use torchtraceap_web::worker::{session::Kept, views};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// The site's bundled sample: ResNet-50 on an A100 with a DataLoader stall in steps 12-15.
const SAMPLE: &[u8] = include_bytes!("../../www/samples/resnet50-a100-dataloader.pt.trace.json.gz");

#[wasm_bindgen_test]
fn a_gzipped_trace_fed_in_slices_is_analyzed_in_the_browser() {
    let mut ingest = Ingest::new(IngestOptions::default());
    // Odd-sized slices, as the worker reads them from a File (but smaller).
    for slice in SAMPLE.chunks(65_521) {
        ingest.feed(slice).expect("the sample ingests");
    }
    let ingested = ingest.finish().expect("the sample is a Kineto trace");
    assert!(ingested.report.gzip);
    let kept = Kept::new(ingested);
    let a = views(&kept.analyzed, "sample.pt.trace.json.gz");
    let summary = a.summary.as_ref().expect("a trace has a summary");
    assert_eq!(summary.steps.count, 6);
    assert!(summary.devices[0].name.contains("A100"));
    let ids: Vec<&str> = a.report.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids.first(),
        Some(&"dataloader-bottleneck"),
        "findings: {ids:?}"
    );
    // The GPU waits for the host in exactly the injected steps.
    let stalled: Vec<i64> = a
        .report
        .steps
        .iter()
        .filter(|s| s.idle_host_wait_ms.unwrap_or(0.0) > 5.0)
        .map(|s| s.number)
        .collect();
    assert_eq!(stalled, [12, 13, 14, 15]);
    // The fingerprint a shared link matches its trace by is the one the native build computes
    // (`cli/tests/share.rs` checks the recorded one natively).
    let native = include_str!("../../tests/fixtures/sample.fingerprint").trim();
    assert_eq!(a.fingerprint.as_deref(), Some(native));
    // The window detector (the embedded forest) scores every window in wasm, and flags the
    // data-loading windows of the stalled steps.
    let windows = &a.report.windows;
    assert!(windows.iter().all(|w| w.anomaly_probability.is_some()));
    let loading: Vec<_> = windows
        .iter()
        .filter(|w| w.phase == "data loading")
        .collect();
    assert_eq!(loading.len(), 6, "one data-loading window per step");
    for w in loading {
        let p = w.anomaly_probability.unwrap();
        let injected = (12..=15).contains(&w.step);
        assert_eq!(p > 0.5, injected, "step {} data window: {p}", w.step);
        if injected {
            assert_eq!(w.predicted_type.as_deref(), Some("dataloader-bottleneck"));
        }
    }
}

/// The base set the site ships: generated windows, for retraining.
const BASE_SET: &[u8] = include_bytes!("../../www/models/base-set.bin.gz");

/// In the browser too, smartcore's own trees (the embedded model's, rebuilt) give the compact
/// walk's probabilities on every window of the base set, and the walk is the faster: the figure
/// for choosing the browser's scorer (printed; run with `--release` to measure).
#[wasm_bindgen_test]
fn smartcore_s_trees_vote_as_the_compact_walk_in_the_browser() {
    use torchtraceap::ml::base_set::BaseSet;
    use torchtraceap::ml::by_smartcore::{matrix, SmartcoreForest};
    use torchtraceap::ml::Model;

    let base = BaseSet::decode(BASE_SET).expect("the site's base set reads");
    let rows: Vec<&[f32]> = base.windows.iter().map(Vec::as_slice).collect();
    let model = Model::embedded();
    let performance = web_sys::window()
        .and_then(|w| w.performance())
        .expect("a page has performance");
    let (mut smartcore_ms, mut walk_ms) = (0.0, 0.0);
    for forest in [&model.anomaly, &model.kind] {
        let reference = SmartcoreForest::of(forest).expect("smartcore reads the trees");
        let (mut fastest_smartcore, mut fastest_walk) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let started = performance.now();
            let theirs = reference
                .shares(&matrix(&rows).expect("a matrix"))
                .expect("smartcore predicts");
            fastest_smartcore = fastest_smartcore.min(performance.now() - started);
            let started = performance.now();
            let ours: Vec<Vec<f32>> = rows.iter().map(|r| forest.shares(r)).collect();
            fastest_walk = fastest_walk.min(performance.now() - started);
            assert_eq!(ours, theirs);
        }
        smartcore_ms += fastest_smartcore;
        walk_ms += fastest_walk;
    }
    web_sys::console::log_1(
        &format!(
            "{} base-set windows, both forests: smartcore per tree with its matrix {smartcore_ms:.1} ms, \
             compact walk {walk_ms:.1} ms (fastest of 5 runs each): {:.1}x",
            rows.len(),
            smartcore_ms / walk_ms
        )
        .into(),
    );
}

/// A range's framed state crosses between workers intact (it finishes into the same trace) in
/// bincode and in `serde-wasm-bindgen`'s form, and bincode is the cheaper: the figure for
/// choosing the encoding of `ranges` (printed; run with `--release` to measure). The state is
/// the sample's (33k events) framed as one block.
#[wasm_bindgen_test]
fn a_range_state_crosses_in_bincode_and_as_a_js_value() {
    use std::io::Read;
    use torchtraceap::ingest::blocks::{self, Framed, Start};

    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(SAMPLE)
        .read_to_end(&mut plain)
        .expect("the sample inflates");
    let framed = || blocks::frame(Start::Document, 0, &plain);
    // Intact: a state that crossed finishes into the trace the one that left gives, all of it
    // (columns, strings, tracks, launch links, details, metadata: its whole `Debug` form).
    let finished = |state: Framed| {
        let mut ingest = Ingest::blocks(IngestOptions::default());
        assert!(ingest.merge(state), "a document's first block merges");
        let trace = ingest.finish().expect("the sample reads").trace;
        format!("{trace:?}")
    };
    let expected = finished(framed());
    let performance = web_sys::window()
        .and_then(|w| w.performance())
        .expect("a page has performance");
    let serializer =
        serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true);
    let (mut bincode_ms, mut js_ms, mut size) = (f64::MAX, f64::MAX, 0);
    for _ in 0..3 {
        let state = framed();
        let started = performance.now();
        let bytes = bincode::serialize(&state).expect("bincode writes it");
        let buffer = js_sys::Uint8Array::from(&bytes[..]);
        let back: Framed = bincode::deserialize(&buffer.to_vec()).expect("bincode reads it");
        bincode_ms = bincode_ms.min(performance.now() - started);
        size = bytes.len();
        assert!(
            finished(back) == expected,
            "bincode's copy finishes into another trace"
        );
        let started = performance.now();
        let value = serde::Serialize::serialize(&state, &serializer).expect("a JS value");
        let back: Framed = serde_wasm_bindgen::from_value(value).expect("read back");
        js_ms = js_ms.min(performance.now() - started);
        assert!(
            finished(back) == expected,
            "the JS value's copy finishes into another trace"
        );
    }
    web_sys::console::log_1(
        &format!(
            "a range state of {} events: bincode {size} B, written and read in {bincode_ms:.1} ms; \
             serde-wasm-bindgen {js_ms:.1} ms (fastest of 3 each): {:.1}x",
            framed().elements(),
            js_ms / bincode_ms
        )
        .into(),
    );
}
