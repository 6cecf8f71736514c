//! What a flagged window holds, as summary lines: the GPU's and the host's metrics, memory, and
//! the top modules, operators and kernels with their times (each line with the importance the
//! budget drops it by, `line::Line`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::line::{cut, ms, Line};
use crate::analysis::Analysis;
use crate::metrics::measure;
use crate::model::{EventKind, Trace};
use crate::window::Window;

/// Operators, kernels and modules listed per window (the first [`KEEP_FIRST`] are more important).
const TOP: usize = 6;
const KEEP_FIRST: usize = 3;

/// The lines of what window `w` holds: metrics, then modules, operators and kernels.
pub(super) fn window_lines(a: &Analysis<'_>, w: &Window) -> Vec<Line> {
    let mut lines = metric_lines(a.trace, w);
    lines.extend(ranked_lines(
        "Module",
        modules(a.trace, w),
        "in the window",
        3,
    ));
    lines.extend(ranked_lines("Operator", operators(a.trace, w), "total", 2));
    lines.extend(ranked_lines(
        "Kernel",
        kernels(a, w),
        "GPU time launched from the window",
        2,
    ));
    lines
}

fn metric_lines(t: &Trace, w: &Window) -> Vec<Line> {
    let m = measure(t, w.start, w.end);
    let mut out = Vec::new();
    if let Some(d) = m.main_device() {
        out.push(Line {
            importance: 3,
            text: format!(
                "GPU {}: busy {:.3} ms ({:.0}% of the window; compute {:.3}, communication {:.3} of which exposed {:.3}, memcpy {:.3}, memset {:.3}); idle {:.3} ms: before first work {:.3}, after last work {:.3}, waiting for the host {:.3}, waiting on queued kernels {:.3}, other {:.3}.",
                d.device.map_or("?".to_string(), |x| x.to_string()),
                ms(d.busy),
                100.0 * d.busy as f64 / (m.dur().max(1)) as f64,
                ms(d.compute),
                ms(d.communication),
                ms(d.communication_exposed),
                ms(d.memcpy),
                ms(d.memset),
                ms(d.idle),
                ms(d.before_first_work),
                ms(d.after_last_work),
                ms(d.idle_host_wait),
                ms(d.idle_kernel_wait),
                ms(d.idle_other)
            ),
        });
    }
    let mut host = format!(
        "Host: {} kernels ({} under 10 µs, {:.3} ms), {} launch calls ({:.3} ms",
        m.kernels,
        m.short_kernels,
        ms(m.kernel_ns),
        m.launch_calls,
        ms(m.launch_call_ns)
    );
    if let Some(d) = m.launch_delay_median_ns {
        let _ = write!(host, ", median launch delay {:.1} µs", d as f64 / 1e3);
    }
    let _ = write!(
        host,
        "), {} synchronize calls ({:.3} ms, GPU idle {:.3} ms after them), {} aten::item calls, DataLoader {:.3} ms.",
        m.sync_calls,
        ms(m.sync_ns),
        ms(m.idle_after_sync_ns),
        m.item_calls,
        ms(m.dataloader_ns)
    );
    out.push(Line {
        importance: 3,
        text: host,
    });
    let mut mem = String::new();
    for c in &m.copies {
        let _ = write!(
            mem,
            "{} {:?} copies ({:?} host memory): {} bytes, {:.3} ms; ",
            c.count,
            c.direction,
            c.host_memory,
            c.bytes,
            ms(c.ns)
        );
    }
    if m.mallocs + m.frees > 0 || m.peak_allocated.is_some() {
        let _ = write!(mem, "{} device mallocs, {} frees", m.mallocs, m.frees);
        if let Some(p) = m.peak_allocated {
            let _ = write!(mem, ", peak allocated {:.1} MiB", p as f64 / 1048576.0);
        }
    }
    if !mem.is_empty() {
        out.push(Line {
            importance: 4,
            text: format!("Memory: {}.", mem.trim_end_matches("; ")),
        });
    }
    out
}

/// Name → (total ns, count), ranked by time, then name.
fn ranked(totals: BTreeMap<&str, (i64, u64)>) -> Vec<(String, i64, u64)> {
    let mut v: Vec<(String, i64, u64)> = totals
        .into_iter()
        .map(|(n, (ns, c))| (n.to_string(), ns, c))
        .collect();
    v.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    v.truncate(TOP);
    v
}

/// The ranked items as lines: the first [`KEEP_FIRST`] at importance `first`, the rest at 4.
fn ranked_lines(what: &str, items: Vec<(String, i64, u64)>, unit: &str, first: u8) -> Vec<Line> {
    items
        .into_iter()
        .enumerate()
        .map(|(k, (name, ns, count))| Line {
            importance: if k < KEEP_FIRST { first } else { 4 },
            text: format!(
                "{what} #{}: {} — {:.3} ms {unit}, {count}×",
                k + 1,
                cut(&name),
                ms(ns)
            ),
        })
        .collect()
}

