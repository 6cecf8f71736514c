//! One exclusive split of each step's wall time on the rank's GPU: busy by kind of work, idle by
//! what the GPU waited for. Every nanosecond of the step is in exactly one part, so parts sum to
//! the step; findings claim time from these parts through a [`Ledger`], which never hands out
//! the same nanosecond twice.
//!
//! Reads the model (and the window module's phase names, the metrics module's interval helpers).
//! The split is of the main device only: the GPU with the most work over the whole trace.

use crate::metrics::{in_range, merge, total, KERNEL_WAIT_NS};
use crate::model::kernels::KernelNames;
use crate::model::{CopyDirection, EventKind, HostMemory, RuntimeClass, Trace, NONE};
use crate::window::{Phase, Phases};

/// Sorted, disjoint `[start, end)` intervals in trace nanoseconds.
pub(crate) type Intervals = Vec<(i64, i64)>;

/// GPU idle after a synchronizing call ends, up to this long, is the sync's drain and refill.
pub(crate) const SYNC_REFILL_NS: i64 = 1_000_000;

/// One exclusive part of a step. Busy parts take precedence in declaration order (a collective
/// overlapped by a GEMM counts as GEMM time); idle parts likewise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// GEMM, batched matmul and convolution kernels.
    BusyMatmulConv,
    /// Softmax and fused attention kernels.
    BusyAttention,
    /// Every other compute kernel but element-wise ones.
    BusyOtherKernels,
    /// Element-wise and small reduction kernels.
    BusyElementwise,
    /// Collective kernels with no compute alongside (exposed communication).
    BusyCommunication,
    /// Memory copies with no kernel alongside.
    BusyCopies,
    /// Memsets with nothing else alongside.
    BusyMemset,
    /// Idle while the host is in a DataLoader `__next__` range.
    IdleData,
    /// Idle while the host is in a device malloc or free call.
    IdleAllocator,
    /// Idle during a synchronizing call or in the [`SYNC_REFILL_NS`] after it.
    IdleSync,
    /// Idle before the step's first GPU work and after its last (host-only time).
    IdleHostOnly,
    /// Idle mid-step before work the host had not launched yet when the GPU went idle.
    IdleLaunch,
    /// Short idle (≤ `KERNEL_WAIT_NS`) mid-step before work already queued.
    IdleKernelWait,
    /// Any other idle mid-step (waits on events or other streams).
    IdleOther,
}

impl Part {
    pub const ALL: [Part; 14] = [
        Part::BusyMatmulConv,
        Part::BusyAttention,
        Part::BusyOtherKernels,
        Part::BusyElementwise,
        Part::BusyCommunication,
        Part::BusyCopies,
        Part::BusyMemset,
        Part::IdleData,
        Part::IdleAllocator,
        Part::IdleSync,
        Part::IdleHostOnly,
        Part::IdleLaunch,
        Part::IdleKernelWait,
        Part::IdleOther,
    ];

    /// A stable snake_case id, as in the report.
    pub fn id(self) -> &'static str {
        match self {
            Part::BusyMatmulConv => "busy_matmul_conv",
            Part::BusyAttention => "busy_attention",
            Part::BusyOtherKernels => "busy_other_kernels",
            Part::BusyElementwise => "busy_elementwise",
            Part::BusyCommunication => "busy_communication_exposed",
            Part::BusyCopies => "busy_copies",
            Part::BusyMemset => "busy_memset",
            Part::IdleData => "idle_data_loading",
            Part::IdleAllocator => "idle_allocator",
            Part::IdleSync => "idle_sync",
            Part::IdleHostOnly => "idle_host_only",
            Part::IdleLaunch => "idle_launch",
            Part::IdleKernelWait => "idle_kernel_wait",
            Part::IdleOther => "idle_other",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Part::BusyMatmulConv => "GEMM / convolution",
            Part::BusyAttention => "attention (softmax, fused)",
            Part::BusyOtherKernels => "other kernels",
            Part::BusyElementwise => "element-wise kernels",
            Part::BusyCommunication => "exposed communication",
            Part::BusyCopies => "memory copies",
            Part::BusyMemset => "memsets",
            Part::IdleData => "idle: data loading",
            Part::IdleAllocator => "idle: allocator calls",
            Part::IdleSync => "idle: synchronization",
            Part::IdleHostOnly => "idle: host-only start/end",
            Part::IdleLaunch => "idle: waiting for launches",
            Part::IdleKernelWait => "idle: launch gaps",
            Part::IdleOther => "idle: other",
        }
    }

    pub(crate) fn is_idle(self) -> bool {
        self >= Part::IdleData
    }
}

