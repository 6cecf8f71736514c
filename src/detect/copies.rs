//! Frequent or large memory copies, device-to-device ones included (`.contiguous()`, `clone`).

use super::contract::{finding, judge, About, Detector, Evidence, Fix, Gate, StepCheck, Verdict};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::model::{CopyDirection, EventKind, NONE};

pub(crate) struct HeavyCopies;

/// Copies matter from this share of the step.
const GATE: Gate = Gate {
    quantity: "GPU copy time (all directions), % of the step",
    threshold: 5.0,
};
/// How a finding's time is counted.
const COST: &str = "device-to-device copy time plus half the host copy time per steady-state step, not already claimed by another finding: layout copies can usually be avoided, host copies overlapped";

const FIX_HEAVY_COPIES: Fix = Fix {
    summary: "Avoid copies that only change layout (.contiguous(), .clone(), .to() of tensors already on the device, permute followed by copy); batch small host copies into one pinned buffer.",
    snippet: "# instead of x.permute(0, 2, 3, 1).contiguous() every step:\nmodel = model.to(memory_format=torch.channels_last)",
    terms: &[".contiguous()", ".clone()", "channels_last", "pinned buffer"],
};

const HEAVY_COPIES_ABOUT: About = About {
    id: "heavy-memcpy",
    title: "Frequent or large memory copies",
    rule: "GPU copy time (all directions) at least {0}% of the step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_HEAVY_COPIES),
};

impl Detector for HeavyCopies {
    fn about(&self) -> &'static About {
        &HEAVY_COPIES_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let mut shown: Vec<usize> = Vec::new();
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (mut ns, mut d2d, mut host) = (0i64, Vec::new(), Vec::new());
                for i in a.gpu_work(k) {
                    if e.kind[i] != EventKind::Memcpy {
                        continue;
                    }
                    ns += e.dur[i];
                    shown.push(i);
                    let device_to_device = e.detail[i] != NONE
                        && t.details.copy(e.detail[i]).direction == CopyDirection::DeviceToDevice;
                    if device_to_device {
                        &mut d2d
                    } else {
                        &mut host
                    }
                    .push((e.start[i], e.end(i)));
                }
                StepCheck {
                    step: k,
                    value: a.pct_of_step(k, ns),
                    claims: vec![(d2d, 1.0), (host, 0.5)],
                }
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let count = shown.len();
        let summary = format!(
            "copies take a median {:.1}% of the step ({:.0} per step); avoiding or overlapping them saves about {:.2} ms per step",
            o.gate.median,
            a.per_step(count as f64),
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "the longest copies".into(),
            steps: o.held.clone(),
            events: a.longest_refs(&shown, 3),
            count: Some(count as u64),
            sources: shown,
        }];
        finding(self, o, summary, evidence, FIX_HEAVY_COPIES)
    }
}
