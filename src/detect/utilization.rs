//! GPU starved: low utilization, with the idle time attributed.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};

pub struct LowUtilization;

/// The TensorBoard plugin's threshold: GPU utilization below 50%.
const UTILIZATION: f64 = 0.5;

impl Detector for LowUtilization {
    fn id(&self) -> &'static str {
        "gpu-low-utilization"
    }

    fn title(&self) -> &'static str {
        "The GPU is idle for much of the step"
    }

    fn threshold(&self) -> &'static str {
        "busy time of the rank's GPU below 50% of the steady-state step (the TensorBoard plugin's rule)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let busy = a.steady_mean(|m| m.main_device().map_or(0, |d| d.busy) as f64);
        if busy <= 0.0 {
            return None;
        }
        let step = a.step_ns();
        let utilization = busy / step;
        if utilization >= UTILIZATION {
            return None;
        }
        let host = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_host_wait) as f64);
        let kernel = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_kernel_wait) as f64);
        let other = a.steady_mean(|m| m.main_device().map_or(0, |d| d.idle_other) as f64);
        let impact = if a.trace.launches.is_empty() {
            a.impact(
                step - busy,
                "all GPU idle time per steady-state step: the trace links no kernel to its launch, so the idle time cannot be attributed",
            )
        } else {
            a.impact(
                host + kernel,
                "GPU idle time attributed to host wait or kernel wait (Holistic Trace Analysis' definitions), mean over steady-state steps; idle time waiting on other streams or events is not counted",
            )
        };
        let (cause, fix) = if host >= kernel {
            (
                "the CPU does not queue work fast enough",
                Fix {
                    summary: "Take Python overhead off the critical path: compile the model, capture CUDA graphs, or raise the batch size so each launch does more work.",
                    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")  # fuses ops and uses CUDA graphs",
                },
            )
        } else {
            (
                "kernels are too short for their launch overhead",
                Fix {
                    summary: "Fuse small kernels and launch them together.",
                    snippet: "model = torch.compile(model)",
                },
            )
        };
        Some(finding(
            self,
            format!(
                "the GPU is busy {:.0}% of the step: idle {:.2} ms per step, {:.2} ms host wait, {:.2} ms kernel wait, {:.2} ms other; mostly {cause}",
                100.0 * utilization,
                (step - busy) / 1e6,
                host / 1e6,
                kernel / 1e6,
                other / 1e6
            ),
            impact,
            0.6,
            vec![Evidence {
                what: format!("GPU busy {:.2} ms of a {:.2} ms step", busy / 1e6, step / 1e6),
                steps: a.steady_numbers(),
                events: Vec::new(),
                count: None,
            }],
            fix,
        ))
    }
}