/// The events of the CPU tracks that start in the window.
fn cpu_events<'t>(t: &'t Trace, w: &Window) -> impl Iterator<Item = usize> + 't {
    let (from, to) = (w.start, w.end);
    t.tracks.iter().filter(|tr| !tr.gpu).flat_map(move |tr| {
        let r = tr.events.start as usize..tr.events.end as usize;
        let starts = &t.events.start[r.clone()];
        let a = r.start + starts.partition_point(|&s| s < from);
        let b = r.start + starts.partition_point(|&s| s < to);
        a..b
    })
}

/// Outermost CPU operators starting in the window, by total time.
fn operators(t: &Trace, w: &Window) -> Vec<(String, i64, u64)> {
    let e = &t.events;
    let mut totals: BTreeMap<&str, (i64, u64)> = BTreeMap::new();
    for i in cpu_events(t, w) {
        let p = e.parent[i];
        let nested = p != crate::model::NONE && e.kind[p as usize] == EventKind::CpuOp;
        if e.kind[i] == EventKind::CpuOp && !nested {
            let v = totals.entry(t.name_of(i)).or_default();
            v.0 += e.dur[i];
            v.1 += 1;
        }
    }
    ranked(totals)
}

fn is_module(t: &Trace, i: usize) -> bool {
    match t.events.kind[i] {
        EventKind::UserAnnotation => !t.name_of(i).starts_with("ProfilerStep#"),
        EventKind::PythonFunction => t.name_of(i).starts_with("nn.Module: "),
        _ => false,
    }
}

/// Annotated ranges and `nn.Module` frames around the window's CPU work: those starting in it
/// and the enclosing ones, by their time inside the window.
fn modules(t: &Trace, w: &Window) -> Vec<(String, i64, u64)> {
    let e = &t.events;
    let mut seen = std::collections::BTreeSet::new();
    for i in cpu_events(t, w) {
        let mut j = i;
        loop {
            if is_module(t, j) && !seen.insert(j) {
                break;
            }
            let p = e.parent[j];
            if p == crate::model::NONE {
                break;
            }
            j = p as usize;
        }
    }
    let mut totals: BTreeMap<&str, (i64, u64)> = BTreeMap::new();
    for &i in seen.iter().filter(|&&i| is_module(t, i)) {
        let inside = e.end(i).min(w.end) - e.start[i].max(w.start);
        let v = totals.entry(t.name_of(i)).or_default();
        v.0 += inside.max(0);
        v.1 += 1;
    }
    ranked(totals)
}

/// The runtime calls that held the host longest in window `w` (a blocking copy, a sync, a slow
/// first launch), each with its longest call and the operator around that call: what an
/// unexplained window's diagnosis needs, since no rule's evidence events name them.
pub(super) fn host_call_lines(t: &Trace, w: &Window) -> Vec<Line> {
    let e = &t.events;
    // Name → (total ns, count, the longest call).
    let mut calls: BTreeMap<&str, (i64, u64, usize)> = BTreeMap::new();
    for i in cpu_events(t, w).filter(|&i| e.kind[i] == EventKind::RuntimeCall) {
        let v = calls.entry(t.name_of(i)).or_insert((0, 0, i));
        v.0 += e.dur[i];
        v.1 += 1;
        if e.dur[i] > e.dur[v.2] {
            v.2 = i;
        }
    }
    let mut ranked: Vec<_> = calls.into_iter().collect();
    ranked.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then_with(|| x.0.cmp(y.0)));
    ranked
        .into_iter()
        .take(KEEP_FIRST)
        .enumerate()
        .map(|(k, (name, (ns, count, longest)))| {
            let mut text = format!(
                "Runtime call #{}: {} — {:.3} ms total, {count}×, the longest {:.3} ms",
                k + 1,
                cut(name),
                ms(ns),
                ms(e.dur[longest])
            );
            let mut parents = t.and_parents(longest).skip(1);
            if let Some(op) = parents.find(|&j| e.kind[j] == EventKind::CpuOp) {
                let _ = write!(text, " under {}", cut(t.name_of(op)));
            }
            // As a finding's evidence lines: kept before the window's other lines.
            Line {
                importance: 1,
                text: text + ".",
            }
        })
        .collect()
}

/// GPU work launched from the window, by kernel (or copy) name.
fn kernels(a: &Analysis<'_>, w: &Window) -> Vec<(String, i64, u64)> {
    let t = a.trace;
    let mut totals: BTreeMap<&str, (i64, u64)> = BTreeMap::new();
    for g in a.steps.launched_in(w) {
        let v = totals.entry(t.name_of(g as usize)).or_default();
        v.0 += t.events.dur[g as usize];
        v.1 += 1;
    }
    ranked(totals)
}
