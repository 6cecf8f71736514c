//! A feature vector per window, for the window detector: shares of the window's time, counts per
//! launch and kernel times against the trace's own median, so that windows of any length, cut
//! any way, on any GPU compare.
//!
//! Reads the model, the windows and the metrics. Every value is finite.

use crate::metrics::{in_range, measure};
use crate::model::kernels::KernelNames;
use crate::model::{CopyDirection, EventKind, HostMemory, Trace};
use crate::window::{Phase, Steps, Window};

/// The features, in vector order. None depends on the window's length, the trace's length or
/// the number of streams: shares of the window's time or of its kernel time, counts per launch,
/// kernel-time quantiles relative to the trace's own median kernel. Two absolute times stay, as
/// they define an anti-pattern rather than a GPU's speed: the median kernel's µs (launch-bound
/// work is kernels of a few µs) and the host's launch delay; and one ratio of the host's pace to
/// the GPU's (the mean interval between launches over the median kernel). Nor does any depend on
/// how the window was cut: a phase window and a slice holding the same work get the same values
/// (no phase, no length among them).
pub const NAMES: [&str; 34] = [
    "gpu_busy",
    "gpu_compute",
    "gpu_communication",
    "gpu_communication_exposed",
    "gpu_memcpy",
    "gpu_memset",
    "idle_before_first_work",
    "idle_after_last_work",
    "idle_host_wait",
    "idle_kernel_wait",
    "idle_other",
    "short_kernel_share",
    "log_kernel_p50_us",
    "launch_interval_vs_kernel",
    "kernel_p10_vs_trace",
    "kernel_p50_vs_trace",
    "kernel_p90_vs_trace",
    "kernels_per_launch",
    "launch_call_time",
    "log_launch_delay_us",
    "syncs_per_launch",
    "sync_time",
    "items_per_launch",
    "idle_after_sync",
    "pageable_copy_time",
    "device_to_device_copy_time",
    "allocations_per_launch",
    "allocation_call_time",
    "dataloader_time",
    "simt_fp32_kernel_share",
    "layout_kernel_share",
    "attention_kernel_share",
    "elementwise_kernel_share",
    "launched_gpu_time",
];

/// One window and its feature vector (in [`NAMES`] order).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFeatures {
    pub step: i64,
    pub phase: Phase,
    pub start: i64,
    pub end: i64,
    pub values: Vec<f32>,
}

fn share(part: i64, whole: i64) -> f32 {
    if whole > 0 {
        (part as f64 / whole as f64) as f32
    } else {
        0.0
    }
}

/// `count` per launch call (per one where the window launches nothing).
fn per_launch(count: u64, launches: u64) -> f32 {
    (count as f64 / launches.max(1) as f64) as f32
}

/// `log2` of the mean interval between the window's launches over its median kernel: above 0 the
/// host launches more slowly than the GPU runs the kernels (the GPU waits), below 0 work queues
/// up. 0 without launches or kernels.
fn launch_interval_vs_kernel(dur: i64, launches: u64, median_kernel: i64) -> f32 {
    if launches > 0 && median_kernel > 0 {
        (dur as f64 / launches as f64 / median_kernel as f64).log2() as f32
    } else {
        0.0
    }
}

/// `log2(ns / median)`, 0 without kernels: where a kernel-time quantile lies against the
/// trace's median kernel.
fn vs_median(ns: i64, median: i64) -> f32 {
    if ns > 0 && median > 0 {
        (ns as f64 / median as f64).log2() as f32
    } else {
        0.0
    }
}

fn log_us(ns: i64) -> f32 {
    ((ns.max(0) as f64 / 1e3) + 1.0).ln() as f32
}

/// The `q` quantile (0 to 1) of `sorted` values, by the nearest rank; 0 when there are none.
pub fn quantile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        0
    } else {
        sorted[((sorted.len() - 1) as f64 * q).round() as usize]
    }
}

