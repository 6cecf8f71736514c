//! The model's memory per event on real traces (`../shared/traces`; skipped, saying so, where
//! absent), so that a 4 GB trace fits a browser tab (issue 19: peak memory ≤ 0.35× the JSON).
//!
//! The bound is on the parts that grow with the events: the columns (39 bytes per event by
//! construction: start and duration 8 each, name, category, track, detail and parent 4 each,
//! depth 2, kind 1), the details arena (at most 11.2 bytes per event on every real trace when
//! this was written; a struct per event took 30 to 60) and the launch links, each counted at
//! its allocated capacity. 60 bytes per event leaves room for denser details, and fails when
//! the details go back to a struct per event or a column keeps the slack of doubling (at least
//! 20 bytes per event on the columns).
//!
//! Columns sized ahead from the input's size (`Ingest::expect_input_bytes`, as the CLI and the
//! worker do) must give the same model, whatever the size said, serially and on two threads.

mod common;
#[path = "common/twice.rs"]
mod twice;

use torchtraceap::ingest::{ingest_bytes, Ingest, PARALLEL_BLOCK};
use torchtraceap::model::footprint::Part;

/// Bytes per event allowed for the parts that grow with the events.
const PER_EVENT: f64 = 60.0;
/// Traces with fewer events are left out: their strings and tracks, not their events, weigh.
const MIN_EVENTS: usize = 20_000;

fn read(path: &std::path::Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&raw[..]), &mut out)
            .unwrap();
        out
    } else {
        raw
    }
}

fn per_event(parts: &[Part]) -> f64 {
    parts
        .iter()
        .filter(|p| p.name.starts_with("events.") || p.name == "details" || p.name == "launches")
        .map(|p| p.allocated as f64)
        .sum()
}

#[test]
fn the_model_takes_at_most_60_bytes_per_event_on_real_traces() {
    let Some(dir) = common::shared_traces("footprint") else {
        return;
    };
    let mut measured = Vec::new();
    for path in common::trace_files(&dir) {
        let json = read(&path);
        let Ok(ingested) = ingest_bytes(&json, Default::default()) else {
            continue;
        };
        let t = &ingested.trace;
        if t.events.len() < MIN_EVENTS {
            continue;
        }
        let parts = t.footprint();
        let bytes = per_event(&parts) / t.events.len() as f64;
        let whole: usize = parts.iter().map(|p| p.allocated).sum();
        measured.push((bytes, path.display().to_string()));
        assert!(
            bytes <= PER_EVENT,
            "{}: {bytes:.1} bytes per event (bound {PER_EVENT}): {parts:#?}",
            path.display()
        );
        assert!(
            whole as f64 <= 0.35 * json.len() as f64,
            "{}: the model takes {whole} bytes for {} bytes of JSON",
            path.display(),
            json.len()
        );
    }
    assert!(
        measured.len() >= 5,
        "too few real traces with {MIN_EVENTS} events: {measured:?}"
    );
}

/// The model's `Debug` form and the report, for comparing two ingests.
fn digest(ingested: &torchtraceap::ingest::Ingested) -> String {
    format!(
        "{:?} {}",
        ingested.trace,
        serde_json::to_string(&ingested.report).unwrap()
    )
}

#[test]
fn columns_sized_from_the_input_size_give_the_same_model() {
    let Some(dir) = common::shared_traces("footprint") else {
        return;
    };
    let json = twice::largest_real_twice(&dir);
    let feed = |ingest: Ingest, expected: Option<u64>| {
        let mut ingest = ingest;
        if let Some(bytes) = expected {
            ingest.expect_input_bytes(bytes);
        }
        for chunk in json.chunks(4 << 20) {
            ingest.feed(chunk).unwrap();
        }
        digest(&ingest.finish().unwrap())
    };
    let serial = || Ingest::new(Default::default());
    let plain = feed(serial(), None);
    let n = json.len() as u64;
    for expected in [n, n / 4, 4 * n] {
        assert!(
            feed(serial(), Some(expected)) == plain,
            "expecting {expected} bytes of {n} changed the model"
        );
    }
    let parallel = Ingest::parallel(Default::default(), 2, PARALLEL_BLOCK);
    assert!(
        feed(parallel, Some(n)) == plain,
        "read on 2 threads, expecting {n} bytes, the model changed"
    );
}
