//! What the detector tests ask of observers: a note (never a finding), or silence.

use torchtraceap::internals::detect::{Detected, Note, OBSERVERS};

/// The observer `id` must note the run (and never as a finding): its note.
pub fn expect_note(found: Detected, id: &str) -> Note {
    assert!(
        OBSERVERS.iter().any(|o| o.about().id == id),
        "{id} is no observer"
    );
    assert!(
        found.findings.iter().all(|f| f.id != id),
        "{id} is a finding"
    );
    found
        .notes
        .into_iter()
        .find(|n| n.id == id)
        .unwrap_or_else(|| panic!("no {id} note"))
}

/// The observer `id` must have nothing to say about the run.
pub fn expect_no_note(found: &Detected, id: &str) {
    assert!(
        OBSERVERS.iter().any(|o| o.about().id == id),
        "{id} is no observer"
    );
    if let Some(n) = found.notes.iter().find(|n| n.id == id) {
        panic!("{id} must not note a healthy trace: {}", n.text);
    }
}