/// One step's wall time split into [`Part`]s.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSplit {
    pub start: i64,
    pub end: i64,
    /// Intervals of each part, indexed like [`Part::ALL`]; together they tile `[start, end)`
    /// when the trace has a GPU, and are all empty otherwise.
    parts: Vec<Intervals>,
}

impl StepSplit {
    pub(crate) fn intervals(&self, p: Part) -> &[(i64, i64)] {
        self.parts.get(p as usize).map_or(&[], |v| v.as_slice())
    }

    pub fn ns(&self, p: Part) -> i64 {
        total(self.intervals(p))
    }

    /// Intervals of several parts together.
    pub(crate) fn intervals_of(&self, parts: &[Part]) -> Intervals {
        merge(
            parts
                .iter()
                .flat_map(|&p| self.intervals(p).iter().copied())
                .collect(),
        )
    }

    pub(crate) fn busy_ns(&self) -> i64 {
        Part::ALL
            .iter()
            .filter(|p| !p.is_idle())
            .map(|&p| self.ns(p))
            .sum()
    }

    pub fn dur(&self) -> i64 {
        self.end - self.start
    }

    /// Whether the split has any part (the trace has GPU work on the main device).
    pub(crate) fn has_gpu(&self) -> bool {
        !self.parts.is_empty()
    }
}

