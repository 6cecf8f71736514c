//! Communication that takes a large share of the step and is not hidden behind compute.

use super::contract::{
    finding, judge, part_checks, pct, About, Detector, Evidence, Fix, Gate, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{Ledger, Part};

pub(crate) struct ExposedCommunication;

/// The TensorBoard plugin's threshold: communication above 10% of the step…
const SHARE: f64 = 10.0;
/// …of which this share of the step runs with no compute alongside.
const GATE: Gate = Gate {
    quantity: "collective time with no compute kernel alongside, % of the step (where collectives take at least 10% of it)",
    threshold: 5.0,
};
/// How a finding's time is counted.
const COST: &str = "collective time with no compute kernel alongside, mean over steady-state steps: the most overlap can recover";

const FIX_EXPOSED_COMMUNICATION: Fix = Fix {
    summary: "Overlap gradient all-reduce with backward (DDP buckets), tune bucket size, and synchronize less often with gradient accumulation.",
    snippet: "model = DDP(model, bucket_cap_mb=50, gradient_as_bucket_view=True)\nwith model.no_sync():          # accumulate without all-reduce\n    loss.backward()",
    terms: &["overlap", "bucket", "no_sync", "gradient accumulation"],
};

const EXPOSED_COMMUNICATION_ABOUT: About = About {
    id: "communication-exposed",
    title: "Collective communication not hidden behind compute",
    rule: "collective kernels at least 10% of the step (the TensorBoard plugin's rule), of which at least {0}% of the step runs with no compute kernel alongside, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_EXPOSED_COMMUNICATION),
};

impl Detector for ExposedCommunication {
    fn about(&self) -> &'static About {
        &EXPOSED_COMMUNICATION_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let comm_share = |k: usize| {
            let m = &a.step_metrics[k];
            pct(
                m.main_device().map_or(0, |d| d.communication) as f64,
                m.dur() as f64,
            )
        };
        let checks = part_checks(a, &[Part::BusyCommunication], |k| comm_share(k) >= SHARE);
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let comm = a.steady_mean_by(comm_share);
        let summary = format!(
            "collectives take {comm:.1}% of the step; {:.2} ms of it per step ({:.1}% of the step) runs with no compute alongside",
            o.impact.ms_per_step, o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: "collective kernels not overlapped by compute".into(),
            steps: o.held.clone(),
            events: Vec::new(),
            count: None,
            sources: Vec::new(),
        }];
        finding(self, o, summary, evidence, FIX_EXPOSED_COMMUNICATION)
    }
}
