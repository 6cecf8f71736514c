//! One real input past the ingester's size estimate, for the tests that need one (included by
//! path: not every test crate that shares `common` uses it).

use std::path::Path;

/// The JSON of the largest real Kineto trace (HTA's control trace, 33 MB) with its events twice
/// over: 67 MB, past the 32 MiB of JSON after which the ingester estimates the model's size.
pub fn largest_real_twice(dir: &Path) -> Vec<u8> {
    let path = dir.join(
        "facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__control__control.json.gz",
    );
    let gz = std::fs::read(path).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_reader(flate2::read::MultiGzDecoder::new(&gz[..])).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    events.extend(events.clone());
    let json = serde_json::to_vec(&doc).unwrap();
    assert!(json.len() > 48 << 20, "{} bytes", json.len());
    json
}
