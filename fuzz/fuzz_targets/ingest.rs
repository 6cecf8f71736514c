//! Fuzzes the streaming ingester: any input must give `Ok` or `Err`, never a panic, a hang or
//! unbounded memory, however it is cut into chunks, plain or gzip-compressed.
//!
//! Input layout: `[control, payload...]`. The control byte chooses
//! - bit 7: `accept_other_chrome_traces`;
//! - bit 6: feed the payload whole, else in chunks of `(control & 0x3f) + 1` bytes (1..=64).
//!
//! Payloads up to `GZIP_MAX` bytes are also gzip-compressed and ingested again; when the payload
//! is not itself gzip, both readings must agree (the same error, or the same element, event and
//! skip counts): the framer sees the plain payload in small chunks and the decompressed one in a
//! single chunk, so this checks that chunking does not change the result. Set `TTAP_FUZZ_NO_DIFF=1` to skip that
//! comparison (the other checks still run).
#![no_main]

use std::io::Write;
use std::sync::OnceLock;

use flate2::{write::GzEncoder, Compression};
use libfuzzer_sys::fuzz_target;
use torchtraceap::ingest::{Ingest, IngestError, IngestOptions, Ingested};
use torchtraceap::model::NONE;

const GZIP_MAX: usize = 16 * 1024;

fn compare_plain_and_gzip() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TTAP_FUZZ_NO_DIFF").is_none())
}

fn ingest(bytes: &[u8], chunk: usize, options: IngestOptions) -> Result<Ingested, IngestError> {
    let mut ingest = Ingest::new(options);
    for c in bytes.chunks(chunk.max(1)) {
        ingest.feed(c)?;
    }
    ingest.finish()
}

fn check(result: &Result<Ingested, IngestError>) {
    let Ok(Ingested { trace, report }) = result else {
        return;
    };
    let ev = &trace.events;
    let n = ev.len();
    assert_eq!(report.events, n as u64, "report.events != trace.events.len()");
    for (name, len) in [
        ("dur", ev.dur.len()),
        ("name", ev.name.len()),
        ("cat", ev.cat.len()),
        ("kind", ev.kind.len()),
        ("track", ev.track.len()),
        ("detail", ev.detail.len()),
        ("parent", ev.parent.len()),
        ("depth", ev.depth.len()),
    ] {
        assert_eq!(len, n, "column {name} has {len} entries for {n} events");
    }
    for (i, &d) in ev.dur.iter().enumerate() {
        assert!(d >= 0, "event {i} has dur {d} < 0");
    }
    for (i, &p) in ev.parent.iter().enumerate() {
        assert!(
            p == NONE || (p as usize) < n,
            "event {i} has parent {p} out of range ({n} events)"
        );
    }
    for (t, track) in trace.tracks.iter().enumerate() {
        assert!(
            track.events.start <= track.events.end && track.events.end as usize <= n,
            "track {t} has events {:?} outside 0..{n}",
            track.events
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, payload)) = data.split_first() else {
        return;
    };
    let options = IngestOptions {
        accept_other_chrome_traces: control & 0x80 != 0,
    };
    let chunk = if control & 0x40 != 0 {
        payload.len()
    } else {
        (control & 0x3f) as usize + 1
    };

    let plain = ingest(payload, chunk, options);
    check(&plain);

    if payload.len() <= GZIP_MAX {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(payload).unwrap();
        let gz = enc.finish().unwrap();
        let zipped = ingest(&gz, chunk, options);
        check(&zipped);
        // Chunking never changes what is read, malformed events included.
        if compare_plain_and_gzip() && !payload.starts_with(&[0x1f, 0x8b]) {
            match (&plain, &zipped) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.report.elements, b.report.elements, "plain vs gzip: elements differ");
                    assert_eq!(a.report.events, b.report.events, "plain vs gzip: events differ");
                    assert_eq!(a.report.skipped, b.report.skipped, "plain vs gzip: skips differ");
                }
                (Err(a), Err(b)) => assert_eq!(
                    std::mem::discriminant(a),
                    std::mem::discriminant(b),
                    "plain vs gzip: {a} / {b}"
                ),
                (a, b) => panic!(
                    "plain vs gzip disagree: plain {:?}, gzip {:?}",
                    a.as_ref().map(|r| r.report.events),
                    b.as_ref().map(|r| r.report.events)
                ),
            }
        }
    }
});
