//! Where each event is drawn: groups (a CPU process, a GPU device) of lanes (a thread, a stream)
//! of rows, and counter tracks for the memory in use.
//!
//! Rows are assigned first-fit in start order (longest first on ties): an event takes the lowest
//! row of its lane that is free at its start. For well-nested events this is exactly their
//! nesting depth; events that overlap without nesting (GPU kernels on one stream, a broken CPU
//! tree) and zero-duration events land in further rows instead of being dropped. The events of
//! one row therefore never overlap, so they are sorted by start and by end at once: a range
//! query is two binary searches.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::memory::Memory;
use crate::model::{EventKind, Trace};

/// One process's CPU threads, or one GPU's streams.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub label: String,
    pub gpu: bool,
    /// Indices into [`Layout::lanes`].
    pub lanes: Range<u32>,
    /// Indices into [`Layout::counters`]: the group's memory counters.
    pub counters: Range<u32>,
}

/// One model track (a CPU thread or a GPU stream) with its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// Index into `Trace::tracks`.
    pub track: u32,
    pub label: String,
    /// Indices into [`Layout::rows`].
    pub rows: Range<u32>,
}

/// Events that never overlap, in start (and end) order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub events: Vec<u32>,
    /// The row merged at coarse scales, for rows with many events (`lod::levels`).
    pub levels: Vec<super::lod::Level>,
}

/// A device's memory over time (`memory::Memory`): allocated, reserved, the peak.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    pub label: String,
    /// Allocated bytes, `(time, value)` in time order; the value holds until the next point.
    pub points: Vec<(i64, i64)>,
    /// Reserved bytes, the same way.
    pub reserved: Vec<(i64, i64)>,
    /// The most of either: the track's full height.
    pub max: i64,
    pub peak: Option<CounterPeak>,
}

/// The peak allocated of a counter: when, how much, and the op (and module) that reached it
/// (the trace's text). The web app's worker sends it to the page when it is clicked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterPeak {
    pub at: i64,
    pub allocated: i64,
    /// Reserved at that moment.
    pub reserved: Option<i64>,
    pub op: Option<String>,
    pub module: Option<String>,
    /// The device's memory, where recorded.
    pub capacity: Option<u64>,
}

/// The timeline's rows for one trace.
#[derive(Debug)]
pub struct Layout {
    pub groups: Vec<Group>,
    pub lanes: Vec<Lane>,
    pub rows: Vec<Row>,
    pub counters: Vec<Counter>,
    /// The row of each event; `u32::MAX` for events shown only as a counter (memory events).
    pub row_of: Vec<u32>,
    /// Launch links sorted by the CPU launch (the trace keeps them sorted by GPU event).
    pub(crate) by_launch: Vec<crate::model::Launch>,
    /// Earliest start and latest end over all events.
    pub span: (i64, i64),
}

/// Whether an event is drawn as a slice (memory events are drawn as counters instead).
fn drawn_as_slice(kind: EventKind) -> bool {
    kind != EventKind::Memory
}

impl Layout {
    pub fn new(t: &Trace) -> Layout {
        let e = &t.events;
        let mut order: Vec<u32> = (0..t.tracks.len() as u32).collect();
        order.sort_by_key(|&i| lane_key(t, i as usize));
        let mut groups: Vec<Group> = Vec::new();
        let mut lanes = Vec::new();
        let mut rows: Vec<Row> = Vec::new();
        let mut row_of = vec![u32::MAX; e.len()];
        let mut row_end: Vec<i64> = Vec::new();
        for track in order {
            let tr = &t.tracks[track as usize];
            let label = group_label(t, track as usize);
            if groups.last().is_none_or(|g| g.label != label) {
                let at = lanes.len() as u32;
                groups.push(Group {
                    label,
                    gpu: tr.gpu,
                    lanes: at..at,
                    counters: 0..0,
                });
            }
            let first_row = rows.len();
            row_end.clear();
            for i in tr.events.clone() {
                let i = i as usize;
                if !drawn_as_slice(e.kind[i]) {
                    continue;
                }
                let (start, end) = (e.start[i], e.end(i));
                let k = match row_end.iter().position(|&r| r <= start) {
                    Some(k) => k,
                    None => {
                        row_end.push(i64::MIN);
                        rows.push(Row::default());
                        row_end.len() - 1
                    }
                };
                // A zero-duration event holds its row for a nanosecond, so that another event
                // at the same instant goes to another row and each can be clicked.
                row_end[k] = end.max(start.saturating_add(1));
                rows[first_row + k].events.push(i as u32);
                row_of[i] = (first_row + k) as u32;
            }
            if rows.len() == first_row {
                // An empty lane (or one holding only counters) still shows, one row high.
                rows.push(Row::default());
            }
            lanes.push(Lane {
                track,
                label: lane_label(t, track as usize),
                rows: first_row as u32..rows.len() as u32,
            });
            let g = groups.last_mut().expect("a group was pushed for this lane");
            g.lanes.end = lanes.len() as u32;
        }
        let span = t.meta.span.unwrap_or((0, 0));
        for row in &mut rows {
            row.levels = super::lod::levels(t, &row.events, span.1 - span.0);
        }
        let counters = memory_counters(t, &mut groups);
        let mut by_launch = t.launches.clone();
        by_launch.sort_by_key(|l| (l.launch, l.gpu));
        Layout {
            groups,
            lanes,
            rows,
            counters,
            row_of,
            by_launch,
            span,
        }
    }

