//! An early look at a large plain trace before it is read whole (`ingest::early`): the probes
//! and the plan's ranges read with `Blob.slice`, a slice at a time into the splice (so the worker's
//! memory never holds the ranges' bytes, only what they hold), the first whole steps analyzed
//! and their report posted (`FromWorker::Early`). Nothing of it is kept: the whole file's
//! analysis follows. A trace that has none (small, gzip, no whole steps within the budget, a
//! read that fails) is simply read whole, as before.

use torchtraceap::ingest::early;
use torchtraceap::AnalyzedTrace;
use web_sys::{Blob, DedicatedWorkerGlobalScope};

use super::read;
use crate::js::timed;
use crate::protocol::{EarlyLook, FromWorker};

/// Posts the early look at file `file` (`blob`), where it has one.
pub async fn post(scope: &DedicatedWorkerGlobalScope, blob: &Blob, file: usize) {
    if let Some(look) = look(blob, file).await {
        FromWorker::Early(Box::new(look)).post(scope);
    }
}

async fn look(blob: &Blob, file: usize) -> Option<EarlyLook> {
    let len = blob.size() as u64;
    let mut probed = Vec::new();
    for r in early::probes(len) {
        let bytes = read::bytes(blob, r.start, r.end).await.ok()?;
        if r.start == 0 && !early::worth(len, &bytes) {
            return None;
        }
        probed.push((r.start, early::first_timestamp(&bytes)));
    }
    let plan = early::plan(len, &probed)?;
    let mut splice = early::Splice::new(&plan);
    for r in &plan.ranges {
        let mut stream = read::Stream::open(blob, r.start, r.end).ok()?;
        let mut slice = Vec::new();
        while stream.next(read::SLICE_BYTES, &mut slice).await.ok()? {
            splice.feed(&slice)?;
        }
        splice.end_piece()?;
    }
    let e = timed("early", || splice.finish())?;
    let whole_steps = e.ingested.trace.steps.len();
    let report = timed("early-analysis", || {
        AnalyzedTrace::new(&e.ingested).into_report()
    });
    Some(EarlyLook {
        file,
        steps: e.step_range(),
        whole_steps,
        read: e.read,
        len: e.len,
        report,
    })
}
