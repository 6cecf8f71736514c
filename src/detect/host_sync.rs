//! Host–device synchronization inside the step: the CPU stops queueing work until the GPU is
//! done, so the GPU drains and waits.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};

pub struct HostSync;

/// A synchronization matters when the GPU idles after it for at least this share of the step.
const IDLE_SHARE: f64 = 0.01;

const HOST_SYNC_FIX: Fix = Fix {
    summary: "Keep values on the GPU until the end of the step: no .item(), .cpu(), print or Python control flow on tensors inside the step; log accumulated values every N steps.",
    snippet: "running_loss += loss.detach()        # stays on the GPU\nif step % 100 == 0:\n    print(running_loss.item() / 100)  # one sync every 100 steps",
};

impl Detector for HostSync {
    fn fixes(&self) -> &'static [Fix] {
        &[HOST_SYNC_FIX]
    }

    fn id(&self) -> &'static str {
        "host-device-sync"
    }

    fn title(&self) -> &'static str {
        "Host–device synchronization in the step"
    }

    fn threshold(&self) -> &'static str {
        "synchronize calls, blocking cudaMemcpy, aten::item or data-dependent ops (nonzero, masked_select, unique) in steady-state steps, with GPU idle in the 1 ms after the synchronizations at least 1% of the step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let syncs = a.steady_mean(|m| m.sync_calls as f64);
        let items = a.steady_mean(|m| m.item_calls as f64);
        let data_dependent = a.steady_mean(|m| m.data_dependent_calls as f64);
        if syncs + items + data_dependent < 1.0 || !a.trace.tracks.iter().any(|t| t.gpu) {
            return None;
        }
        let idle = a.steady_mean(|m| m.idle_after_sync_ns as f64);
        if idle < IDLE_SHARE * a.step_ns() {
            return None;
        }
        let impact = a.impact(
            idle,
            "GPU idle time in the 1 ms after each synchronize call, mean over steady-state steps: the pipeline drain the sync causes",
        );
        let mut events = vec![format!("{syncs:.1} synchronize calls per step")];
        if items > 0.0 {
            events.push(format!(
                "{items:.1} aten::item / _local_scalar_dense per step"
            ));
        }
        Some(finding(
            self,
            format!(
                "{syncs:.1} synchronize calls and {items:.1} .item() calls per step stall the CPU for {:.2} ms; the GPU then idles {:.2} ms per step",
                a.steady_mean(|m| m.sync_ns as f64) / 1e6,
                impact.ms_per_step
            ),
            impact,
            0.6,
            vec![Evidence { what: "synchronization points".into(), steps: a.steady_numbers(), events, count: Some((syncs + items).round() as u64) }],
            HOST_SYNC_FIX,
        ))
    }
}
