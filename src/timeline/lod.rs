//! Level of detail: what one row shows over a time range at a given scale.
//!
//! Slices at least a pixel wide are drawn as they are. Runs of narrower slices, with gaps under
//! a pixel between them, merge into one block. Finding where a run ends is a galloping search
//! from where the run is, and each search moves the block's end right by more than a pixel, so
//! a row costs O(pixels × log events) however many events the range holds.
//!
//! Rows with many events also keep [`Level`]s: the row merged once at coarse scales, 4× apart.
//! Merging a level's spans at a scale at least as coarse as the level's draws exactly what
//! merging the events would (a level's blocks hold only events narrower than its pixel, with
//! gaps narrower than it; a block that begins before the range is drawn from its first event in
//! the range), so a view of the whole trace walks a few thousand spans per row instead of
//! millions of events. Only a merged block's count differs: it counts the events before the
//! range too.

use crate::model::Trace;

use super::bands::Score;

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

/// A row merged at `ns_per_px` over its whole length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Level {
    pub ns_per_px: i64,
    pub spans: Vec<Span>,
}

/// Rows with at least this many events get levels.
pub(crate) const LEVELS_FROM: usize = 4096;
/// The finest level cuts the trace's span into this many pixels.
const FINEST_PIXELS: i64 = 1 << 14;
/// A level with at most this many spans is the last.
const COARSEST_SPANS: usize = 2048;

/// What merging walks: a row's events, or a level's spans.
trait Items {
    fn count(&self) -> usize;
    fn get(&self, i: usize) -> Span;
}

struct RowEvents<'a> {
    t: &'a Trace,
    row: &'a [u32],
}

impl Items for RowEvents<'_> {
    fn count(&self) -> usize {
        self.row.len()
    }

    fn get(&self, i: usize) -> Span {
        let x = self.row[i];
        Span {
            start: self.t.events.start[x as usize],
            end: self.t.events.end(x as usize),
            event: x,
            merged: 1,
        }
    }
}

impl Items for [Span] {
    fn count(&self) -> usize {
        self.len()
    }

    fn get(&self, i: usize) -> Span {
        self[i]
    }
}

/// Whether a span is drawn on its own at `px` ns per pixel: a single slice a pixel wide or more.
fn wide(s: &Span, px: i64) -> bool {
    s.merged == 1 && s.end - s.start >= px
}

fn merge(items: &(impl Items + ?Sized), from: i64, to: i64, px: i64) -> Vec<Span> {
    let n = items.count();
    let mut out = Vec::new();
    // Items never overlap, so they end in order too.
    let mut i = partition(0, n, |k| items.get(k).end < from);
    while i < n {
        let first = items.get(i);
        if first.start > to {
            break;
        }
        i += 1;
        if wide(&first, px) {
            out.push(first);
            continue;
        }
        let mut run = first;
        loop {
            // Every item starting within a pixel of the run's end joins it; the last of them
            // may be a wide slice, which is drawn on its own instead.
            let limit = run.end.saturating_add(px);
            let mut k = gallop(i, n, |k| items.get(k).start <= limit);
            if k > i && wide(&items.get(k - 1), px) {
                k -= 1;
            }
            if k == i {
                break;
            }
            let last = items.get(k - 1);
            run.merged += (i..k).map(|j| items.get(j).merged).sum::<u32>();
            run.end = run.end.max(last.end);
            i = k;
        }
        out.push(run);
    }
    out
}

/// The first index in `lo..hi` failing `before` (which holds for a prefix of it).
fn partition(mut lo: usize, mut hi: usize, before: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`partition`] from `i` to `n`, by doubling steps from `i`: cheap when the answer is near.
fn gallop(i: usize, n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (i, 1);
    while lo + step <= n && before(lo + step - 1) {
        lo += step;
        step *= 2;
    }
    partition(lo, (lo + step).min(n), before)
}

/// The levels of a row (events in start order, never overlapping) in a trace spanning
/// `whole` ns; none for a row of fewer than [`LEVELS_FROM`] events.
pub fn levels(t: &Trace, row: &[u32], whole: i64) -> Vec<Level> {
    if row.len() < LEVELS_FROM {
        return Vec::new();
    }
    let mut px = (whole / FINEST_PIXELS).max(1);
    let mut levels = vec![Level {
        ns_per_px: px,
        spans: merge(&RowEvents { t, row }, i64::MIN, i64::MAX, px),
    }];
    while levels
        .last()
        .is_some_and(|l| l.spans.len() > COARSEST_SPANS)
    {
        px *= 4;
        let coarser = merge(&levels[levels.len() - 1].spans[..], i64::MIN, i64::MAX, px);
        levels.push(Level {
            ns_per_px: px,
            spans: coarser,
        });
    }
    levels
}

/// The spans of `row` (event indices in start order, never overlapping) that meet
/// `[from, to]`, at `ns_per_px` nanoseconds per pixel; from the coarsest of `levels` that is
/// not coarser than the scale, else from the events.
pub fn spans(
    t: &Trace,
    row: &[u32],
    levels: &[Level],
    from: i64,
    to: i64,
    ns_per_px: f64,
) -> Vec<Span> {
    let px = ns_per_px.max(1.0).ceil() as i64;
    let Some(level) = levels.iter().rev().find(|l| l.ns_per_px <= px) else {
        return merge(&RowEvents { t, row }, from, to, px);
    };
    let mut spans = merge(&level.spans[..], from, to, px);
    // A block that begins before the range is drawn from its first event in the range, as
    // merging the events would.
    if let Some(first) = spans.first_mut().filter(|s| s.merged > 1 && s.start < from) {
        let events = RowEvents { t, row };
        let k = partition(0, row.len(), |k| events.get(k).end < from);
        if let Some(e) = (k < row.len()).then(|| events.get(k)) {
            first.start = first.start.max(e.start);
            first.event = e.event;
        }
    }
    spans
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
        let column_end = from.saturating_add(((c + 1) as f64 * ns_per_px) as i64);
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

/// The heat strip per pixel column over `[from, from + columns × ns_per_px)`: the highest
/// probability of the windows meeting the column (a window narrower than a pixel still shows in
/// the column it falls in); `None` where no scored window is. A whole-trace view of thousands of
/// windows draws a rectangle per run of equal columns, not one per window.
pub fn score_columns(
    scores: &[Score],
    from: i64,
    ns_per_px: f64,
    columns: usize,
) -> Vec<Option<f32>> {
    let mut out = vec![None; columns];
    let px = ns_per_px.max(1e-6);
    let column = |t: i64| t.saturating_sub(from) as f64 / px;
    for s in scores {
        let (a, b) = (column(s.start), column(s.end));
        if b < 0.0 || a >= columns as f64 {
            continue;
        }
        let first = a.max(0.0).floor() as usize;
        let last = (b.ceil() as usize).clamp(first + 1, columns);
        for c in &mut out[first..last] {
            *c = Some(c.map_or(s.probability, |p: f32| p.max(s.probability)));
        }
    }
    out
}
