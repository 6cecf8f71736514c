//! Numbers about one time range of a trace (a step or a window): where the GPU time went, why
//! the GPU was idle, how work was launched, synchronizations, copies, allocations, collectives.
//!
//! Reads only the model (and the window module's phase names). Definitions follow Holistic Trace
//! Analysis where it has one; each field says how it is computed.

use rustc_hash::FxHashMap;

use crate::memory;
use crate::model::{CopyDirection, EventKind, HostMemory, RuntimeClass, StrId, Trace, NONE};
use crate::window::{phase_of, Phase};

/// `part` as a percentage of `whole` (0 when `whole` is empty).
pub fn pct(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// Mean, spread and range of a set of times, in milliseconds (steps, iterations).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    pub n: usize,
    pub mean_ms: f64,
    /// Sample standard deviation (0 with one value).
    pub sd_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n.max(1) as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Spread {
            n,
            mean_ms: mean,
            sd_ms: var.sqrt(),
            min_ms: values.iter().copied().fold(f64::INFINITY, f64::min),
            max_ms: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// `mean ± sd ms (min–max)`; the mean alone for one value.
    pub fn line(&self) -> String {
        if self.n > 1 {
            format!(
                "{:.3} ± {:.3} ms ({:.3}–{:.3})",
                self.mean_ms, self.sd_ms, self.min_ms, self.max_ms
            )
        } else {
            format!("{:.3} ms", self.mean_ms)
        }
    }
}

/// Kernels shorter than this are "short" (the launch overhead is of the same order).
pub(crate) const SHORT_KERNEL_NS: i64 = 10_000;
/// An idle gap no longer than this, before work that was already queued, is launch overhead
/// between consecutive kernels ("kernel wait").
pub(crate) const KERNEL_WAIT_NS: i64 = 50_000;

/// Time on one GPU within the range, in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceTime {
    pub device: Option<i64>,
    /// Union of all GPU work (kernels, collectives, copies, memsets) on any stream.
    pub busy: i64,
    /// Union of compute kernels (not collectives).
    pub compute: i64,
    /// Union of collective kernels.
    pub communication: i64,
    /// Collective time not overlapped by compute kernels on other streams.
    pub communication_exposed: i64,
    pub memcpy: i64,
    pub memset: i64,
    /// The range minus `busy`.
    pub idle: i64,
    /// Idle from the range's start to the first GPU work (all of it when there is none): the
    /// host prepares the step (data loading, preprocessing) before the GPU gets anything.
    pub(crate) before_first_work: i64,
    /// Idle from the end of the last GPU work to the range's end.
    pub(crate) after_last_work: i64,
    /// Idle before work that the CPU had not launched yet when the GPU went idle: the host is
    /// the bottleneck.
    pub(crate) idle_host_wait: i64,
    /// Short idle (≤ `KERNEL_WAIT_NS`) before work that was already launched: launch overhead
    /// between consecutive kernels.
    pub(crate) idle_kernel_wait: i64,
    /// Idle between two pieces of work not attributed to either (waits on events or other
    /// streams).
    pub(crate) idle_other: i64,
}

impl DeviceTime {
    /// From the first GPU work to the end of the last, within the range.
    pub fn active(&self, range: i64) -> i64 {
        (range - self.before_first_work - self.after_last_work).max(0)
    }
}

/// Time on one GPU stream within the range, in nanoseconds (work on one stream does not
/// overlap, so these are sums of clipped durations).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamTime {
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub compute: i64,
    pub communication: i64,
    pub memcpy: i64,
    pub memset: i64,
    /// The range minus the stream's work.
    pub idle: i64,
}

/// Copies of one direction and host memory kind.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyStats {
    pub direction: CopyDirection,
    pub host_memory: HostMemory,
    pub count: u64,
    pub bytes: u64,
    pub ns: i64,
}

