//! What a trace holds, in a few numbers: the `inspect` view shared by the CLI and the web app.
//! Reads only the model and the ingest report.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::ingest::Ingested;
use crate::metrics::{merge, pct, total};
use crate::model::{EventKind, StepSource, Trace};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub format: Format,
    pub devices: Vec<DeviceLine>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    /// From the first event's start to the last event's end.
    pub span_ms: f64,
    pub steps: StepTimes,
    pub events_by_kind: BTreeMap<String, u64>,
    pub cpu_threads: usize,
    pub gpu_streams: usize,
    /// GPU work linked to the CPU call that launched it, out of all GPU work.
    pub linked_gpu_events: u64,
    pub gpu_events: u64,
    pub gpu_busy: Vec<GpuBusy>,
    pub top_kernels: Vec<KernelTime>,
    /// CPU operators (`cpu_op`) by total time, with their self time (minus nested operators).
    pub top_operators: Vec<OperatorTime>,
    pub skipped: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Format {
    pub container: crate::model::Container,
    pub era: crate::model::Era,
    pub era_label: String,
    pub schema_version: Option<String>,
    pub gzip: bool,
    pub input_bytes: u64,
    pub json_bytes: u64,
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceLine {
    pub id: Option<i64>,
    pub name: String,
    pub memory_gib: Option<f64>,
    pub compute_capability: Option<String>,
    pub sms: Option<i64>,
}

/// The steps as the Overview lists them: where they came from, their count and durations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    pub source: StepSource,
    pub count: usize,
    pub durations_ms: Vec<(i64, f64)>,
    pub mean_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuBusy {
    pub device: Option<i64>,
    pub streams: usize,
    pub events: u64,
    /// Union of kernel, memcpy and memset time on all the device's streams.
    pub busy_ms: f64,
    /// `busy_ms` over the trace span.
    pub busy_pct_of_span: f64,
    /// `busy_ms` over the device's active window (first GPU work start to last end).
    pub busy_pct_of_active: f64,
    /// Busy share (0–100) in each of [`TIMELINE_BINS`] equal slices of the trace span.
    pub timeline_pct: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTime {
    pub name: String,
    pub count: u64,
    pub total_ms: f64,
    pub mean_us: f64,
    /// Share of all kernel time.
    pub pct: f64,
    /// What an Inductor kernel's name says ("Inductor reduction fusing add_mean_mul").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperatorTime {
    pub name: String,
    pub count: u64,
    pub total_ms: f64,
    /// Total time minus the time of the operators nested in it.
    pub self_ms: f64,
    pub mean_us: f64,
}

/// How many slices of the trace span the GPU busy timeline has.
pub(crate) const TIMELINE_BINS: usize = 200;

const NS_PER_MS: f64 = 1e6;

/// Busy share (0–100) of each of `TIMELINE_BINS` equal slices of `span`, from disjoint
/// intervals (`metrics::merge`).
fn busy_timeline(merged: &[(i64, i64)], span: (i64, i64)) -> Vec<f32> {
    let (start, end) = span;
    let len = (end - start).max(1) as f64;
    let width = len / TIMELINE_BINS as f64;
    let mut busy = vec![0f64; TIMELINE_BINS];
    for &(s, e) in merged {
        let (s, e) = ((s - start) as f64, (e - start) as f64);
        let first = ((s / width) as usize).min(TIMELINE_BINS - 1);
        let last = ((e / width) as usize).min(TIMELINE_BINS - 1);
        for (b, slot) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = s.max(b as f64 * width);
            let hi = e.min((b + 1) as f64 * width);
            *slot += (hi - lo).max(0.0);
        }
    }
    busy.iter()
        .map(|b| (100.0 * b / width).min(100.0) as f32)
        .collect()
}

impl Summary {
    pub fn of(ingested: &Ingested, top: usize) -> Summary {
        let t: &Trace = &ingested.trace;
        let r = &ingested.report;
        let e = &t.events;
        let span_ns = t.meta.span.map_or(0, |(s, end)| end - s);

        let mut events_by_kind = BTreeMap::new();
        for (k, n) in t.count_by_kind() {
            events_by_kind.insert(k.label().to_string(), n as u64);
        }

        /// The GPU work of one device.
        #[derive(Default)]
        struct DeviceWork {
            streams: usize,
            events: u64,
            intervals: Vec<(i64, i64)>,
        }
        let mut per_device: BTreeMap<Option<i64>, DeviceWork> = BTreeMap::new();
        for track in t.tracks.iter().filter(|tr| tr.gpu) {
            let entry = per_device.entry(track.device).or_default();
            entry.streams += 1;
            for i in track.events.clone() {
                let i = i as usize;
                if e.kind[i].is_gpu_work() {
                    entry.events += 1;
                    entry.intervals.push((e.start[i], e.end(i)));
                }
            }
        }
        let gpu_busy = per_device
            .into_iter()
            .map(
                |(
                    device,
                    DeviceWork {
                        streams,
                        events,
                        intervals: iv,
                    },
                )| {
                    let active = iv.iter().map(|v| v.1).max().unwrap_or(0)
                        - iv.iter().map(|v| v.0).min().unwrap_or(0);
                    let merged = merge(iv);
                    let timeline_pct = busy_timeline(&merged, t.meta.span.unwrap_or((0, 0)));
                    let busy = total(&merged);
                    GpuBusy {
                        device,
                        streams,
                        events,
                        busy_ms: busy as f64 / NS_PER_MS,
                        busy_pct_of_span: pct(busy, span_ns),
                        busy_pct_of_active: pct(busy, active),
                        timeline_pct,
                    }
                },
            )
            .collect();

        let mut kernels: FxHashMap<u32, (u64, i64)> = FxHashMap::default();
        let mut kernel_total = 0i64;
        let mut gpu_events = 0u64;
        for i in t.recorded() {
            let k = e.kind[i];
            if k.is_gpu_work() {
                gpu_events += 1;
            }
            if matches!(k, EventKind::GpuKernel | EventKind::Collective) {
                let entry = kernels.entry(e.name[i]).or_default();
                entry.0 += 1;
                entry.1 += e.dur[i];
                kernel_total += e.dur[i];
            }
        }
        let mut top_kernels: Vec<KernelTime> = kernels
            .into_iter()
            .map(|(name, (count, total))| KernelTime {
                name: t.strings.get(name).to_string(),
                count,
                total_ms: total as f64 / NS_PER_MS,
                mean_us: total as f64 / count as f64 / 1e3,
                pct: if kernel_total > 0 {
                    100.0 * total as f64 / kernel_total as f64
                } else {
                    0.0
                },
                compiled: crate::model::kernels::compiled_label(t.strings.get(name)),
            })
            .collect();
        keep_largest(&mut top_kernels, top, |k| (k.total_ms, &k.name));

        let top_operators = top_operators(t, top);

        let durations_ms: Vec<(i64, f64)> = t
            .steps
            .iter()
            .map(|s| (s.number, (s.end - s.start) as f64 / NS_PER_MS))
            .collect();
        let mean_ms = (!durations_ms.is_empty())
            .then(|| durations_ms.iter().map(|d| d.1).sum::<f64>() / durations_ms.len() as f64);

        let mut linked: Vec<u32> = t.launches.iter().map(|l| l.gpu).collect();
        linked.dedup();

        Summary {
            format: Format {
                container: t.meta.container,
                era: t.meta.era,
                era_label: t.meta.era.label().to_string(),
                schema_version: t.meta.schema_version.clone(),
                gzip: r.gzip,
                input_bytes: r.input_bytes,
                json_bytes: r.json_bytes,
                truncated: r.truncated,
            },
            devices: t
                .meta
                .devices
                .iter()
                .map(|d| DeviceLine {
                    id: d.id,
                    name: d
                        .name
                        .clone()
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| "(unnamed)".into()),
                    memory_gib: d.total_global_mem.map(|b| b as f64 / (1u64 << 30) as f64),
                    compute_capability: d
                        .compute_major
                        .zip(d.compute_minor)
                        .map(|(a, b)| format!("{a}.{b}")),
                    sms: d.num_sms,
                })
                .collect(),
            rank: t.meta.rank,
            world_size: t.meta.world_size,
            backend: t.meta.backend.clone(),
            span_ms: span_ns as f64 / NS_PER_MS,
            steps: StepTimes {
                source: t.step_source,
                count: t.steps.len(),
                durations_ms,
                mean_ms,
            },
            events_by_kind,
            cpu_threads: t.tracks.iter().filter(|tr| !tr.gpu).count(),
            gpu_streams: t.tracks.iter().filter(|tr| tr.gpu).count(),
            linked_gpu_events: linked.len() as u64,
            gpu_events,
            gpu_busy,
            top_kernels,
            top_operators,
            skipped: r.skipped.clone(),
            warnings: r.warnings.clone(),
        }
    }
}

