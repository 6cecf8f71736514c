//! Where a finding points: the windows that hold its evidence, ranked by the time it claims in
//! each. The timeline's bands, "Show on timeline", the LLM request and the share link all read
//! these; the window detector's scores never choose them (its type and score are shown beside).
//!
//! A finding's evidence is its events (`Evidence::sources`: DataLoader ranges, `Optimizer.step`
//! ranges, sync calls, fp32 GEMMs, …) and the time it claimed in each step where its gate held
//! (`Finding::claimed`). Its windows are the windows of those steps that overlap one of its
//! evidence events; a finding whose evidence is no event (low utilization: the whole step) gets
//! the windows that hold the time it claimed (the step's idle stretches). Each is ranked by the
//! time the finding claims in it, then by how many of its events it holds, then in time order.

use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::attribution::intersect;
use crate::detect::Finding;
use crate::metrics::total;

/// Windows kept per finding, at most (the best first).
pub const MAX_FINDING_WINDOWS: usize = 64;

/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

/// A window that holds a finding's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingWindowEntry {
    /// The step's number.
    pub step: i64,
    /// The window's index in its step (as in `Report::windows`, window by window).
    pub window: usize,
    pub phase: String,
    /// Milliseconds from the trace's first event.
    pub start_ms: f64,
    pub duration_ms: f64,
    /// Time the finding claims inside the window.
    pub claimed_ms: f64,
    /// How many of the finding's evidence events overlap the window.
    pub evidence_events: u64,
}

/// The finding's evidence events, each once, in index order.
pub fn evidence_events(f: &Finding) -> Vec<usize> {
    let mut events: Vec<usize> = f
        .evidence
        .iter()
        .flat_map(|e| e.sources.iter().copied())
        .collect();
    events.sort_unstable();
    events.dedup();
    events
}

/// Whether event `i` overlaps `[start, end)` (an instant event counts as one nanosecond long).
pub fn overlaps(a: &Analysis<'_>, i: usize, (start, end): (i64, i64)) -> bool {
    let e = &a.trace.events;
    e.start[i] < end && e.start[i] + e.dur[i].max(1) > start
}

/// The windows of finding `f`, as `(step index, window index, entry)`, best first, at most
/// [`MAX_FINDING_WINDOWS`].
pub(crate) fn evidence_windows(
    a: &Analysis<'_>,
    f: &Finding,
) -> Vec<(usize, usize, FindingWindowEntry)> {
    let events = evidence_events(f);
    let origin = a.trace.meta.span.map_or(0, |s| s.0);
    let mut found: Vec<(usize, usize, FindingWindowEntry)> = Vec::new();
    for (step, claimed) in &f.claimed {
        let Some(s) = a.steps.steps.get(*step) else {
            continue;
        };
        for (k, w) in s.windows.iter().enumerate() {
            let range = (w.start, w.end);
            let claimed_ns = total(&intersect(claimed, &[range]));
            let held = events.iter().filter(|&&i| overlaps(a, i, range)).count() as u64;
            found.push((
                *step,
                k,
                FindingWindowEntry {
                    step: s.number,
                    window: k,
                    phase: w.phase.label().to_string(),
                    start_ms: (w.start - origin) as f64 / NS_PER_MS,
                    duration_ms: (w.end - w.start) as f64 / NS_PER_MS,
                    claimed_ms: claimed_ns as f64 / NS_PER_MS,
                    evidence_events: held,
                },
            ));
        }
    }
    // Windows that hold an evidence event; where none does (no events, or none in the steps
    // where the gate held), those that hold claimed time.
    let with_events = found.iter().any(|x| x.2.evidence_events > 0);
    found.retain(|x| {
        if with_events {
            x.2.evidence_events > 0
        } else {
            x.2.claimed_ms > 0.0
        }
    });
    found.sort_by(|x, y| {
        y.2.claimed_ms
            .total_cmp(&x.2.claimed_ms)
            .then(y.2.evidence_events.cmp(&x.2.evidence_events))
            .then((x.0, x.1).cmp(&(y.0, y.1)))
    });
    found.truncate(MAX_FINDING_WINDOWS);
    found
}