/// The features of one window.
fn of_window(
    t: &Trace,
    steps: &Steps,
    w: &Window,
    median_kernel: i64,
    names: &mut KernelNames,
) -> WindowFeatures {
    let m = measure(t, w.start, w.end);
    let dur = m.dur();
    let d = m.main_device().cloned().unwrap_or_default();
    let e = &t.events;
    let mut kernel_durs = Vec::new();
    let (mut simt, mut layout, mut attention, mut elementwise) = (0i64, 0i64, 0i64, 0i64);
    for (k, _) in t.tracks.iter().enumerate().filter(|(_, tr)| tr.gpu) {
        for i in in_range(t, k, w.start, w.end) {
            if e.kind[i] != EventKind::GpuKernel || e.start[i] < w.start {
                continue;
            }
            kernel_durs.push(e.dur[i]);
            let traits = names.of_event(t, i);
            if traits.simt_fp32 {
                simt += e.dur[i];
            } else if traits.layout {
                layout += e.dur[i];
            } else if traits.attention {
                attention += e.dur[i];
            } else if traits.elementwise {
                elementwise += e.dur[i];
            }
        }
    }
    kernel_durs.sort_unstable();
    let kernel_ns: i64 = kernel_durs.iter().sum();
    let copies = |f: &dyn Fn(CopyDirection, HostMemory) -> bool| -> i64 {
        m.copies
            .iter()
            .filter(|c| f(c.direction, c.host_memory))
            .map(|c| c.ns)
            .sum()
    };
    let launches = m.launch_calls;
    let values = vec![
        share(d.busy, dur),
        share(d.compute, dur),
        share(d.communication, dur),
        share(d.communication_exposed, dur),
        share(d.memcpy, dur),
        share(d.memset, dur),
        share(d.before_first_work, dur),
        share(d.after_last_work, dur),
        share(d.idle_host_wait, dur),
        share(d.idle_kernel_wait, dur),
        share(d.idle_other, dur),
        share(m.short_kernels as i64, m.kernels as i64),
        log_us(quantile(&kernel_durs, 0.5)),
        launch_interval_vs_kernel(dur, launches, quantile(&kernel_durs, 0.5)),
        vs_median(quantile(&kernel_durs, 0.1), median_kernel),
        vs_median(quantile(&kernel_durs, 0.5), median_kernel),
        vs_median(quantile(&kernel_durs, 0.9), median_kernel),
        per_launch(m.kernels, launches),
        share(m.launch_call_ns, dur),
        log_us(m.launch_delay_median_ns.unwrap_or(0)),
        per_launch(m.sync_calls, launches),
        share(m.sync_ns, dur),
        per_launch(m.item_calls + m.data_dependent_calls, launches),
        share(m.idle_after_sync_ns, dur),
        share(copies(&|_, h| h == HostMemory::Pageable), dur),
        share(copies(&|d, _| d == CopyDirection::DeviceToDevice), dur),
        per_launch(m.mallocs + m.frees, launches),
        share(m.alloc_call_ns, dur),
        share(m.dataloader_ns, dur),
        share(simt, kernel_ns),
        share(layout, kernel_ns),
        share(attention, kernel_ns),
        share(elementwise, kernel_ns),
        share(steps.launched_in(w).map(|g| e.dur[g as usize]).sum(), dur),
    ];
    debug_assert_eq!(values.len(), NAMES.len());
    let values = values
        .into_iter()
        .map(|v| if v.is_finite() { v } else { 0.0 })
        .collect();
    WindowFeatures {
        step: steps.steps[w.step].number,
        phase: w.phase,
        start: w.start,
        end: w.end,
        values,
    }
}

/// The median duration of the trace's GPU kernels (0 without any).
fn median_kernel_ns(t: &Trace) -> i64 {
    let mut durs: Vec<i64> = (0..t.events.len())
        .filter(|&i| t.events.kind[i] == EventKind::GpuKernel)
        .map(|i| t.events.dur[i])
        .collect();
    durs.sort_unstable();
    quantile(&durs, 0.5)
}

/// The features of every window of every step.
pub fn of_trace(t: &Trace, steps: &Steps) -> Vec<WindowFeatures> {
    let mut names = KernelNames::default();
    let median_kernel = median_kernel_ns(t);
    steps
        .windows()
        .map(|w| of_window(t, steps, w, median_kernel, &mut names))
        .collect()
}
