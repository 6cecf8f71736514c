//! A feature vector per window, for the window detector: shares of the window's time, rates
//! per millisecond and a few log-scaled sizes, so that windows of any length and any GPU compare.
//!
//! Reads the model, the windows and the metrics. Every value is finite.

use crate::metrics::{in_range, measure};
use crate::model::kernels::KernelNames;
use crate::model::{CopyDirection, EventKind, HostMemory, Trace};
use crate::window::{Phase, Steps, Window};

/// The features, in vector order.
pub const NAMES: [&str; 40] = [
    "log_duration_ms",
    "phase_data_loading",
    "phase_forward",
    "phase_backward",
    "phase_optimizer",
    "phase_communication",
    "phase_slice",
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
    "kernels_per_ms",
    "short_kernel_share",
    "log_kernel_p10_us",
    "log_kernel_p50_us",
    "log_kernel_p90_us",
    "launch_calls_per_ms",
    "launch_call_time",
    "log_launch_delay_us",
    "sync_calls_per_ms",
    "sync_time",
    "item_calls_per_ms",
    "idle_after_sync",
    "pageable_copy_time",
    "device_to_device_copy_time",
    "allocation_calls_per_ms",
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

fn per_ms(count: u64, dur: i64) -> f32 {
    (count as f64 / (dur.max(1) as f64 / 1e6)) as f32
}

fn log_us(ns: i64) -> f32 {
    ((ns.max(0) as f64 / 1e3) + 1.0).ln() as f32
}

pub(crate) fn quantile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        0
    } else {
        sorted[((sorted.len() - 1) as f64 * q).round() as usize]
    }
}

/// The features of one window.
fn of_window(t: &Trace, steps: &Steps, w: &Window, names: &mut KernelNames) -> WindowFeatures {
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
    let phase = |p: Phase| f32::from(w.phase == p);
    let values = vec![
        ((dur.max(1) as f64 / 1e6) + 1.0).ln() as f32,
        phase(Phase::DataLoading),
        phase(Phase::Forward),
        phase(Phase::Backward),
        phase(Phase::Optimizer),
        phase(Phase::Communication),
        phase(Phase::Slice),
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
        per_ms(m.kernels, dur),
        share(m.short_kernels as i64, m.kernels as i64),
        log_us(quantile(&kernel_durs, 0.1)),
        log_us(quantile(&kernel_durs, 0.5)),
        log_us(quantile(&kernel_durs, 0.9)),
        per_ms(m.launch_calls, dur),
        share(m.launch_call_ns, dur),
        log_us(m.launch_delay_median_ns.unwrap_or(0)),
        per_ms(m.sync_calls, dur),
        share(m.sync_ns, dur),
        per_ms(m.item_calls + m.data_dependent_calls, dur),
        share(m.idle_after_sync_ns, dur),
        share(copies(&|_, h| h == HostMemory::Pageable), dur),
        share(copies(&|d, _| d == CopyDirection::DeviceToDevice), dur),
        per_ms(m.mallocs + m.frees, dur),
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

/// The features of every window of every step.
pub fn of_trace(t: &Trace, steps: &Steps) -> Vec<WindowFeatures> {
    let mut names = KernelNames::default();
    steps
        .windows()
        .map(|w| of_window(t, steps, w, &mut names))
        .collect()
}