    /// The GPU work a CPU launch queued.
    pub fn launched_by(&self, launch: u32) -> impl Iterator<Item = u32> + '_ {
        let from = self.by_launch.partition_point(|l| l.launch < launch);
        self.by_launch[from..]
            .iter()
            .take_while(move |l| l.launch == launch)
            .map(|l| l.gpu)
    }

    /// The lane a row belongs to.
    pub fn lane_of_row(&self, row: u32) -> usize {
        self.lanes.partition_point(|l| l.rows.end <= row)
    }

    /// The event of `row` under time `t`, or else the nearest one within `slop` ns (for slices
    /// drawn wider than they are, such as zero-duration events).
    pub fn hit(&self, t: &Trace, row: u32, at: i64, slop: i64) -> Option<u32> {
        let events = &self.rows.get(row as usize)?.events;
        let e = &t.events;
        // Events of a row end in order: the first ending at or after `at - slop`.
        let i = events.partition_point(|&x| e.end(x as usize) < at.saturating_sub(slop));
        let distance = |x: u32| {
            let (s, end) = (e.start[x as usize], e.end(x as usize));
            if at < s {
                s.saturating_sub(at)
            } else {
                at.saturating_sub(end).max(0)
            }
        };
        events[i..]
            .iter()
            .take_while(|&&x| e.start[x as usize] <= at.saturating_add(slop))
            .copied()
            .min_by_key(|&x| distance(x))
            .filter(|&x| distance(x) <= slop)
    }
}

/// Display order of tracks: CPU processes, then GPU devices; within them, by thread or stream.
fn lane_key(t: &Trace, track: usize) -> (bool, i64, String, i64, String) {
    let tr = &t.tracks[track];
    let pid = t.strings.get(tr.pid);
    let tid = t.strings.get(tr.tid);
    if tr.gpu {
        (
            true,
            tr.device.unwrap_or(i64::MAX),
            String::new(),
            tr.stream.unwrap_or(i64::MAX),
            tid.to_string(),
        )
    } else {
        (
            false,
            pid.parse().unwrap_or(i64::MAX),
            pid.to_string(),
            tid.parse().unwrap_or(i64::MAX),
            tid.to_string(),
        )
    }
}

fn group_label(t: &Trace, track: usize) -> String {
    let tr = &t.tracks[track];
    if tr.gpu {
        let device = tr.device.map_or_else(|| "?".into(), |d| d.to_string());
        let name = t
            .meta
            .devices
            .iter()
            .find(|d| d.id == tr.device)
            .and_then(|d| d.name.as_deref());
        match name {
            Some(n) => format!("GPU {device} ({n})"),
            None => format!("GPU {device}"),
        }
    } else {
        let pid = t.strings.get(tr.pid);
        match tr.process_name {
            Some(n) => format!("{} {pid}", t.strings.get(n)),
            None => format!("process {pid}"),
        }
    }
}

fn lane_label(t: &Trace, track: usize) -> String {
    let tr = &t.tracks[track];
    let tid = t.strings.get(tr.tid);
    match (tr.gpu, tr.stream, tr.thread_name) {
        (true, Some(s), _) => format!("stream {s}"),
        (_, _, Some(n)) => format!("{} {tid}", t.strings.get(n)),
        (true, None, None) => tid.to_string(),
        (false, _, None) => format!("thread {tid}"),
    }
}

/// One counter per device with allocator events that carry `Total Allocated`, attached to the
/// group of that GPU (or the first CPU group for host memory and for GPUs without a group).
fn memory_counters(t: &Trace, groups: &mut [Group]) -> Vec<Counter> {
    // The group each counter shows in: its GPU's, else the first CPU process's, else the first.
    let home = |device: Option<i64>| {
        let gpu = device.and_then(|d| {
            let label = format!("GPU {d}");
            groups.iter().position(|g| {
                g.gpu && (g.label == label || g.label.starts_with(&format!("{label} (")))
            })
        });
        gpu.or_else(|| groups.iter().position(|g| !g.gpu))
            .unwrap_or(0)
    };
    let mut placed: Vec<(usize, Counter)> = Memory::of(t)
        .devices
        .into_iter()
        .filter(|d| d.peak.is_some())
        .map(|d| {
            let (points, reserved) = (d.series(false), d.series(true));
            let peak = d.peak.as_ref().map(|p| {
                let at = &d.samples[p.sample];
                CounterPeak {
                    at: at.at,
                    allocated: p.allocated,
                    reserved: at.reserved,
                    op: p.op.map(|op| t.name_of(op as usize).to_string()),
                    module: p.module.clone(),
                    capacity: d.capacity,
                }
            });
            let counter = Counter {
                label: format!("memory, {}", d.device.label()),
                max: points
                    .iter()
                    .chain(&reserved)
                    .map(|p| p.1)
                    .max()
                    .unwrap_or(0),
                points,
                reserved,
                peak,
            };
            let device = d.device.accelerator().then_some(d.device.index);
            (home(device), counter)
        })
        .collect();
    placed.sort_by_key(|(g, _)| *g);
    let mut counters = Vec::with_capacity(placed.len());
    for (g, counter) in placed {
        if let Some(group) = groups.get_mut(g) {
            if group.counters.is_empty() {
                group.counters = counters.len() as u32..counters.len() as u32;
            }
            counters.push(counter);
            group.counters.end = counters.len() as u32;
        }
    }
    counters
}
