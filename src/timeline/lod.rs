//! Level of detail: what one row shows over a time range at a given scale.
//!
//! Slices at least a pixel wide are drawn as they are. Runs of narrower slices, with gaps under
//! a pixel between them, merge into one block. Finding where a run ends is a binary search, and
//! each search moves the block's end right by more than a pixel, so one row costs
//! O(pixels × log events) however many events the range holds.

use crate::model::Trace;

/// One thing to draw in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    /// The event drawn, or the first of the merged run.
    pub event: u32,
    /// How many events the span stands for (1: a slice drawn as itself).
    pub merged: u32,
}

/// The spans of `row` (event indices in start order, never overlapping) that meet
/// `[from, to]`, at `ns_per_px` nanoseconds per pixel.
pub fn spans(t: &Trace, row: &[u32], from: i64, to: i64, ns_per_px: f64) -> Vec<Span> {
    let e = &t.events;
    let start = |x: u32| e.start[x as usize];
    let end = |x: u32| e.end(x as usize);
    let px = ns_per_px.max(1.0).ceil() as i64;
    let mut out = Vec::new();
    let mut i = row.partition_point(|&x| end(x) < from);
    while i < row.len() && start(row[i]) <= to {
        let first = row[i];
        let (s, mut until) = (start(first), end(first));
        i += 1;
        if until - s >= px {
            out.push(Span {
                start: s,
                end: until,
                event: first,
                merged: 1,
            });
            continue;
        }
        let mut merged = 1;
        loop {
            // Every event starting within a pixel of the run's end joins it; the last of them
            // may be a wide slice, which is drawn on its own instead.
            let limit = until.saturating_add(px);
            let mut k = i + row[i..].partition_point(|&x| start(x) <= limit);
            if k > i && end(row[k - 1]) - start(row[k - 1]) >= px {
                k -= 1;
            }
            if k == i {
                break;
            }
            merged += (k - i) as u32;
            until = until.max(end(row[k - 1]));
            i = k;
        }
        out.push(Span {
            start: s,
            end: until,
            event: first,
            merged,
        });
    }
    out
}

/// The counter's value per pixel column over `[from, from + columns × ns_per_px)`: the most it
/// reached in the column (the value holding at the column's start included); `None` before the
/// first point.
pub fn counter_columns(
    points: &[(i64, i64)],
    from: i64,
    ns_per_px: f64,
    columns: usize,
) -> Vec<Option<i64>> {
    let mut out = Vec::with_capacity(columns);
    let mut i = points.partition_point(|p| p.0 <= from);
    let mut current = i.checked_sub(1).map(|k| points[k].1);
    for c in 0..columns {
        let column_end = from + ((c + 1) as f64 * ns_per_px) as i64;
        let mut most = current;
        let next = i + points[i..].partition_point(|p| p.0 < column_end);
        if next > i {
            let within = points[i..next].iter().map(|p| p.1).max();
            most = most.max(within);
            current = Some(points[next - 1].1);
            i = next;
        }
        out.push(most);
    }
    out
}
