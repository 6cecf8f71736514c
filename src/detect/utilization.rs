//! GPU starved: low utilization while the GPU has work, with the idle time attributed; and
//! host-only parts of the step (preprocessing before the first kernel, work after the last) that
//! leave the GPU with nothing to do.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};

pub struct LowUtilization;
pub struct HostOnlyTime;

/// The TensorBoard plugin's threshold: GPU utilization below 50%.
const UTILIZATION: f64 = 0.5;
/// Host-only time at the start of the step, beyond data loading, from this share of the step.
const HOST_FIRST_SHARE: f64 = 0.25;

const HOST_BOUND_FIX: Fix = Fix {
    summary: "Take Python overhead off the critical path: compile the model, capture CUDA graphs, or raise the batch size so each launch does more work.",
    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")  # fuses ops and uses CUDA graphs",
};

const SHORT_KERNELS_FIX: Fix = Fix {
    summary: "Fuse small kernels and launch them together.",
    snippet: "model = torch.compile(model)",
};

impl Detector for LowUtilization {
    fn fixes(&self) -> &'static [Fix] {
        &[HOST_BOUND_FIX, SHORT_KERNELS_FIX]
    }

    fn id(&self) -> &'static str {
        "gpu-low-utilization"
    }

    fn title(&self) -> &'static str {
        "The GPU is idle for much of the step"
    }

    fn threshold(&self) -> &'static str {
        "busy time of the rank's GPU below 50% of its active part of the steady-state step, from its first to its last work (the TensorBoard plugin's rule; host time before the first and after the last kernel is host-only-time)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let busy = a.steady_mean(|m| m.main_device().map_or(0, |d| d.busy) as f64);
        if busy <= 0.0 {
            return None;
        }
        let active = a.steady_mean(|m| m.main_device().map_or(0, |d| d.active(m.dur())) as f64);
        let utilization = busy / active.max(1.0);
        if utilization >= UTILIZATION {
            return None;
        }
        let host = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_host_wait) as f64);
        let kernel = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_kernel_wait) as f64);
        let other = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_other) as f64);
        let impact = a.impact(
            active - busy,
            "GPU idle time between its first and last work in the step, mean over steady-state steps; the summary splits it into host wait, kernel wait (Holistic Trace Analysis' definitions) and other",
        );
        let (cause, fix) = if host >= kernel {
            ("the CPU does not queue work fast enough", HOST_BOUND_FIX)
        } else {
            (
                "kernels are too short for their launch overhead",
                SHORT_KERNELS_FIX,
            )
        };
        Some(finding(
            self,
            format!(
                "the GPU is busy {:.0}% of its active {:.2} ms per step: idle {:.2} ms host wait, {:.2} ms kernel wait, {:.2} ms other; mostly {cause}",
                100.0 * utilization,
                active / 1e6,
                host / 1e6,
                kernel / 1e6,
                other / 1e6
            ),
            impact,
            0.6,
            vec![Evidence {
                what: format!("GPU busy {:.2} ms of {:.2} ms active", busy / 1e6, active / 1e6),
                steps: a.steady_numbers(),
                events: Vec::new(),
                count: None,
            }],
            fix,
        ))
    }
}

const HOST_ONLY_TIME_FIX: Fix = Fix {
    summary: "Prepare inputs ahead of the step: decode and resize in DataLoader workers (or on the GPU), convert to tensors there, and copy pinned batches with non_blocking=True while the previous step runs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    collate_fn=preprocess_batch)  # preprocessing runs in the workers",
};

impl Detector for HostOnlyTime {
    fn fixes(&self) -> &'static [Fix] {
        &[HOST_ONLY_TIME_FIX]
    }

    fn id(&self) -> &'static str {
        "host-only-time"
    }

    fn title(&self) -> &'static str {
        "Parts of the step run on the host alone"
    }

    fn threshold(&self) -> &'static str {
        "GPU idle before the step's first GPU work and after its last, less the DataLoader time (its own finding), above 25% of the steady-state step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        if !a.trace.tracks.iter().any(|t| t.gpu) {
            return None;
        }
        let before = a.steady_mean(|m| m.main_device().map_or(0, |d| d.before_first_work) as f64);
        let after = a.steady_mean(|m| m.main_device().map_or(0, |d| d.after_last_work) as f64);
        let host = (before + after - a.steady_mean(|m| m.dataloader_ns as f64)).max(0.0);
        if host < HOST_FIRST_SHARE * a.step_ns() {
            return None;
        }
        let impact = a.impact(
            host,
            "GPU idle before the first and after the last GPU work of the step, less DataLoader time, mean over steady-state steps: host work moved off the critical path (or overlapped with the next step) leaves the GPU no gap",
        );
        Some(finding(
            self,
            format!("each step spends {:.2} ms on the host alone ({:.2} ms before its first GPU work, {:.2} ms after its last); the GPU idles meanwhile", host / 1e6, before / 1e6, after / 1e6),
            impact,
            0.6,
            vec![Evidence { what: "host-only time at the start and end of the step".into(), steps: a.steady_numbers(), events: Vec::new(), count: None }],
            HOST_ONLY_TIME_FIX,
        ))
    }
}