/// CPU operators by total time; self time subtracts the operators directly nested in each.
fn top_operators(t: &Trace, top: usize) -> Vec<OperatorTime> {
    let e = &t.events;
    let mut by_name: FxHashMap<u32, (u64, i64, i64)> = FxHashMap::default();
    for i in t.recorded() {
        if e.kind[i] != EventKind::CpuOp {
            continue;
        }
        let entry = by_name.entry(e.name[i]).or_default();
        entry.0 += 1;
        entry.1 += e.dur[i];
        entry.2 += e.dur[i];
        let p = e.parent[i];
        if p != crate::model::NONE && e.kind[p as usize] == EventKind::CpuOp {
            by_name.entry(e.name[p as usize]).or_default().2 -= e.dur[i];
        }
    }
    let mut ops: Vec<OperatorTime> = by_name
        .into_iter()
        .filter(|(_, (count, _, _))| *count > 0)
        .map(|(name, (count, total, own))| OperatorTime {
            name: t.strings.get(name).to_string(),
            count,
            total_ms: total as f64 / NS_PER_MS,
            self_ms: own.max(0) as f64 / NS_PER_MS,
            mean_us: total as f64 / count as f64 / 1e3,
        })
        .collect();
    keep_largest(&mut ops, top, |o| (o.total_ms, &o.name));
    ops
}

