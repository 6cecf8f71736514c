//! Pageable host-to-device copies: staged through a bounce buffer, synchronous with the host.

use super::contract::{
    finding, judge, About, Detector, Evidence, Fix, Gate, Rejected, StepCheck, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{main_device, Ledger};
use crate::metrics::{in_range, merge};
use crate::model::{CopyDirection, EventKind, HostMemory, NONE};

pub struct PageableCopy;

/// Pageable copies matter from 1% of the step in copy time or 1 MB per step: the gated value is
/// the larger of the two, each over its own threshold.
const GATE: Gate = Gate {
    quantity:
        "pageable copies per step: the larger of (copy time in % of the step) and (MB copied)",
    threshold: 1.0,
};
/// How a finding's time is counted.
const COST: &str = "half the pageable copy time, plus the GPU idle while the host is blocked in their copy calls, per steady-state step: pinned copies run about twice as fast and, with non_blocking=True, neither block the host nor keep compute waiting";

const FIX_PAGEABLE_COPY: Fix = Fix {
    summary: "Pin host buffers (DataLoader pin_memory=True) and copy with non_blocking=True.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True)\nx = x.to(device, non_blocking=True)",
    terms: &["pin_memory", "non_blocking", "pin host"],
};

const PAGEABLE_COPY_ABOUT: About = About {
    id: "pageable-memcpy",
    title: "Copies from pageable host memory",
    rule: "host-to-device or device-to-host copies from pageable memory taking at least {0}% of the step or moving at least {0} MB per step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_PAGEABLE_COPY),
};

impl Detector for PageableCopy {
    fn about(&self) -> &'static About {
        &PAGEABLE_COPY_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let Some(device) = main_device(t) else {
            return Err(Rejected::NOTHING);
        };
        let mut shown: Vec<usize> = Vec::new();
        let mut count = 0u64;
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (start, end) = a.range(k);
                let (mut ns, mut bytes, mut iv, mut calls) = (0i64, 0u64, Vec::new(), Vec::new());
                for (tk, track) in t.tracks.iter().enumerate() {
                    if !track.gpu || track.device != device {
                        continue;
                    }
                    for i in in_range(t, tk, start, end) {
                        if e.kind[i] != EventKind::Memcpy
                            || e.detail[i] == NONE
                            || e.start[i] < start
                        {
                            continue;
                        }
                        let c = t.details.copy(e.detail[i]);
                        if c.host_memory == HostMemory::Pageable
                            && matches!(
                                c.direction,
                                CopyDirection::HostToDevice | CopyDirection::DeviceToHost
                            )
                        {
                            ns += e.dur[i];
                            bytes += c.bytes.unwrap_or(0);
                            // Pinning saves half of each copy: that half is this finding's;
                            // the other half is still a copy, heavy-memcpy's to weigh.
                            iv.push((e.start[i], e.start[i] + e.dur[i] / 2));
                            if let Some(l) = t.launch_of(i as u32) {
                                calls.push((e.start[l as usize], e.end(l as usize)));
                            }
                            shown.push(i);
                        }
                    }
                }
                let value = a.pct_of_step(k, ns).max(bytes as f64 / 1e6);
                StepCheck {
                    step: k,
                    value: if iv.is_empty() { 0.0 } else { value },
                    claims: vec![(iv, 1.0), (a.idle_in(k, &merge(calls)), 1.0)],
                }
            })
            .collect::<Vec<_>>();
        for c in &checks {
            count += c.claims[0].0.len() as u64;
        }
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let summary = format!(
            "{:.1} copies per step go through pageable host memory; pinning them saves about {:.3} ms per step",
            a.per_step(count as f64),
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "the longest pageable copies".into(),
            steps: o.held.clone(),
            events: a.longest_refs(&shown, 3),
            count: Some(count),
            sources: shown,
        }];
        finding(self, o, summary, evidence, FIX_PAGEABLE_COPY)
    }
}
