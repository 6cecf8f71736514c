//! No input may panic, hang or grow memory without bound: mutated traces (flipped, inserted,
//! deleted and truncated bytes, plain and gzip, fed in chunks of random sizes), and every input
//! the fuzzer ever crashed on (`fuzz/regressions/`).

use std::io::Write;
use std::path::Path;

use torchtraceap::ingest::{Ingest, IngestError, IngestOptions, Ingested};
use torchtraceap::model::NONE;

/// A deterministic xorshift generator: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Checks the model's invariants on whatever was read.
fn check(got: &Ingested) {
    let t = &got.trace;
    let n = t.events.len();
    assert_eq!(got.report.events, n as u64);
    for i in 0..n {
        assert!(t.events.dur[i] >= 0);
        let p = t.events.parent[i];
        assert!(p == NONE || (p as usize) < n);
    }
    for track in &t.tracks {
        assert!(track.events.start <= track.events.end && track.events.end as usize <= n);
    }
    for l in &t.launches {
        assert!((l.launch as usize) < n && (l.gpu as usize) < n);
    }
}

/// Ingests `bytes` in chunks of random sizes; checks the invariants of what was read.
fn ingest_in_chunks(
    bytes: &[u8],
    rng: &mut Rng,
    accept_other: bool,
) -> Result<Ingested, IngestError> {
    let mut ingest = Ingest::new(IngestOptions {
        accept_other_chrome_traces: accept_other,
    });
    let mut rest = bytes;
    while !rest.is_empty() {
        let most = if rng.below(4) == 0 { 8 } else { 4096 };
        let n = 1 + rng.below(most);
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        ingest.feed(chunk)?;
        rest = tail;
    }
    let got = ingest.finish();
    if let Ok(got) = &got {
        check(got);
    }
    got
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len());
        match rng.below(6) {
            0 => b[at] = rng.next() as u8,
            1 => {
                let c = b"{}[]\",:\\0123456789.-e"[rng.below(21)];
                b.insert(at, c);
            }
            2 => {
                b.remove(at);
            }
            3 => b.truncate(at),
            4 => {
                let len = rng.below(64).min(b.len() - at);
                let piece = b[at..at + len].to_vec();
                let to = rng.below(b.len());
                b.splice(to..to, piece);
            }
            _ => {
                let c = b"{}[]\",:"[rng.below(7)];
                b[at] = c;
            }
        }
    }
    b
}

const SEED: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 10.5, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 11, "dur": 20, "args": {"Input Dims": [[2, 3], [3, 4]], "External id": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 5, "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 9, "args": {"correlation": 8, "grid": [1, 2, 3], "device": 0, "stream": 7}},
  {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": "2", "ts": "30"},
  {"ph": "E", "pid": 1, "tid": "2", "ts": "31.25"},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 15, "args": {"Bytes": 64, "Total Allocated": 64}},
  {"ph": "s", "cat": "ac2g", "id": 8, "pid": 1, "tid": 1, "ts": 12},
  {"ph": "f", "cat": "ac2g", "id": 8, "pid": 0, "tid": 7, "ts": 20, "bp": "e"},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}
 ]}"#;

#[test]
fn mutated_traces_never_panic_and_read_the_same_in_any_chunks() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..4000 {
        let input = mutate(SEED.as_bytes(), &mut rng);
        same_in_any_chunks(&input, &mut rng, round % 2 == 0);
    }
}

/// Ingests `input` whole and in random chunks: the same events, elements and skips, or the same
/// kind of error.
fn same_in_any_chunks(input: &[u8], rng: &mut Rng, accept_other: bool) {
    let options = IngestOptions {
        accept_other_chrome_traces: accept_other,
    };
    let whole = torchtraceap::ingest::ingest_bytes(input, options);
    if let Ok(got) = &whole {
        check(got);
    }
    let chunked = ingest_in_chunks(input, rng, accept_other);
    let what = String::from_utf8_lossy(input);
    match (whole, chunked) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.report.elements, b.report.elements, "{what}");
            assert_eq!(a.report.skipped, b.report.skipped, "{what}");
            assert_eq!(a.trace.events.start, b.trace.events.start, "{what}");
        }
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "{what}"
        ),
        (a, b) => panic!(
            "whole {:?} vs chunked {:?}: {what}",
            a.map(|i| i.report.events),
            b.map(|i| i.report.events)
        ),
    }
}

#[test]
fn mutated_gzip_streams_never_panic() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(SEED.as_bytes()).unwrap();
    let packed = gz.finish().unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..2000 {
        let input = mutate(&packed, &mut rng);
        let _ = ingest_in_chunks(&input, &mut rng, false);
    }
}

#[test]
fn deep_nesting_and_huge_values_stay_bounded() {
    // An event whose args nest 200 000 deep, between two ordinary events: the reader neither
    // recurses nor gives up on the trace; the deep event is read or skipped and counted.
    let mut rng = Rng(7);
    let ok = |name: &str, ts: u32| {
        format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "ts": {ts}, "dur": 1}}"#)
    };
    let deep = format!(
        r#"{{"traceEvents": [{}, {{"ph": "X", "cat": "cpu_op", "name": "deep", "ts": 2, "dur": 1, "args": {{"x": {}{}}}}}, {}]}}"#,
        ok("before", 1),
        "[".repeat(200_000),
        "]".repeat(200_000),
        ok("after", 3)
    );
    let got = ingest_in_chunks(deep.as_bytes(), &mut rng, false)
        .expect("a trace with two ordinary events");
    let names: Vec<&str> = (0..got.trace.events.len())
        .map(|i| got.trace.strings.get(got.trace.events.name[i]))
        .collect();
    assert!(
        names.contains(&"before") && names.contains(&"after"),
        "{names:?}"
    );
    let skipped: u64 = got.report.skipped.values().sum();
    assert_eq!(
        names.len() as u64 + skipped,
        3,
        "the deep event read or counted: {:?}",
        got.report.skipped
    );
    // A string that never closes holds no event: refused with a message, not read forever.
    let unclosed = format!(r#"{{"traceEvents": [{{"name": "{}"#, "[{".repeat(100_000));
    let refused = ingest_in_chunks(unclosed.as_bytes(), &mut rng, false)
        .expect_err("no complete event")
        .to_string();
    assert!(refused.contains("holds no timed event"), "{refused}");
}

#[test]
fn many_malformed_events_in_one_chunk_cost_linear_time() {
    // 100 000 broken events on one line, with line breaks after it that start no object: each
    // one's resynchronisation search must not rescan the rest of the chunk.
    let mut text = String::from("{\"traceEvents\": [");
    for _ in 0..100_000 {
        text.push_str("{\"ph\" \"X\"}, ");
    }
    text.push_str(
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok\", \"ts\": 1, \"dur\": 1}\n]\n}\n",
    );
    // Quadratic work (tens of gigabytes scanned) would stall this test; linear work takes
    // milliseconds.
    let got =
        torchtraceap::ingest::ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap();
    assert_eq!(got.trace.events.len(), 1);
    assert_eq!(got.report.skipped.values().sum::<u64>(), 100_000);
}

/// Every input the fuzzer ever found failing (`fuzz/regressions`, part of the repository) reads
/// without a panic, and the same whole as in chunks (what the fuzz target checks).
#[test]
fn fuzzer_regressions_read_the_same_in_any_chunks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "only {} regressions in {}",
        files.len(),
        dir.display()
    );
    let mut rng = Rng(1);
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        for accept_other in [false, true] {
            same_in_any_chunks(&bytes, &mut rng, accept_other);
        }
    }
}
