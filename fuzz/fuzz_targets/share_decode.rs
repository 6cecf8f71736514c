//! Fuzzes share-link decoding (`torchtraceap::share::decode`): any input must give `Ok` or `Err`,
//! never a panic, a hang or unbounded memory; what decodes must be bounded and share again to
//! the same report.
//!
//! Input layout: `[control, payload...]`; `control % 4` chooses what is decoded:
//! - 0: the payload as text (a whole link or a fragment);
//! - 1: `ttap2.` and the payload as text (arbitrary base64 characters);
//! - 2: `ttap2.` and base64url(zlib(payload)): the payload is the JSON (format 2's facts, or
//!   format 1's whole report when its `version` is 1), so that mutations reach the limits,
//!   shape and catalogue checks behind a valid prefix, base64 and checksum;
//! - 3: `ttap2.` and base64url(payload): arbitrary compressed data.
//!
//! What decodes must also be safe to show: every finding's words are the catalogue's, for a
//! detector this version has.
#![no_main]

mod links;

use libfuzzer_sys::fuzz_target;
use torchtraceap::internals::detect;
use torchtraceap::share::{self, ShareError, ShareOptions, MAX_JSON_BYTES};

fuzz_target!(|data: &[u8]| {
    let Some((&control, payload)) = data.split_first() else {
        return;
    };
    let link = links::link(control, "ttap2.", payload);
    let Ok(shared) = share::decode(&link) else {
        return;
    };
    for f in &shared.report.findings {
        let d = detect::detector(&f.id).expect("only known detectors decode");
        assert!(f.title == d.title() && d.fixes().iter().any(|x| x.snippet == f.fix_snippet));
    }
    // Bounded: what decodes came from at most MAX_JSON_BYTES of JSON; written back compactly it
    // grows at most by number formatting (`1` in a float field is written `1.0`).
    let json = serde_json::to_vec(&shared).expect("a decoded report serializes");
    assert!(
        json.len() <= 4 * MAX_JSON_BYTES,
        "{} bytes of JSON",
        json.len()
    );
    // Shared again without a budget, it decodes to the very same report.
    let again = share::encode(
        &shared,
        &ShareOptions {
            max_bytes: usize::MAX,
        },
    )
    .expect("no budget, nothing to leave out");
    assert!(again.dropped() == shared.omitted.as_slice());
    match share::decode(&again.fragment) {
        Ok(back) => assert!(back == shared, "shared again, it decodes differently"),
        Err(ShareError::TooBig) => assert!(json.len() > MAX_JSON_BYTES),
        Err(e) => panic!("shared again, it does not decode: {e}"),
    }
});