/// Keeps the `top` rows with the largest total time, largest first (ties by name).
fn keep_largest<T>(rows: &mut Vec<T>, top: usize, key: impl Fn(&T) -> (f64, &String)) {
    rows.sort_by(|a, b| {
        let (a, b) = (key(a), key(b));
        b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1))
    });
    rows.truncate(top);
}

#[cfg(test)]
mod tests {
    use super::{busy_timeline, TIMELINE_BINS};
    use crate::metrics::{merge, union_ns};

    #[test]
    fn the_busy_timeline_spreads_each_interval_over_the_slices_it_covers() {
        // A span of 200 ns: one slice per nanosecond.
        let t = busy_timeline(
            &merge(vec![(10, 12), (11, 13), (150, 200), (199, 400)]),
            (0, 200),
        );
        assert_eq!(t.len(), TIMELINE_BINS);
        assert_eq!(&t[9..14], &[0.0, 100.0, 100.0, 100.0, 0.0]);
        assert!(t[150..].iter().all(|&b| b == 100.0));
        // Half a slice busy.
        let t = busy_timeline(&merge(vec![(0, 1)]), (0, 400));
        assert_eq!(t[0], 50.0);
        assert!(t[1..].iter().all(|&b| b == 0.0));
    }

    #[test]
    fn busy_time_is_the_union_of_overlapping_intervals() {
        assert_eq!(union_ns(vec![(0, 10), (5, 15), (20, 30), (30, 31)]), 26);
        assert_eq!(union_ns(vec![(5, 5)]), 0);
        assert_eq!(union_ns(vec![]), 0);
    }
}