/// `a` minus `b`, both sorted and disjoint.
pub(crate) fn subtract(a: &[(i64, i64)], b: &[(i64, i64)]) -> Intervals {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

/// `a` ∩ `b`, both sorted and disjoint.
pub(crate) fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Intervals {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The GPU with the most work over the whole trace (the rank's own GPU).
pub fn main_device(t: &Trace) -> Option<Option<i64>> {
    let e = &t.events;
    let mut by_device: Vec<(Option<i64>, i64)> = Vec::new();
    for track in t.tracks.iter().filter(|tr| tr.gpu) {
        let ns: i64 = track
            .events
            .clone()
            .filter(|&i| e.kind[i as usize].is_gpu_work())
            .map(|i| e.dur[i as usize])
            .sum();
        match by_device.iter_mut().find(|d| d.0 == track.device) {
            Some(d) => d.1 += ns,
            None => by_device.push((track.device, ns)),
        }
    }
    by_device
        .into_iter()
        .filter(|d| d.1 > 0)
        .max_by_key(|d| (d.1, std::cmp::Reverse(d.0)))
        .map(|d| d.0)
}

/// Host-side ranges that explain GPU idle time, over the whole trace, each merged.
pub(crate) struct HostRanges {
    /// DataLoader ranges (`enumerate(DataLoader)#…__next__`, any era).
    pub data: Intervals,
    /// Device malloc and free calls.
    pub allocator: Intervals,
    /// Synchronizing calls in start order, as `(waits_from, start, end)`: the host is blocked
    /// in `[start, end)`, and waits on the GPU from `waits_from`, the start of the op that
    /// issued the call (`aten::_local_scalar_dense` copies the value, then synchronizes); each
    /// step's split decides which of them cost the GPU anything ([`sync_costs`]).
    pub sync: Vec<(i64, i64, i64)>,
}

impl HostRanges {
    pub fn of(t: &Trace) -> HostRanges {
        let e = &t.events;
        let (mut data, mut allocator, mut sync) = (Vec::new(), Vec::new(), Vec::new());
        let mut phases = Phases::new(t);
        let blocking = Blocking::of(t);
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            for i in track.events.clone().map(|i| i as usize) {
                match e.kind[i] {
                    EventKind::RuntimeCall if e.detail[i] != NONE => {
                        if blocking.blocks(t, i) {
                            sync.push(sync_call(t, i));
                        } else if matches!(
                            t.runtime_class(i),
                            RuntimeClass::Malloc | RuntimeClass::Free
                        ) {
                            allocator.push((e.start[i], e.end(i)));
                        }
                    }
                    EventKind::CpuOp | EventKind::UserAnnotation
                        if phases.of_event(t, i) == Some(Phase::DataLoading) =>
                    {
                        data.push((e.start[i], e.end(i)))
                    }
                    _ => {}
                }
            }
        }
        HostRanges {
            data: merge(data),
            allocator: merge(allocator),
            sync: {
                sync.sort_unstable();
                sync
            },
        }
    }
}

/// The runtime calls that block the host until the GPU has caught up: synchronizes, plain (not
/// `Async`) memcpys, and `cudaMemcpyAsync` into pageable memory, which CUDA returns from only once
/// the copy is done (`.cpu()`, `.item()`, `.tolist()` of a CUDA tensor).
pub(crate) struct Blocking {
    /// The copy calls whose GPU record is a device-to-pageable copy, sorted.
    readbacks: Vec<u32>,
}

impl Blocking {
    pub(crate) fn of(t: &Trace) -> Blocking {
        let e = &t.events;
        let mut readbacks: Vec<u32> = t
            .launches
            .iter()
            .filter(|l| {
                let g = l.gpu as usize;
                e.kind[g] == EventKind::Memcpy && e.detail[g] != NONE && {
                    let c = t.details.copy(e.detail[g]);
                    c.direction == CopyDirection::DeviceToHost
                        && c.host_memory == HostMemory::Pageable
                }
            })
            .map(|l| l.launch)
            .collect();
        readbacks.sort_unstable();
        Blocking { readbacks }
    }

    /// Whether event `i` is a runtime call that blocks the host like a sync.
    pub(crate) fn blocks(&self, t: &Trace, i: usize) -> bool {
        t.events.kind[i] == EventKind::RuntimeCall
            && t.events.detail[i] != NONE
            && match t.runtime_class(i) {
                RuntimeClass::Synchronize => true,
                RuntimeClass::Memcpy => {
                    !t.name_of(i).contains("Async")
                        || self.readbacks.binary_search(&(i as u32)).is_ok()
                }
                _ => false,
            }
    }
}

/// Synchronizing call `i` as `(waits_from, start, end)` (see [`HostRanges::sync`]).
fn sync_call(t: &Trace, i: usize) -> (i64, i64, i64) {
    let e = &t.events;
    let mut op = e.parent[i];
    while op != NONE && e.kind[op as usize] != EventKind::CpuOp {
        op = e.parent[op as usize];
    }
    let from = if op == NONE {
        e.start[i]
    } else {
        e.start[op as usize]
    };
    (from, e.start[i], e.end(i))
}

/// Splits each of `ranges` (`[start, end)` of the steps) on the trace's main device.
pub(crate) fn split_steps(t: &Trace, ranges: &[(i64, i64)]) -> Vec<StepSplit> {
    let Some(device) = main_device(t) else {
        return ranges
            .iter()
            .map(|&(start, end)| StepSplit {
                start,
                end,
                parts: Vec::new(),
            })
            .collect();
    };
    let host = HostRanges::of(t);
    let e = &t.events;
    // Where the device's last work ends: a sync that drains it has nothing to refill.
    let work_until = t
        .tracks
        .iter()
        .filter(|tr| tr.gpu && tr.device == device)
        .flat_map(|tr| tr.events.clone())
        .map(|i| i as usize)
        .filter(|&i| e.kind[i].is_gpu_work())
        .map(|i| e.end(i))
        .max()
        .unwrap_or(i64::MIN);
    let mut names = KernelNames::default();
    ranges
        .iter()
        .map(|&(start, end)| split_one(t, device, &host, work_until, &mut names, start, end))
        .collect()
}

fn split_one(
    t: &Trace,
    device: Option<i64>,
    host: &HostRanges,
    work_until: i64,
    names: &mut KernelNames,
    start: i64,
    end: i64,
) -> StepSplit {
    let e = &t.events;
    // Busy intervals by kind, in precedence order, and each piece of work with its launch.
    let mut busy: [Intervals; 7] = Default::default();
    let mut work: Vec<(i64, Option<i64>)> = Vec::new();
    for (k, track) in t.tracks.iter().enumerate() {
        if !track.gpu || track.device != device {
            continue;
        }
        for i in in_range(t, k, start, end) {
            let kind = e.kind[i];
            if !kind.is_gpu_work() {
                continue;
            }
            let iv = (e.start[i].max(start), e.end(i).min(end));
            if iv.1 <= iv.0 {
                continue;
            }
            let slot = match kind {
                EventKind::GpuKernel => {
                    let traits = names.of_event(t, i);
                    if traits.attention {
                        1
                    } else if traits.matmul_conv() {
                        0
                    } else if traits.elementwise {
                        3
                    } else {
                        2
                    }
                }
                EventKind::Collective => 4,
                EventKind::Memcpy => 5,
                _ => 6,
            };
            busy[slot].push(iv);
            work.push((
                e.start[i],
                t.launch_of(i as u32).map(|l| e.start[l as usize]),
            ));
        }
    }
    let mut parts: Vec<Intervals> = Vec::with_capacity(Part::ALL.len());
    let mut covered: Intervals = Vec::new();
    for iv in busy {
        let own = subtract(&merge(iv), &covered);
        covered = merge(covered.iter().chain(&own).copied().collect());
        parts.push(own);
    }
    let idle = subtract(&[(start, end)], &covered);
    // Each gap of the busy timeline, and whether the GPU was starved in it: its next work was
    // launched only after the gap began. Where that work was already queued the GPU did not wait
    // on the host, so no host call (DataLoader, allocator, sync) is blamed for the gap.
    work.sort_unstable_by_key(|w| w.0);
    let gap_of = |s: i64| {
        let k = covered.partition_point(|c| c.1 <= s);
        let gap_start = if k == 0 { start } else { covered[k - 1].1 };
        let gap_end = covered.get(k).map_or(end, |c| c.0);
        let next = work.partition_point(|w| w.0 < gap_end);
        let launched = work.get(next).and_then(|w| w.1);
        (gap_start, gap_end, launched)
    };
    let starved = |&(s, _): &(i64, i64)| {
        let (gap_start, _, launched) = gap_of(s);
        launched.is_none_or(|l| l >= gap_start)
    };
    let (mut left, queued): (Intervals, Intervals) = idle.into_iter().partition(starved);
    let sync = sync_costs(&host.sync, &covered, work_until);
    for ranges in [&host.data, &host.allocator, &sync] {
        let own = intersect(&left, ranges);
        left = subtract(&left, &own);
        parts.push(own);
    }
    left = merge(left.into_iter().chain(queued).collect());
    let (first, last) = match (covered.first(), covered.last()) {
        (Some(f), Some(l)) => (f.0, l.1),
        _ => (end, end),
    };
    let outside = subtract(&[(start, end)], &[(first, last)]);
    let host_only = intersect(&left, &outside);
    left = subtract(&left, &host_only);
    parts.push(host_only);
    // What is left lies between two pieces of work: classify it by the gap it belongs to.
    let (mut launch, mut kernel_wait, mut other) = (Vec::new(), Vec::new(), Vec::new());
    for &(s, e_) in &left {
        let (gap_start, gap_end, launched) = gap_of(s);
        match launched {
            Some(l) if l >= gap_start => launch.push((s, e_)),
            Some(_) if gap_end - gap_start <= KERNEL_WAIT_NS => kernel_wait.push((s, e_)),
            _ => other.push((s, e_)),
        }
    }
    parts.push(launch);
    parts.push(kernel_wait);
    parts.push(other);
    StepSplit { start, end, parts }
}

/// The synchronizing calls of `calls` (see [`HostRanges::sync`]) that cost the GPU something,
/// each with the [`SYNC_REFILL_NS`] after it: those that end after the step's first GPU work
/// (`covered`, the step's busy intervals) and before the device's last work ends (`work_until`),
/// and during whose wait the GPU had work to drain (busy at some time from `waits_from` to the
/// call's end). One that drains the step's last work costs the idle until the host launches
/// again (`torch.cuda.synchronize()` closing each iteration of a loop); a sync before the first
/// GPU work, after the trace's last, or with nothing queued leaves the GPU no idler.
fn sync_costs(calls: &[(i64, i64, i64)], covered: &[(i64, i64)], work_until: i64) -> Intervals {
    let (Some(first), Some(last)) = (covered.first().map(|c| c.0), covered.last().map(|c| c.1))
    else {
        return Vec::new();
    };
    // Busy at some time in `[s, e]`: the first busy interval ending after `s` starts by `e`.
    let busy_in = |s: i64, e: i64| {
        let k = covered.partition_point(|c| c.1 <= s);
        covered.get(k).is_some_and(|c| c.0 <= e)
    };
    let from = calls.partition_point(|c| c.0 < first - SYNC_REFILL_NS);
    merge(
        calls[from..]
            .iter()
            .take_while(|c| c.0 < last)
            .filter(|&&(waits, s, e)| first < e && e < work_until && busy_in(waits.min(s), e))
            .map(|&(_, s, e)| (s, e + SYNC_REFILL_NS))
            .collect(),
    )
}

/// Time already claimed by findings, per step: what makes findings exclusive. It also keeps
/// who claimed what, so that a finding can say which others already explain part of its time.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    claimed: Vec<Intervals>,
    /// Per step, each claimant (a detector id) with the intervals it claimed.
    owners: Vec<Vec<(&'static str, Intervals)>>,
}

impl Ledger {
    pub fn new(steps: usize) -> Ledger {
        Ledger {
            claimed: vec![Vec::new(); steps],
            owners: vec![Vec::new(); steps],
        }
    }

    /// Claims `intervals` of step `step` for `owner`, clipped to `[start, end)`; returns the
    /// nanoseconds newly claimed times `fraction` (the share of that time the finding says it
    /// explains). Time claimed once is never returned again, whatever the fraction.
    pub fn claim(
        &mut self,
        owner: &'static str,
        step: usize,
        range: (i64, i64),
        intervals: &[(i64, i64)],
        fraction: f64,
    ) -> f64 {
        total(&self.claim_intervals(owner, step, range, intervals)) as f64
            * fraction.clamp(0.0, 1.0)
    }

    /// Claims `intervals` of step `step` for `owner`, clipped to `[start, end)`; returns the
    /// intervals newly claimed (none claimed before): where the time a finding explains lies.
    pub(crate) fn claim_intervals(
        &mut self,
        owner: &'static str,
        step: usize,
        (start, end): (i64, i64),
        intervals: &[(i64, i64)],
    ) -> Intervals {
        let clipped = intersect(&merge(intervals.to_vec()), &[(start, end)]);
        let new = subtract(&clipped, &self.claimed[step]);
        let claimed = &mut self.claimed[step];
        *claimed = merge(claimed.iter().chain(&new).copied().collect());
        if !new.is_empty() {
            let owners = &mut self.owners[step];
            match owners.iter_mut().find(|o| o.0 == owner) {
                Some(o) => o.1 = merge(o.1.iter().chain(&new).copied().collect()),
                None => owners.push((owner, new.clone())),
            }
        }
        new
    }

    /// How much of `intervals` (clipped to `[start, end)`) each claimant already holds in step
    /// `step`, in nanoseconds, in claim order; claimants holding none of it are left out.
    pub(crate) fn held_by(
        &self,
        step: usize,
        (start, end): (i64, i64),
        intervals: &[(i64, i64)],
    ) -> Vec<(&'static str, i64)> {
        let clipped = intersect(&merge(intervals.to_vec()), &[(start, end)]);
        self.owners[step]
            .iter()
            .map(|(owner, held)| (*owner, total(&intersect(held, &clipped))))
            .filter(|o| o.1 > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_and_intersect_interval_lists() {
        let a = vec![(0, 10), (20, 30)];
        let b = vec![(5, 22), (25, 26)];
        assert_eq!(subtract(&a, &b), vec![(0, 5), (22, 25), (26, 30)]);
        assert_eq!(intersect(&a, &b), vec![(5, 10), (20, 22), (25, 26)]);
        assert_eq!(subtract(&a, &[]), a);
        assert_eq!(intersect(&a, &[]), vec![]);
    }

    #[test]
    fn only_syncs_with_work_to_drain_and_work_after_in_the_trace_cost_anything() {
        let ms = SYNC_REFILL_NS;
        // The GPU busy 100..200 and 300..400.
        let busy = vec![(100, 200), (300, 400)];
        let calls = vec![
            (50, 50, 90),    // before the first work, nothing queued
            (150, 150, 200), // waits for the first work, more follows: costs
            (180, 210, 230), // its op (a copy, then the sync) waited on the first work: costs
            (220, 220, 250), // the GPU already idle: returns at once
            (350, 350, 410), // waits for the step's last work
        ];
        // Nothing follows in the trace: the last sync drains the GPU for good.
        assert_eq!(sync_costs(&calls, &busy, 400), vec![(150, 230 + ms)]);
        // The next step's work follows: the host launches it only once the sync returns (the
        // two refills overlap).
        assert_eq!(sync_costs(&calls, &busy, 5_000), vec![(150, 410 + ms)]);
        assert_eq!(sync_costs(&calls, &[], 5_000), vec![]);
    }

    #[test]
    fn the_ledger_never_hands_out_time_twice() {
        let mut l = Ledger::new(1);
        assert_eq!(l.claim("a", 0, (0, 100), &[(0, 40)], 1.0), 40.0);
        // Overlaps the first claim by 20: only 20 ns are new, and half of them are claimed.
        assert_eq!(l.claim("b", 0, (0, 100), &[(20, 60)], 0.5), 10.0);
        // Outside the step: clipped away.
        assert_eq!(l.claim("c", 0, (0, 100), &[(100, 200)], 1.0), 0.0);
        assert_eq!(total(&l.claimed[0]), 60);
        // Who holds what of 30..70: "a" 10 ns (30..40), "b" 20 ns (40..60), "c" nothing.
        assert_eq!(
            l.held_by(0, (0, 100), &[(30, 70)]),
            vec![("a", 10), ("b", 20)]
        );
    }
}