/// Everything measured over one range: per device (`devices`) and per stream (`streams`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RangeMetrics {
    pub start: i64,
    pub end: i64,
    pub devices: Vec<DeviceTime>,
    pub streams: Vec<StreamTime>,
    pub kernels: u64,
    pub short_kernels: u64,
    pub kernel_ns: i64,
    /// Of `kernels`, those a graph launch (`cudaGraphLaunch`, `hipGraphLaunch`) replayed.
    pub graph_kernels: u64,
    /// `kernels` as the host launched them: a kernel launched alone counts one, and so does each
    /// graph replay (its kernels cost no launch of their own).
    pub launched: u64,
    /// Of `launched`, those shorter than `SHORT_KERNEL_NS` (a replay: its kernels in all).
    pub short_launched: u64,
    /// Kernel-launch runtime calls (cudaLaunchKernel, hipLaunchKernel, graph launches, …).
    pub launch_calls: u64,
    pub(crate) launch_call_ns: i64,
    /// Median of kernel start minus its launch call's start (of a graph replay, its first
    /// kernel's).
    pub(crate) launch_delay_median_ns: Option<i64>,
    pub sync_calls: u64,
    pub(crate) sync_ns: i64,
    /// `aten::item` and `aten::_local_scalar_dense` calls (each one a device-to-host sync).
    pub(crate) item_calls: u64,
    /// Ops whose output size depends on the data (`aten::nonzero`, `aten::masked_select`,
    /// `aten::unique…`): each waits for the GPU to know the size.
    pub(crate) data_dependent_calls: u64,
    /// GPU idle time in the 1 ms after each synchronize call ended.
    pub(crate) idle_after_sync_ns: i64,
    /// Time in DataLoader ranges (`enumerate(DataLoader)#…__next__`).
    pub dataloader_ns: i64,
    pub copies: Vec<CopyStats>,
    pub mallocs: u64,
    pub frees: u64,
    /// CPU time in device malloc and free calls.
    pub(crate) alloc_call_ns: i64,
    /// Highest `Total Allocated` reported by the caching allocator for an accelerator, in bytes
    /// (`memory::accelerator_allocated`).
    pub peak_allocated: Option<i64>,
}

impl RangeMetrics {
    /// Adds one copy to the statistics of its direction and host memory kind.
    fn count_copy(&mut self, c: &crate::model::CopyDetail, ns: i64) {
        let stats = match self
            .copies
            .iter_mut()
            .position(|s| s.direction == c.direction && s.host_memory == c.host_memory)
        {
            Some(k) => &mut self.copies[k],
            None => {
                self.copies.push(CopyStats {
                    direction: c.direction,
                    host_memory: c.host_memory,
                    count: 0,
                    bytes: 0,
                    ns: 0,
                });
                self.copies.last_mut().expect("just pushed")
            }
        };
        stats.count += 1;
        stats.bytes += c.bytes.unwrap_or(0);
        stats.ns += ns;
    }

    pub fn dur(&self) -> i64 {
        self.end - self.start
    }

    /// The device with the most GPU work (the rank's own GPU).
    pub fn main_device(&self) -> Option<&DeviceTime> {
        self.devices.iter().max_by_key(|d| d.busy)
    }
}

