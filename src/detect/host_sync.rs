//! Host–device synchronization inside the step: the CPU stops queueing work until the GPU is
//! done, so the GPU drains and waits for the next launch. Only syncs that wait on queued work
//! and have work after them in the step count (`attribution::sync_costs`): one before the
//! step's first GPU work, after its last, or with the GPU already idle costs nothing.

use super::{finding, judge, part_checks, About, Analysis, Detector, Evidence, Fix, Gate, Verdict};
use crate::attribution::{Ledger, Part, SYNC_REFILL_NS};
use crate::model::{EventKind, RuntimeClass, NONE};

pub struct HostSync;

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
    rule: "GPU idle during synchronizing runtime calls (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, blocking cudaMemcpy, hip equivalents; .item() and data-dependent ops issue them) and in the 1 ms after each, for the syncs that wait on GPU work and end before the step's last, at least {0}% of the step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_HOST_SYNC),
};

impl Detector for HostSync {
    fn about(&self) -> &'static About {
        &HOST_SYNC_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let checks = part_checks(a, &[Part::IdleSync], |_| true);
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let t = a.trace;
        let e = &t.events;
        let syncs = o.events_where(a, |i| {
            e.kind[i] == EventKind::RuntimeCall
                && e.detail[i] != NONE
                && match t.runtime_class(i) {
                    RuntimeClass::Synchronize => true,
                    RuntimeClass::Memcpy => !t.name_of(i).contains("Async"),
                    _ => false,
                }
        });
        // The syncs followed by the most GPU idle, by the idle part they overlap.
        let mut ranked: Vec<(usize, i64)> = syncs
            .iter()
            .map(|&i| {
                let k = a.steady_step_at(e.start[i]).unwrap_or(0);
                let idle = crate::attribution::intersect(
                    a.splits[k].intervals(Part::IdleSync),
                    &[(e.start[i], e.end(i) + SYNC_REFILL_NS)],
                );
                (i, crate::metrics::total(&idle))
            })
            .collect();
        ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
        let items = a.steady_mean(|m| m.item_calls as f64);
        let data_dependent = a.steady_mean(|m| m.data_dependent_calls as f64);
        let summary = format!(
            "{:.1} synchronizing calls per step ({items:.1} .item(), {data_dependent:.1} data-dependent ops); the GPU then idles {:.2} ms per step ({:.1}%)",
            a.per_step(syncs.len() as f64),
            o.impact.ms_per_step,
            o.impact.pct_of_step
        );
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
        finding(self, o, summary, evidence, FIX_HOST_SYNC)
    }
}
