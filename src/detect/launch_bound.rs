//! Launch-bound: many tiny kernels whose launch overhead the GPU waits on.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::metrics::SHORT_KERNEL_NS;

pub struct LaunchBound;

/// Share of kernels shorter than `SHORT_KERNEL_NS` from which the step counts as launch-bound
/// (Holistic Trace Analysis reports the same < 10 µs share in its kernel-launch statistics).
const SHORT_SHARE: f64 = 0.5;
/// …provided the GPU idles on launches for at least this share of the step.
const IDLE_SHARE: f64 = 0.1;

const LAUNCH_BOUND_FIX: Fix = Fix {
    summary: "Launch fewer, larger kernels: capture the step in a CUDA graph, let torch.compile fuse element-wise chains, or raise the batch size.",
    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")\n# or by hand: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): out = model(static_input)",
};

impl Detector for LaunchBound {
    fn fixes(&self) -> &'static [Fix] {
        &[LAUNCH_BOUND_FIX]
    }

    fn id(&self) -> &'static str {
        "launch-bound-small-kernels"
    }

    fn title(&self) -> &'static str {
        "Launch-bound: many kernels shorter than their launch"
    }

    fn threshold(&self) -> &'static str {
        "at least 50% of kernels shorter than 10 µs, and GPU idle on host or kernel wait at least 10% of the steady-state step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let kernels = a.steady_mean(|m| m.kernels as f64);
        if kernels < 1.0 {
            return None;
        }
        let short = a.steady_mean(|m| m.short_kernels as f64) / kernels;
        let wait = a.steady_mean(|m| {
            m.main_device()
                .map_or(0, |d| d.idle_host_wait + d.idle_kernel_wait) as f64
        });
        // The launch overhead proper: gaps between queued kernels, plus host wait up to the CPU
        // time spent in launch calls.
        let overhead = a.steady_mean(|m| {
            m.main_device().map_or(0, |d| {
                d.idle_kernel_wait + d.idle_host_wait.min(m.launch_call_ns)
            }) as f64
        });
        let step = a.step_ns();
        if short < SHORT_SHARE || wait < IDLE_SHARE * step {
            return None;
        }
        let launches = a.steady_mean(|m| m.launch_calls as f64);
        let launch_ns = a.steady_mean(|m| m.launch_call_ns as f64);
        let delay = a.steady_mean(|m| m.launch_delay_median_ns.unwrap_or(0) as f64);
        let impact = a.impact(
            overhead,
            "GPU kernel-wait idle plus host-wait idle up to the CPU time spent in launch calls, mean over steady-state steps: the launch overhead CUDA graphs or fusion remove",
        );
        Some(finding(
            self,
            format!(
                "{:.0}% of the {kernels:.0} kernels per step run under {} µs; {launches:.0} launch calls take {:.2} ms of CPU time, median launch-to-start delay {:.1} µs",
                100.0 * short,
                SHORT_KERNEL_NS / 1000,
                launch_ns / 1e6,
                delay / 1e3
            ),
            impact,
            0.7,
            vec![Evidence {
                what: format!("{:.0} short kernels per step", kernels * short),
                steps: a.steady_numbers(),
                events: Vec::new(),
                count: Some((kernels * short).round() as u64),
            }],
            LAUNCH_BOUND_FIX,
        ))
    }
}
