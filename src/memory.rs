//! The caching allocator's memory over time, per device, from `[memory]` events (recorded with
//! `profile_memory=True`): allocated and reserved bytes as step series (each value holds until
//! the next event), the peak with the op that reached it (and its module, where recorded),
//! allocations per step, and the device's capacity (`deviceProperties`' `totalGlobalMem`).
//!
//! The one place the allocator's figures are read: `metrics`' per-step peak, the
//! `memory-pressure` note, the report's [`MemorySummary`] and the timeline's memory track all come
//! from here. The series are for views, computed from the model; reports keep the summary.
//! Reads only the model.

use serde::{Deserialize, Serialize};

use crate::model::{EventKind, MemoryDetail, Trace, NONE};

/// A device as the allocator names it: `Device Type` (c10's numbering: 0 CPU, 1 CUDA, 6 HIP,
/// …) and `Device Id` (`-1` for the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub kind: i64,
    pub index: i64,
}

impl DeviceId {
    /// Whether this is an accelerator's memory (not the host's).
    pub fn accelerator(self) -> bool {
        self.kind != 0
    }

    /// `cuda:0`, `hip:0`, `cpu`, …
    pub fn label(self) -> String {
        let kind = match self.kind {
            0 => return "cpu".into(),
            1 => "cuda",
            6 => "hip",
            12 => "xpu",
            13 => "mps",
            k => return format!("device type {k}:{}", self.index),
        };
        format!("{kind}:{}", self.index)
    }
}

/// One allocator event of a device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub at: i64,
    /// `Total Allocated` after the event, where written.
    pub allocated: Option<i64>,
    /// `Total Reserved` after the event, where written.
    pub reserved: Option<i64>,
    /// Positive for an allocation, negative for a free.
    pub bytes: i64,
    /// The `[memory]` event.
    pub event: u32,
}

/// The highest `Total Allocated` of a device and where it was reached.
#[derive(Clone, Debug, PartialEq)]
pub struct Peak {
    /// Index into [`DeviceMemory::samples`]: the first sample at the peak.
    pub sample: usize,
    pub allocated: i64,
    /// The innermost CPU op enclosing the peak's event on its thread.
    pub op: Option<u32>,
    /// The module frames (`nn.Module` ranges, `record_function` labels) enclosing the event,
    /// outermost first, joined by `/`.
    pub module: Option<String>,
}

/// One device's memory over the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMemory {
    pub device: DeviceId,
    /// In time order (events of the same time in the trace's order).
    pub samples: Vec<Sample>,
    /// `None` when no event writes `Total Allocated`.
    pub peak: Option<Peak>,
    pub peak_reserved: Option<i64>,
    /// The device's memory in bytes (`totalGlobalMem`), where recorded.
    pub capacity: Option<u64>,
}

impl DeviceMemory {
    /// `(time, value)` points of `Total Allocated` (`reserved`: of `Total Reserved`).
    pub fn series(&self, reserved: bool) -> Vec<(i64, i64)> {
        self.samples
            .iter()
            .filter_map(|s| if reserved { s.reserved } else { s.allocated }.map(|v| (s.at, v)))
            .collect()
    }

    /// Allocations in `[start, end)`: their count and bytes.
    pub fn allocations(&self, start: i64, end: i64) -> (u64, i64) {
        let lo = self.samples.partition_point(|s| s.at < start);
        let hi = self.samples.partition_point(|s| s.at < end);
        self.samples[lo..hi]
            .iter()
            .filter(|s| s.bytes > 0)
            .fold((0, 0), |(n, b), s| (n + 1, b + s.bytes))
    }

    /// The peak's share of the device's capacity.
    pub(crate) fn peak_share(&self) -> Option<f64> {
        let peak = self.peak.as_ref()?.allocated;
        self.capacity
            .filter(|&c| c > 0)
            .map(|c| peak as f64 / c as f64)
    }
}

/// Every device's memory over the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Memory {
    /// `[memory]` events in the trace.
    pub events: u64,
    /// Accelerators first, by device.
    pub devices: Vec<DeviceMemory>,
}

