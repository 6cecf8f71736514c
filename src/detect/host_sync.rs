//! Host–device synchronization inside the step: the CPU stops queueing work until the GPU is
//! done, so the GPU drains and waits for the next launch. Only syncs that wait on queued work
//! and have work after them in the step count (`attribution::sync_costs`): one before the
//! step's first GPU work, after its last, or with the GPU already idle costs nothing.
//!
//! A call that waits while none of the trace's GPU work runs ([`unrecorded_waits`]) waits on
//! work the trace did not record (a stream waiting on another process's event, kernels the
//! capture lost): the finding says which share of its idle that is and scales its confidence to
//! the rest, and a note gives the waits' figures ([`UnrecordedWork`]), with the trace's GPU
//! records that end before launches that have none.

use super::contract::{
    finding, judge, part_checks, About, Detector, Evidence, Fix, Gate, Note, Observer, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{intersect, Blocking, Intervals, Ledger, Part, SYNC_REFILL_NS};
use crate::metrics::{merge, total};
use crate::model::{EventKind, RuntimeClass, Trace};

pub struct HostSync;
pub(crate) struct UnrecordedWork;

/// A synchronizing call this long or longer…
const UNRECORDED_MIN_NS: i64 = 1_000_000;
/// …during which the trace's GPU work (any device) runs at most this share of it waits on work
/// the trace did not record: a sync on recorded work sees that work run.
const UNRECORDED_BUSY_SHARE: f64 = 0.1;

/// GPU idle during and right after synchronizing calls from 2% of the step.
const GATE: Gate = Gate {
    quantity: "GPU idle during and in the 1 ms after synchronizing calls, % of the step",
    threshold: 2.0,
};
/// How a finding's time is counted.
const COST: &str = "GPU idle during synchronizing calls and in the 1 ms after each, mean over steady-state steps: the pipeline drain and refill the sync causes";

const FIX_HOST_SYNC: Fix = Fix {
    summary: "Keep values on the GPU until the end of the step: no .item(), .cpu(), print or Python control flow on tensors inside the step; log accumulated values every N steps.",
    snippet: "running_loss += loss.detach()        # stays on the GPU\nif step % 100 == 0:\n    print(running_loss.item() / 100)  # one sync every 100 steps",
    terms: &[".item()", ".cpu()", "every N steps", "detach()"],
};

const HOST_SYNC_ABOUT: About = About {
    id: "host-device-sync",
    title: "Host–device synchronization in the step",
    rule: "GPU idle during synchronizing runtime calls (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, blocking cudaMemcpy, cudaMemcpyAsync into pageable memory, hip equivalents; .item() and data-dependent ops issue them) and in the 1 ms after each, for the syncs that wait on GPU work and end before the step's last, at least {0}% of the step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_HOST_SYNC),
};

impl Detector for HostSync {
    fn about(&self) -> &'static About {
        &HOST_SYNC_ABOUT
    }

    fn reads_decode(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let checks = part_checks(a, &[Part::IdleSync], |_| true);
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        // The share of the claimed idle that waits on work the trace did not record.
        let unrecorded: Intervals = merge(
            unrecorded_waits(a.trace)
                .iter()
                .map(|w| (w.start, w.end))
                .collect(),
        );
        let claimed: i64 = o.claimed.iter().map(|(_, iv)| total(iv)).sum();
        let unseen: i64 = o
            .claimed
            .iter()
            .map(|(_, iv)| total(&intersect(iv, &unrecorded)))
            .sum();
        let unseen_share = unseen as f64 / claimed.max(1) as f64;
        let t = a.trace;
        let e = &t.events;
        let blocking = Blocking::of(t);
        let syncs = o.events_where(a, |i| blocking.blocks(t, i));
        // The syncs followed by the most GPU idle, by the idle part they overlap.
        let mut ranked: Vec<(usize, i64)> = syncs
            .iter()
            .map(|&i| {
                let k = a.steady_step_at(e.start[i]).unwrap_or(0);
                let idle = intersect(
                    a.splits[k].intervals(Part::IdleSync),
                    &[(e.start[i], e.end(i) + SYNC_REFILL_NS)],
                );
                (i, total(&idle))
            })
            .collect();
        ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
        let items = a.steady_mean(|m| m.item_calls as f64);
        let data_dependent = a.steady_mean(|m| m.data_dependent_calls as f64);
        let step = a.step_word();
        let mut summary = format!(
            "{:.1} synchronizing calls per {step} ({items:.1} .item(), {data_dependent:.1} data-dependent ops); the GPU then idles {:.2} ms per {step} ({:.1}%)",
            a.per_step(syncs.len() as f64),
            o.impact.ms_per_step,
            o.impact.pct_of_step
        );
        if unseen > 0 {
            summary.push_str(&format!(
                "; {:.0}% of that idle is calls waiting on work the trace did not record (no GPU work of the trace runs while they wait), so the confidence is scaled to the rest",
                100.0 * unseen_share
            ));
        }
        let evidence = vec![Evidence {
            what: "the synchronizing calls followed by the most GPU idle".into(),
            steps: o.held.clone(),
            events: ranked
                .iter()
                .take(3)
                .map(|&(i, _)| a.event_ref(i))
                .collect(),
            count: Some(syncs.len() as u64),
            sources: syncs,
        }];
        let mut f = finding(self, o, summary, evidence, FIX_HOST_SYNC)?;
        f.confidence =
            ((f64::from(f.confidence) * (1.0 - unseen_share) * 100.0).round() / 100.0) as f32;
        Ok(f)
    }
}

