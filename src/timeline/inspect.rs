//! What the timeline tells about one slice (its details, stack and flows) and name search.

use serde::{Deserialize, Serialize};

use crate::graphs;
use crate::model::{EventKind, Trace, NONE};

use super::layout::Layout;

/// A slice's place: enough for a front end to move to it and select it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Place {
    pub event: u32,
    pub name: String,
    pub start: i64,
    pub dur: i64,
    /// Its lane's label (thread or stream) and group's label (process or GPU).
    pub lane: String,
    pub group: String,
}

/// Everything the details panel shows of one slice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Details {
    pub place: Place,
    pub category: String,
    pub kind: String,
    /// Duration minus its direct children's (CPU call tree); the duration where it has none.
    pub self_time: i64,
    /// The arguments kept by the model, as `(name, value)`.
    pub args: Vec<(String, String)>,
    /// Enclosing slices, outermost first.
    pub stack: Vec<Place>,
    /// The CPU launch that queued this GPU work.
    pub launched_by: Option<Place>,
    /// The GPU work this CPU launch queued.
    pub launched: Vec<Place>,
    /// For a kernel a graph replayed, or a graph launch: which graph launch, of how many kernels
    /// ("launched by graph launch 3 of 70 (of 2 kernels)").
    pub graph: Option<String>,
}

pub fn place(t: &Trace, layout: &Layout, event: u32) -> Place {
    let i = event as usize;
    let row = layout.row_of[i];
    let (lane, group) = if row == u32::MAX {
        (String::new(), String::new())
    } else {
        let lane = layout.lane_of_row(row);
        let group = layout
            .groups
            .iter()
            .find(|g| g.lanes.contains(&(lane as u32)))
            .map_or_else(String::new, |g| g.label.clone());
        (layout.lanes[lane].label.clone(), group)
    };
    Place {
        event,
        name: t.name_of(i).to_string(),
        start: t.events.start[i],
        dur: t.events.dur[i],
        lane,
        group,
    }
}

pub fn details(t: &Trace, layout: &Layout, event: u32) -> Details {
    let e = &t.events;
    let i = event as usize;
    let mut stack = Vec::new();
    let mut parent = e.parent[i];
    while parent != NONE {
        stack.push(place(t, layout, parent));
        parent = e.parent[parent as usize];
    }
    stack.reverse();
    let launch = t.launch_of(event);
    let launched_by = launch.map(|l| place(t, layout, l));
    let launched = layout
        .launched_by(event)
        .map(|g| place(t, layout, g))
        .collect();
    Details {
        place: place(t, layout, event),
        category: t.strings.get(e.cat[i]).to_string(),
        kind: e.kind[i].label().to_string(),
        self_time: self_time(t, event),
        args: args(t, event),
        stack,
        launched_by,
        launched,
        graph: graph(t, event, launch),
    }
}

/// The graph launch `event` is, or that replayed it (`launch`), said as [`Details::graph`].
fn graph(t: &Trace, event: u32, launch: Option<u32>) -> Option<String> {
    let (g, by) = match graphs::launch_of(t, event) {
        Some(g) => (g, ""),
        None => (graphs::launch_of(t, launch?)?, "launched by "),
    };
    Some(format!(
        "{by}graph launch {} of {} (of {} kernels)",
        g.ordinal, g.launches, g.kernels
    ))
}

/// The duration less the direct children's durations (the events whose `parent` it is).
fn self_time(t: &Trace, event: u32) -> i64 {
    let e = &t.events;
    let i = event as usize;
    if !e.kind[i].nests_on_cpu() {
        return e.dur[i];
    }
    let track = &t.tracks[e.track[i] as usize];
    let end = e.end(i);
    let children: i64 = (i + 1..track.events.end as usize)
        .take_while(|&k| e.start[k] <= end)
        .filter(|&k| e.parent[k] == event)
        .map(|k| e.dur[k])
        .sum();
    (e.dur[i] - children).max(0)
}

fn args(t: &Trace, event: u32) -> Vec<(String, String)> {
    let e = &t.events;
    let i = event as usize;
    let d = e.detail[i];
    let mut out = Vec::new();
    if d == NONE {
        return out;
    }
    let mut put = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            out.push((name.to_string(), v));
        }
    };
    let dims = |v: [u32; 3]| format!("[{}, {}, {}]", v[0], v[1], v[2]);
    match e.kind[i] {
        EventKind::GpuKernel | EventKind::Collective => {
            let k = t.details.kernel(d);
            put("device", k.device.map(|v| v.to_string()));
            put("stream", k.stream.map(|v| v.to_string()));
            put("correlation", k.correlation.map(|v| v.to_string()));
            put("grid", k.grid.map(dims));
            put("block", k.block.map(dims));
            put(
                "registers per thread",
                k.registers_per_thread.map(|v| v.to_string()),
            );
            put("shared memory", k.shared_memory.map(|v| format!("{v} B")));
            put("occupancy %", k.occupancy_pct.map(|v| format!("{v:.1}")));
        }
        EventKind::Memcpy | EventKind::Memset => {
            let c = t.details.copy(d);
            put("device", c.device.map(|v| v.to_string()));
            put("stream", c.stream.map(|v| v.to_string()));
            put("correlation", c.correlation.map(|v| v.to_string()));
            put("bytes", c.bytes.map(|v| v.to_string()));
            put(
                "bandwidth GB/s",
                c.bandwidth_gbps.map(|v| format!("{v:.1}")),
            );
            put("direction", Some(format!("{:?}", c.direction)));
            put("host memory", Some(format!("{:?}", c.host_memory)));
        }
        EventKind::RuntimeCall | EventKind::GpuSync => {
            let r = t.details.runtime(d);
            put("class", Some(format!("{:?}", r.class)));
            put("correlation", r.correlation.map(|v| v.to_string()));
        }
        EventKind::CpuOp | EventKind::UserAnnotation => {
            let o = t.details.op(d);
            put("external id", o.external_id.map(|v| v.to_string()));
            put("sequence number", o.sequence_number.map(|v| v.to_string()));
            put(
                "input dims",
                o.input_dims.map(|s| t.strings.get(s).to_string()),
            );
            put(
                "input types",
                o.input_types.map(|s| t.strings.get(s).to_string()),
            );
        }
        _ => {}
    }
    out
}

/// The slices whose name contains `text` (ignoring case), in start order. Each distinct name
/// is matched once, then the name column is scanned.
pub fn search(t: &Trace, layout: &Layout, text: &str) -> Vec<u32> {
    let needle = text.trim().to_lowercase();
    if needle.is_empty() {
        return Vec::new();
    }
    let matching: Vec<bool> = (0..t.strings.len() as u32)
        .map(|id| t.strings.get(id).to_lowercase().contains(&needle))
        .collect();
    let mut found: Vec<u32> = (t.recorded().map(|i| i as u32))
        .filter(|&i| {
            matching[t.events.name[i as usize] as usize] && layout.row_of[i as usize] != u32::MAX
        })
        .collect();
    found.sort_by_key(|&i| (t.events.start[i as usize], i));
    found
}