/// What a report keeps of the memory: per device, its peaks and allocations per step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// `[memory]` events in the trace; `0`: record with `profile_memory=True`.
    pub events: u64,
    pub devices: Vec<DeviceSummary>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSummary {
    /// `cuda:0`, `hip:0`, `cpu`.
    pub device: String,
    pub peak_allocated: Option<i64>,
    pub peak_reserved: Option<i64>,
    pub capacity: Option<u64>,
    /// The op that reached the peak allocated (`aten::empty`), where known.
    pub op: Option<String>,
    /// Its module frames, outermost first, where recorded.
    pub module: Option<String>,
    /// The step holding the peak.
    pub step: Option<i64>,
    /// When the peak was reached, in milliseconds from the trace's start.
    pub at_ms: Option<f64>,
    /// Mean allocations per steady step, and their bytes.
    pub allocations_per_step: Option<f64>,
    pub allocated_bytes_per_step: Option<f64>,
}

/// The columns of a memory table ([`DeviceSummary::cells`]).
pub const COLUMNS: [&str; 8] = [
    "device",
    "peak allocated",
    "peak reserved",
    "of capacity",
    "operator at the peak",
    "module",
    "step",
    "allocations per step",
];

impl DeviceSummary {
    /// Peak allocated over the device's capacity, in percent.
    pub fn pct_of_capacity(&self) -> Option<f64> {
        let c = self.capacity.filter(|&c| c > 0)?;
        Some(100.0 * self.peak_allocated? as f64 / c as f64)
    }

