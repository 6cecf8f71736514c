//! Communication that takes a large share of the step or is not overlapped with compute.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};

pub struct ExposedCommunication;

/// The TensorBoard plugin's threshold: communication above 10% of the step…
const SHARE: f64 = 0.1;
/// …of which at least this share of the step is not overlapped by compute.
const EXPOSED_SHARE: f64 = 0.01;

const EXPOSED_COMMUNICATION_FIX: Fix = Fix {
    summary: "Overlap gradient all-reduce with backward (DDP buckets), tune bucket size, and synchronize less often with gradient accumulation.",
    snippet: "model = DDP(model, bucket_cap_mb=50, gradient_as_bucket_view=True)\nwith model.no_sync():          # accumulate without all-reduce\n    loss.backward()",
};

impl Detector for ExposedCommunication {
    fn fixes(&self) -> &'static [Fix] {
        &[EXPOSED_COMMUNICATION_FIX]
    }

    fn id(&self) -> &'static str {
        "communication-exposed"
    }

    fn title(&self) -> &'static str {
        "Collective communication not hidden behind compute"
    }

    fn threshold(&self) -> &'static str {
        "collective kernel time above 10% of the steady-state step (the TensorBoard plugin's rule), of which at least 1% of the step is not overlapped by compute"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let comm = a.steady_mean(|m| m.main_device().map_or(0, |d| d.communication) as f64);
        let step = a.step_ns();
        if comm < SHARE * step || comm <= 0.0 {
            return None;
        }
        let exposed =
            a.steady_mean(|m| m.main_device().map_or(0, |d| d.communication_exposed) as f64);
        if exposed < EXPOSED_SHARE * step {
            return None;
        }
        let impact = a.impact(
            exposed,
            "collective time not overlapped by compute kernels on other streams, mean over steady-state steps: the most overlap can recover",
        );
        Some(finding(
            self,
            format!(
                "collectives take {:.1}% of the step ({:.2} ms); {:.2} ms of it ({:.0}%) runs with no compute alongside",
                100.0 * comm / step,
                comm / 1e6,
                exposed / 1e6,
                100.0 * exposed / comm
            ),
            impact,
            0.5,
            vec![Evidence { what: "collective kernels".into(), steps: a.steady_numbers(), events: vec!["nccl / rccl kernels".into()], count: None }],
            EXPOSED_COMMUNICATION_FIX,
        ))
    }
}
