//! Fuzzes comparison and run links (`torchtraceap::view_link::decode`, `ttapc1.` and `ttapr1.`):
//! any input must give `Ok` or `Err`, never a panic, a hang or unbounded memory; what decodes
//! must show (the comparison or run view recomputed from it) without a panic, and share again to
//! the same view.
//!
//! Input layout: `[control, payload...]`; `control % 4` chooses what is decoded, and bit 2 of
//! `control` the kind (`ttapc1.` when clear, `ttapr1.` when set) for 1..=3:
//! - 0: the payload as text (a whole link or a fragment);
//! - 1: the prefix and the payload as text (arbitrary base64 characters);
//! - 2: the prefix and base64url(zlib(payload)): the payload is the facts JSON, so that mutations
//!   reach the shape, bounds and catalogue checks behind a valid prefix, base64 and checksum;
//! - 3: the prefix and base64url(payload): arbitrary compressed data.
//!
//! Invariant (what the encoders guarantee): a run link shared again without a budget decodes to
//! the very same view; a comparison link shared again keeps only the names its tables show, so
//! its profiles may hold fewer names, but the comparison recomputed from it is the same.
#![no_main]

mod links;

use libfuzzer_sys::fuzz_target;
use torchtraceap::share::ShareOptions;
use torchtraceap::view_link::{self, View};

fuzz_target!(|data: &[u8]| {
    let Some((&control, payload)) = data.split_first() else {
        return;
    };
    let prefix = if control & 4 == 0 {
        "ttapc1."
    } else {
        "ttapr1."
    };
    let link = links::link(control, prefix, payload);
    let Ok(shared) = view_link::decode(&link) else {
        return;
    };
    let no_budget = ShareOptions {
        max_bytes: usize::MAX,
    };
    match &shared.view {
        View::Run(profiles) => {
            let view = shared.run().expect("a run link shows a run");
            assert!(view.ranks.len() == profiles.len());
            let again = view_link::encode_run(profiles, &no_budget).expect("shared again");
            assert!(
                again.kept == shared,
                "shared again, the run decodes differently"
            );
        }
        View::Comparison { before, after } => {
            let comparison = shared
                .comparison()
                .expect("a link comparison shows a comparison");
            let again =
                view_link::encode_comparison(before, after, &no_budget).expect("shared again");
            assert!(again.kept.rows_left_out == 0, "no budget, no row left out");
            assert!(
                again.kept.comparison() == Some(comparison),
                "shared again, the comparison differs"
            );
        }
    }
});