/// A synchronizing call that waited on work the trace did not record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct UnrecordedWait {
    pub call: usize,
    pub start: i64,
    pub end: i64,
    /// Nanoseconds of the call with no GPU work of the trace running.
    pub idle_ns: i64,
    /// GPU records launched before the call that started only during it: the work it waited
    /// for, held back by what the trace did not record.
    pub held_back: usize,
}

/// The trace's GPU work (kernels, copies, memsets, collectives, any device), merged.
fn gpu_busy(t: &Trace) -> Intervals {
    let e = &t.events;
    merge(
        t.tracks
            .iter()
            .filter(|tr| tr.gpu)
            .flat_map(|tr| tr.events.clone())
            .map(|i| i as usize)
            .filter(|&i| e.kind[i].is_gpu_work())
            .map(|i| (e.start[i], e.end(i)))
            .collect(),
    )
}

/// The synchronizing calls of at least [`UNRECORDED_MIN_NS`] during which the trace's GPU work
/// runs at most [`UNRECORDED_BUSY_SHARE`] of the call, in time order; none without GPU work.
pub(crate) fn unrecorded_waits(t: &Trace) -> Vec<UnrecordedWait> {
    let e = &t.events;
    let busy = gpu_busy(t);
    if busy.is_empty() {
        return Vec::new();
    }
    let blocking = Blocking::of(t);
    let mut waits: Vec<UnrecordedWait> = t
        .tracks
        .iter()
        .filter(|tr| !tr.gpu)
        .flat_map(|tr| tr.events.clone())
        .map(|i| i as usize)
        .filter(|&i| e.dur[i] >= UNRECORDED_MIN_NS && blocking.blocks(t, i))
        .filter_map(|i| {
            let (start, end) = (e.start[i], e.end(i));
            let ran = total(&crate::attribution::intersect(&busy, &[(start, end)]));
            (ran as f64 <= UNRECORDED_BUSY_SHARE * e.dur[i] as f64).then(|| UnrecordedWait {
                call: i,
                start,
                end,
                idle_ns: e.dur[i] - ran,
                held_back: t
                    .launches
                    .iter()
                    .filter(|l| {
                        let g = l.gpu as usize;
                        e.start[l.launch as usize] < start && (start..=end).contains(&e.start[g])
                    })
                    .count(),
            })
        })
        .collect();
    waits.sort_unstable_by_key(|w| (w.start, w.call));
    waits
}

/// Kernel launches after the trace's last GPU record ends that have no GPU record of their own,
/// and how long before the host's last such launch that record ends: the capture's GPU side
/// stopped first. `None` where every launch after it has its record.
pub(crate) fn unrecorded_tail(t: &Trace) -> Option<(usize, i64)> {
    let e = &t.events;
    let last = gpu_busy(t).last()?.1;
    let mut has_record = vec![false; e.len()];
    for l in &t.launches {
        has_record[l.launch as usize] = true;
    }
    let lost: Vec<i64> = t
        .tracks
        .iter()
        .filter(|tr| !tr.gpu)
        .flat_map(|tr| tr.events.clone())
        .map(|i| i as usize)
        .filter(|&i| {
            e.start[i] >= last
                && !has_record[i]
                && e.kind[i] == EventKind::RuntimeCall
                && e.detail[i] != crate::model::NONE
                && matches!(
                    t.runtime_class(i),
                    RuntimeClass::Launch | RuntimeClass::GraphLaunch
                )
        })
        .map(|i| e.start[i])
        .collect();
    let latest = lost.iter().max()?;
    Some((lost.len(), latest - last))
}

const UNRECORDED_ABOUT: About = About {
    id: "unrecorded-work",
    title: "Waits on work the trace did not record",
    rule: "a synchronizing call of at least 1 ms during which the trace's GPU work runs at most 10% of the call (host-device-sync's confidence leaves its wait out), or kernel launches after the trace's last GPU record that have no record of their own",
    gates: &[],
    fixes: &[],
};

impl Observer for UnrecordedWork {
    fn about(&self) -> &'static About {
        &UNRECORDED_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let waits = unrecorded_waits(t);
        let mut said = Vec::new();
        if let Some(longest) = waits
            .iter()
            .max_by_key(|w| (w.idle_ns, std::cmp::Reverse(w.start)))
        {
            let idle: i64 = waits.iter().map(|w| w.idle_ns).sum();
            said.push(format!(
                "{} synchronizing call{} waited {:.1} ms in all with no GPU work of the trace running (the longest: {}, {:.1} ms of it idle, holding back {} GPU record{} launched before it): they wait on work the trace did not record (another process or stream, an event, records the capture lost), so host-device-sync's confidence leaves them out",
                waits.len(),
                if waits.len() == 1 { "" } else { "s" },
                idle as f64 / 1e6,
                a.event_ref(longest.call),
                longest.idle_ns as f64 / 1e6,
                longest.held_back,
                if longest.held_back == 1 { "" } else { "s" },
            ));
        }
        if let Some((lost, ns)) = unrecorded_tail(t) {
            said.push(format!(
                "the GPU records end {:.3} ms before the host's last launch: {lost} launch{} after them {} no GPU record",
                ns as f64 / 1e6,
                if lost == 1 { "" } else { "es" },
                if lost == 1 { "has" } else { "have" },
            ));
        }
        (!said.is_empty()).then(|| self.about().note(said.join("; ")))
    }
}