/// Sorted-or-not intervals merged into a sorted list of disjoint ones.
pub(crate) fn merge(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(iv.len());
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Length of the union of `[start, end)` intervals.
pub fn union_ns(iv: Vec<(i64, i64)>) -> i64 {
    total(&merge(iv))
}

/// Total length of disjoint intervals.
pub(crate) fn total(iv: &[(i64, i64)]) -> i64 {
    iv.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two merged interval lists.
fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut sum) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            sum += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

/// Indices of a track's events that intersect `[start, end)`.
pub(crate) fn in_range(t: &Trace, track: usize, start: i64, end: i64) -> std::ops::Range<usize> {
    let r = t.tracks[track].events.clone();
    let starts = &t.events.start[r.start as usize..r.end as usize];
    // Events are sorted by start; a long event may start before the range and still reach
    // into it, so look back over the longest event of the track at most.
    let hi = r.start as usize + starts.partition_point(|&s| s < end);
    let mut lo = r.start as usize + starts.partition_point(|&s| s < start);
    while lo > r.start as usize && t.events.end(lo - 1) > start {
        lo -= 1;
    }
    lo..hi
}

/// Measures the range `[start, end)`.
pub fn measure(t: &Trace, start: i64, end: i64) -> RangeMetrics {
    let e = &t.events;
    // Whether a name is a DataLoader range, once per name (ops repeat their names).
    let mut loading_names: FxHashMap<StrId, bool> = FxHashMap::default();
    let mut loading = |name: StrId| {
        *loading_names
            .entry(name)
            .or_insert_with(|| phase_of(t.strings.get(name)) == Some(Phase::DataLoading))
    };
    let clip = |i: usize| (e.start[i].max(start), e.end(i).min(end));
    let mut m = RangeMetrics {
        start,
        end,
        ..RangeMetrics::default()
    };

    // GPU side, per device.
    let mut devices: Vec<Option<i64>> = t
        .tracks
        .iter()
        .filter(|tr| tr.gpu)
        .map(|tr| tr.device)
        .collect();
    devices.sort_unstable();
    devices.dedup();
    let mut delays = Vec::new();
    // Per graph launch: its kernels' time in the range, and the first one's launch delay.
    let mut replays: FxHashMap<u32, (i64, i64)> = FxHashMap::default();
    for device in devices {
        let mut all = Vec::new();
        let mut compute = Vec::new();
        let mut comm = Vec::new();
        let mut memcpy = Vec::new();
        let mut memset = Vec::new();
        // (start, end, launch start) of each piece of work, for idle attribution.
        let mut work: Vec<(i64, i64, Option<i64>)> = Vec::new();
        for (k, track) in t.tracks.iter().enumerate() {
            if !track.gpu || track.device != device {
                continue;
            }
            let mut stream = StreamTime {
                device,
                stream: track.stream,
                ..StreamTime::default()
            };
            for i in in_range(t, k, start, end) {
                let kind = e.kind[i];
                if !kind.is_gpu_work() {
                    continue;
                }
                let iv = clip(i);
                if iv.1 < iv.0 {
                    continue;
                }
                *match kind {
                    EventKind::GpuKernel => &mut stream.compute,
                    EventKind::Collective => &mut stream.communication,
                    EventKind::Memcpy => &mut stream.memcpy,
                    _ => &mut stream.memset,
                } += iv.1 - iv.0;
                all.push(iv);
                let launch_call = t.launch_of(i as u32);
                let launch = launch_call.map(|l| e.start[l as usize]);
                work.push((e.start[i], e.end(i), launch));
                match kind {
                    EventKind::GpuKernel | EventKind::Collective => {
                        if kind == EventKind::GpuKernel {
                            compute.push(iv);
                        } else {
                            comm.push(iv);
                        }
                        if e.start[i] >= start {
                            m.kernels += 1;
                            m.kernel_ns += e.dur[i];
                            let short = e.dur[i] < SHORT_KERNEL_NS;
                            m.short_kernels += u64::from(short);
                            let delay = launch.map(|l| e.start[i] - l);
                            match launch_call.filter(|&l| t.is_graph_launch(l as usize)) {
                                Some(graph) => {
                                    m.graph_kernels += 1;
                                    let r = replays.entry(graph).or_insert((0, i64::MAX));
                                    r.0 += e.dur[i];
                                    r.1 = r.1.min(delay.unwrap_or(i64::MAX));
                                }
                                None => {
                                    m.launched += 1;
                                    m.short_launched += u64::from(short);
                                    delays.extend(delay);
                                }
                            }
                        }
                    }
                    EventKind::Memcpy => {
                        memcpy.push(iv);
                        if e.start[i] >= start && e.detail[i] != NONE {
                            m.count_copy(&t.details.copy(e.detail[i]), e.dur[i]);
                        }
                    }
                    _ => memset.push(iv),
                }
            }
            stream.idle = (end - start)
                - stream.compute
                - stream.communication
                - stream.memcpy
                - stream.memset;
            m.streams.push(stream);
        }
        let all = merge(all);
        let compute = merge(compute);
        let comm = merge(comm);
        let busy = total(&all);
        let mut d = DeviceTime {
            device,
            busy,
            compute: total(&compute),
            communication: total(&comm),
            communication_exposed: total(&comm) - overlap(&comm, &compute),
            memcpy: total(&merge(memcpy)),
            memset: total(&merge(memset)),
            idle: (end - start) - busy,
            ..DeviceTime::default()
        };
        attribute_idle(&mut d, &all, &mut work, start, end);
        m.devices.push(d);
    }
    m.launched += replays.len() as u64;
    m.short_launched += replays.values().filter(|r| r.0 < SHORT_KERNEL_NS).count() as u64;
    delays.extend(replays.values().map(|r| r.1));
    delays.sort_unstable();
    m.launch_delay_median_ns = delays.get(delays.len() / 2).copied();

    // CPU side.
    let mut sync_ends = Vec::new();
    for (k, track) in t.tracks.iter().enumerate() {
        if track.gpu {
            continue;
        }
        for i in in_range(t, k, start, end) {
            if e.start[i] < start {
                continue;
            }
            match e.kind[i] {
                EventKind::RuntimeCall if e.detail[i] != NONE => {
                    match t.runtime_class(i) {
                        RuntimeClass::Launch | RuntimeClass::GraphLaunch => {
                            m.launch_calls += 1;
                            m.launch_call_ns += e.dur[i];
                        }
                        // A plain cudaMemcpy (not Async) blocks the host like a synchronize.
                        class @ (RuntimeClass::Synchronize | RuntimeClass::Memcpy)
                            if class == RuntimeClass::Synchronize
                                || !t.name_of(i).contains("Async") =>
                        {
                            m.sync_calls += 1;
                            m.sync_ns += e.dur[i];
                            sync_ends.push(e.end(i));
                        }
                        RuntimeClass::Malloc => {
                            m.mallocs += 1;
                            m.alloc_call_ns += e.dur[i];
                        }
                        RuntimeClass::Free => {
                            m.frees += 1;
                            m.alloc_call_ns += e.dur[i];
                        }
                        _ => {}
                    }
                }
                EventKind::CpuOp | EventKind::UserAnnotation => {
                    let name = t.name_of(i);
                    if name == "aten::item" || name == "aten::_local_scalar_dense" {
                        if name == "aten::item" || parent_name(t, i) != Some("aten::item") {
                            m.item_calls += 1;
                        }
                    } else if name == "aten::nonzero"
                        || name == "aten::masked_select"
                        || name.starts_with("aten::_unique")
                    {
                        m.data_dependent_calls += 1;
                    } else if loading(e.name[i])
                        && (e.parent[i] == NONE || !loading(e.name[e.parent[i] as usize]))
                    {
                        m.dataloader_ns += e.dur[i];
                    }
                }
                EventKind::Memory => {
                    if let Some(total) = memory::accelerator_allocated(t, i) {
                        m.peak_allocated = Some(m.peak_allocated.map_or(total, |p| p.max(total)));
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(d) = m.devices.iter().max_by_key(|d| d.busy).map(|d| d.device) {
        m.idle_after_sync_ns = idle_after(t, d, &sync_ends, 1_000_000, end);
    }

    m
}

fn parent_name(t: &Trace, i: usize) -> Option<&str> {
    let p = t.events.parent[i];
    (p != NONE).then(|| t.name_of(p as usize))
}

/// Splits a device's idle time into host wait, kernel wait and other, gap by gap.
fn attribute_idle(
    d: &mut DeviceTime,
    busy: &[(i64, i64)],
    work: &mut [(i64, i64, Option<i64>)],
    start: i64,
    end: i64,
) {
    work.sort_unstable_by_key(|w| w.0);
    let (Some(first), Some(last)) = (busy.first(), busy.last()) else {
        d.before_first_work = end - start;
        return;
    };
    d.before_first_work = first.0 - start;
    d.after_last_work = end - last.1;
    let mut cursor = first.1;
    let mut next_work = 0;
    for &(s, e) in &busy[1..] {
        if s > cursor {
            let gap = s - cursor;
            // The work that ends this gap: the first to start at its end.
            while next_work < work.len() && work[next_work].0 < s {
                next_work += 1;
            }
            let launched = work.get(next_work).and_then(|w| w.2);
            match launched {
                Some(l) if l >= cursor => d.idle_host_wait += gap,
                Some(_) if gap <= KERNEL_WAIT_NS => d.idle_kernel_wait += gap,
                _ => d.idle_other += gap,
            }
        }
        cursor = cursor.max(e);
    }
}

/// GPU idle time on `device` in the `window` after each of `times` (overlapping windows counted
/// once), up to `limit`.
fn idle_after(t: &Trace, device: Option<i64>, times: &[i64], window: i64, limit: i64) -> i64 {
    let spans = merge(
        times
            .iter()
            .map(|&at| (at, (at + window).min(limit)))
            .filter(|(s, e)| e > s)
            .collect(),
    );
    let mut total_idle = 0;
    for (at, end) in spans {
        let mut iv = Vec::new();
        for (k, track) in t.tracks.iter().enumerate() {
            if track.gpu && track.device == device {
                for i in in_range(t, k, at, end) {
                    if t.events.kind[i].is_gpu_work() {
                        iv.push((t.events.start[i].max(at), t.events.end(i).min(end)));
                    }
                }
            }
        }
        total_idle += (end - at) - total(&merge(iv));
    }
    total_idle
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_of_interval_lists() {
        let a = merge(vec![(0, 10), (20, 30)]);
        let b = merge(vec![(5, 25)]);
        assert_eq!(overlap(&a, &b), 10);
        assert_eq!(overlap(&a, &[]), 0);
        assert_eq!(total(&merge(vec![(0, 5), (3, 8), (10, 11)])), 9);
    }

    #[test]
    fn idle_is_attributed_by_when_the_next_work_was_launched() {
        let mut d = DeviceTime::default();
        let busy = vec![(0, 10), (20, 30), (100_000, 100_010)];
        // Work at 20 was launched at 5 (already queued: kernel wait); work at 100 000 was
        // launched at 90 000, after the GPU went idle at 30 (host wait); -50..0 comes before any
        // work and 100 010..200 000 after the last.
        let mut work = vec![
            (0, 10, Some(0)),
            (20, 30, Some(5)),
            (100_000, 100_010, Some(90_000)),
        ];
        attribute_idle(&mut d, &busy, &mut work, -50, 200_000);
        assert_eq!(
            (d.idle_kernel_wait, d.idle_host_wait, d.idle_other),
            (10, 99_970, 0)
        );
        assert_eq!((d.before_first_work, d.after_last_work), (50, 99_990));
        assert_eq!(d.active(200_050), 100_010);
    }
}