    /// A table row under [`COLUMNS`], `None` where unknown. The operator and module are the
    /// trace's text (untrusted: escape them).
    pub fn cells(&self) -> [Option<String>; 8] {
        [
            Some(self.device.clone()),
            self.peak_allocated.map(mib),
            self.peak_reserved.map(mib),
            self.pct_of_capacity().map(|p| {
                format!(
                    "{p:.1}% of {:.1} GiB",
                    self.capacity.unwrap_or(0) as f64 / GIB
                )
            }),
            self.op.clone(),
            self.module.clone(),
            self.step.map(|s| s.to_string()),
            self.allocations_per_step.map(|n| {
                format!(
                    "{n:.0}, {}",
                    mib(self.allocated_bytes_per_step.unwrap_or(0.0) as i64)
                )
            }),
        ]
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// Bytes in MiB, as the table writes them.
fn mib(bytes: i64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// The device and figures of event `i`, if it is an allocator event with details.
pub fn sample(t: &Trace, i: usize) -> Option<(DeviceId, MemoryDetail)> {
    let e = &t.events;
    if e.kind[i] != EventKind::Memory || e.detail[i] == NONE {
        return None;
    }
    let m = t.details.memory(e.detail[i]);
    let device = DeviceId {
        kind: m.device_type.unwrap_or(0),
        index: m.device_id.unwrap_or(-1),
    };
    Some((device, m))
}

/// `Total Allocated` after event `i`, if it is an accelerator's allocator event that writes it.
pub(crate) fn accelerator_allocated(t: &Trace, i: usize) -> Option<i64> {
    sample(t, i)
        .filter(|(d, _)| d.accelerator())
        .and_then(|(_, m)| m.total_allocated)
}

impl Memory {
    pub fn of(t: &Trace) -> Memory {
        let mut events = 0;
        let mut devices: Vec<DeviceMemory> = Vec::new();
        for i in 0..t.events.len() {
            let Some((device, m)) = sample(t, i) else {
                continue;
            };
            events += 1;
            let at = match devices.iter().position(|d| d.device == device) {
                Some(at) => at,
                None => {
                    devices.push(DeviceMemory {
                        device,
                        samples: Vec::new(),
                        peak: None,
                        peak_reserved: None,
                        capacity: capacity(t, device),
                    });
                    devices.len() - 1
                }
            };
            devices[at].samples.push(Sample {
                at: t.events.start[i],
                allocated: m.total_allocated,
                reserved: m.total_reserved,
                bytes: m.bytes,
                event: i as u32,
            });
        }
        for d in &mut devices {
            d.samples.sort_by_key(|s| (s.at, s.event));
            d.peak_reserved = d.samples.iter().filter_map(|s| s.reserved).max();
            d.peak = peak(t, &d.samples);
        }
        devices.sort_by_key(|d| (!d.device.accelerator(), d.device));
        Memory { events, devices }
    }

    /// The report's summary; `steady` are the steady steps' `(number, start, end)`.
    pub fn summary(&self, t: &Trace, steady: &[(i64, i64, i64)]) -> MemorySummary {
        let origin = t.meta.span.map_or(0, |s| s.0);
        MemorySummary {
            events: self.events,
            devices: self
                .devices
                .iter()
                .map(|d| {
                    let at = d.peak.as_ref().map(|p| d.samples[p.sample].at);
                    let per_step: Vec<(u64, i64)> = steady
                        .iter()
                        .map(|&(_, start, end)| d.allocations(start, end))
                        .collect();
                    let n = per_step.len() as f64;
                    let mean = |f: fn(&(u64, i64)) -> f64| {
                        (!per_step.is_empty()).then(|| per_step.iter().map(f).sum::<f64>() / n)
                    };
                    DeviceSummary {
                        device: d.device.label(),
                        peak_allocated: d.peak.as_ref().map(|p| p.allocated),
                        peak_reserved: d.peak_reserved,
                        capacity: d.capacity,
                        op: d
                            .peak
                            .as_ref()
                            .and_then(|p| p.op)
                            .map(|op| t.name_of(op as usize).to_string()),
                        module: d.peak.as_ref().and_then(|p| p.module.clone()),
                        step: at.and_then(|at| {
                            t.steps
                                .iter()
                                .find(|s| s.start <= at && at < s.end)
                                .map(|s| s.number)
                        }),
                        at_ms: at.map(|at| (at - origin) as f64 / 1e6),
                        allocations_per_step: mean(|p| p.0 as f64),
                        allocated_bytes_per_step: mean(|p| p.1 as f64),
                    }
                })
                .collect(),
        }
    }
}

/// `totalGlobalMem` of an accelerator, matched by its id (the only device when the trace
/// describes one and the allocator gives no id).
fn capacity(t: &Trace, device: DeviceId) -> Option<u64> {
    if !device.accelerator() {
        return None;
    }
    let devices = &t.meta.devices;
    devices
        .iter()
        .find(|d| d.id == Some(device.index))
        .or_else(|| {
            devices
                .first()
                .filter(|_| devices.len() == 1 && device.index < 0)
        })
        .and_then(|d| d.total_global_mem)
}

fn peak(t: &Trace, samples: &[Sample]) -> Option<Peak> {
    let allocated = samples.iter().filter_map(|s| s.allocated).max()?;
    let sample = samples
        .iter()
        .position(|s| s.allocated == Some(allocated))?;
    let enclosing = enclosing(t, samples[sample].event as usize);
    let chain = || enclosing.into_iter().flat_map(|j| t.and_parents(j));
    let op = chain()
        .find(|&j| t.events.kind[j] == EventKind::CpuOp)
        .map(|j| j as u32);
    let mut frames: Vec<&str> = chain()
        .filter_map(|j| t.module_frame(j).map(|(name, _)| name))
        .collect();
    frames.reverse();
    Some(Peak {
        sample,
        allocated,
        op,
        module: (!frames.is_empty()).then(|| frames.join("/")),
    })
}

/// The innermost call-tree event enclosing instant event `m` on its track: the nearest nesting
/// event before it, or the first of its parents still open at `m`'s time (the events it is
/// [`Trace::nested_in`]).
fn enclosing(t: &Trace, m: usize) -> Option<usize> {
    let e = &t.events;
    let first = t.tracks[e.track[m] as usize].events.start as usize;
    let at = e.start[m];
    let nearest = (first..m).rev().find(|&j| e.kind[j].nests_on_cpu())?;
    t.and_parents(nearest)
        .find(|&j| e.start[j] <= at && at <= e.end(j))
}
