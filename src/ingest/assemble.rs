//! The whole-trace pass after the last event: recognise what the input was, sort the events,
//! build the per-thread call trees, link launches to GPU work, find the steps. Natively, an
//! ingest on several threads runs independent parts of it on two (`join`).

use std::cmp::Reverse;

use super::builder::{Builder, FlowPoint};
use super::IngestError;
use crate::model::{
    Clipped, Container, Device, Era, EventKind, Events, ForwardBackward, Launch, Step, StepSource,
    Trace, TraceMeta, Track, NONE,
};

/// Refuses inputs that are not PyTorch profiler traces (unless `accept_other` allows any Chrome
/// trace) and inputs with no timed events.
pub(crate) fn check_format(
    b: &Builder,
    unclosed: usize,
    accept_other: bool,
) -> Result<(), IngestError> {
    let keys = &b.top.keys;
    let has = |k: &str| keys.iter().any(|x| x == k);
    if b.top.object == Some(true) && !has("traceEvents") {
        if has("nodes") {
            let schema = b
                .top
                .values
                .get("schema")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            return Err(IngestError::ExecutionTrace { schema });
        }
        return Err(IngestError::NoTraceEvents { keys: keys.clone() });
    }
    if has("span_indx") || has("ExtraInfo") {
        return Err(IngestError::PaddleTrace);
    }
    if b.events.is_empty() && b.array_elements > 0 && b.array_elements == b.elements {
        return Err(IngestError::MemoryTimeline {
            arrays: b.array_elements,
        });
    }
    if b.kineto_events() == 0 && b.elements > b.metadata_events && !accept_other {
        if b.strings.find(LEGACY_CPU_PID).is_some() {
            return Err(IngestError::LegacyAutograd { events: b.elements });
        }
        return Err(IngestError::NotPyTorch {
            events: b.elements,
            categories: top_categories(b, 6),
        });
    }
    if b.events.len() == unclosed {
        return Err(IngestError::NoEvents {
            elements: b.elements,
            metadata: b.metadata_events,
            skipped: b.skipped.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        });
    }
    Ok(())
}

/// The process the pre-Kineto `torch.autograd.profiler` export (PyTorch 1.7 and older) puts its
/// CPU ops in.
const LEGACY_CPU_PID: &str = "CPU functions";

fn top_categories(b: &Builder, n: usize) -> Vec<(String, u64)> {
    let mut cats: Vec<(String, u64)> = b
        .categories
        .iter()
        .filter(|c| !b.strings.get(c.id).is_empty())
        .map(|c| (b.strings.get(c.id).to_string(), c.count))
        .collect();
    cats.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    cats.truncate(n);
    cats
}

/// Puts `column` in `order`, gathering into `spare` (whose memory is reused: a fresh column of
/// millions of rows would fault in every page again); `spare` then holds the old column's memory.
fn permute<T: Copy>(column: &mut Vec<T>, order: &[u32], spare: &mut Vec<T>) {
    spare.clear();
    spare.extend(order.iter().map(|&i| column[i as usize]));
    std::mem::swap(column, spare);
}

/// Runs `a` and `b` at once, `b` on a second thread, when `parallel` (natively); else one
/// after the other. The result is the same either way.
#[cfg_attr(target_arch = "wasm32", allow(unused_variables))]
fn join<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    #[cfg(not(target_arch = "wasm32"))]
    if parallel {
        return std::thread::scope(|s| {
            let b = s.spawn(b);
            let a = a();
            // A panic of `b` (a bug) goes on here, as it would have on one thread.
            (a, b.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        });
    }
    (a(), b())
}

/// Builds the model from everything the builder collected, on two threads when `threads > 1`
/// (the same model either way). `unclosed` lists the `B` events that never ended, which are
/// left out.
pub fn assemble(mut b: Builder, unclosed: &[u32], threads: usize) -> Trace {
    let parallel = threads > 1;
    // Columns sized ahead (`Builder::make_room`) hold more rows than the events: free that
    // first, before the sort's order and spare columns are allocated.
    let mut events = std::mem::take(&mut b.events);
    events.shrink_to_fit();
    b.details.shrink_to_fit();
    b.flows.shrink_to_fit();
    let order = sorted_order(&events, b.tracks.len(), unclosed, parallel);
    let Events {
        start,
        dur,
        name,
        cat,
        kind,
        track,
        detail,
        ..
    } = &mut events;
    // Columns are independent: the 8-byte ones, then the flow points put in groups, on one
    // thread; on the other, launches by correlation (read in document order, before `kind`
    // and `detail` are sorted), then the narrow columns.
    let mut flows = std::mem::take(&mut b.flows);
    let (_, mut launches) = join(
        parallel,
        || {
            let mut wide = Vec::new();
            permute(start, &order, &mut wide);
            permute(dur, &order, &mut wide);
            drop(wide);
            // Every field is in the key: ties are equal points, so the order is the same
            // whichever sort orders them.
            flows.sort_unstable_by_key(|p| (p.launch, p.id, Reverse(p.start), p.ts, p.track));
        },
        || {
            let launches = link_by_correlation(&b, kind, detail, &order);
            let mut narrow = Vec::new();
            permute(name, &order, &mut narrow);
            permute(cat, &order, &mut narrow);
            permute(track, &order, &mut narrow);
            launches
        },
    );
    join(
        parallel,
        || permute(detail, &order, &mut Vec::new()),
        || permute(kind, &order, &mut Vec::new()),
    );
    drop(order);

    let tracks = track_ranges(&b, &events);
    let span = span(&events);
    let clipped = super::overlaps::clip(&mut events, &tracks);
    // The call trees (on two threads), then the flow points bound to their events (that needs
    // the trees), half on each thread.
    (events.parent, events.depth) = nest(&events, &tracks, parallel);
    let (steps, step_source) = find_steps(&b, &events, (&tracks, &launches), span);
    // Cut between two groups.
    let mut half = flows.len() / 2;
    while half > 0 && half < flows.len() && same_group(&flows[half - 1], &flows[half]) {
        half += 1;
    }
    let (first, second) = flows.split_at(half);
    let (mut bound, more) = join(
        parallel,
        || bind_flows(first, &events, &tracks),
        || bind_flows(second, &events, &tracks),
    );
    bound.extend(more);
    let forward_backward = link_flows(&flows, &bound, &events, &mut launches);
    link_graph_kernels_by_time(&b, &events, &tracks, &mut launches);
    let replayed_from = super::replays::tie(&b.details, &events, &launches);
    let meta = TraceMeta {
        clipped,
        ..meta(&b, span)
    };

    Trace {
        meta,
        strings: std::mem::take(&mut b.strings),
        events,
        tracks,
        details: std::mem::take(&mut b.details),
        collectives: std::mem::take(&mut b.collectives),
        launches,
        forward_backward,
        replayed_from,
        steps,
        step_source,
        captured: None,
    }
}

/// The order of the events by `(track, start, longest first)`, without the unclosed ones.
/// Events are first bucketed by track (a counting sort), then each track is sorted on its own
/// (in place: a copy of its keys to sort would cost 24 bytes per event at the peak): within a
/// track they mostly arrive in time order already, which the check and the sort's run
/// detection exploit. When `parallel`, two threads sort half of each track each.
fn sorted_order(e: &Events, tracks: usize, unclosed: &[u32], parallel: bool) -> Vec<u32> {
    let mut offsets = vec![0usize; tracks + 1];
    for (i, &t) in e.track.iter().enumerate() {
        if unclosed.binary_search(&(i as u32)).is_err() {
            offsets[t as usize + 1] += 1;
        }
    }
    for t in 0..tracks {
        offsets[t + 1] += offsets[t];
    }
    let mut order = vec![0u32; offsets[tracks]];
    let mut next = offsets.clone();
    for (i, &t) in e.track.iter().enumerate() {
        if unclosed.binary_search(&(i as u32)).is_err() {
            order[next[t as usize]] = i as u32;
            next[t as usize] += 1;
        }
    }
    let key = |&i: &u32| (e.start[i as usize], Reverse(e.dur[i as usize]));
    // Stable: ties keep their input order.
    let by_time = |part: &mut [u32]| {
        if !part.is_sorted_by_key(key) {
            part.sort_by_key(key);
        }
    };
    // When `parallel`, each track's first half is sorted on one thread and its second half on
    // the other (halves of a track are about as out of order as each other, so the threads
    // have the same work even when one track holds most events), then the halves merged.
    let (first, second): (Vec<_>, Vec<_>) = track_slices(&mut order, &offsets)
        .into_iter()
        .map(|track| {
            let mid = if parallel {
                track.len() / 2
            } else {
                track.len()
            };
            track.split_at_mut(mid)
        })
        .unzip();
    join(
        parallel,
        || first.into_iter().for_each(by_time),
        || second.into_iter().for_each(by_time),
    );
    if parallel {
        // The tracks whose halves overlap, merged: the biggest first, each on the thread with
        // less to merge so far.
        let mut overlapping: Vec<&mut [u32]> = track_slices(&mut order, &offsets)
            .into_iter()
            .filter(|track| {
                let mid = track.len() / 2;
                mid > 0 && key(&track[mid]) < key(&track[mid - 1])
            })
            .collect();
        overlapping.sort_by_key(|t| Reverse(t.len()));
        let (mut lists, mut loads) = ((Vec::new(), Vec::new()), (0, 0));
        for track in overlapping {
            if loads.0 <= loads.1 {
                loads.0 += track.len();
                lists.0.push(track);
            } else {
                loads.1 += track.len();
                lists.1.push(track);
            }
        }
        let merge_all = |tracks: Vec<&mut [u32]>| {
            let mut buffer = Vec::new();
            for track in tracks {
                merge_halves(track, &mut buffer, key);
            }
        };
        join(parallel, || merge_all(lists.0), || merge_all(lists.1));
    }
    order
}

/// `order`'s tracks, one slice each, bounded by `offsets` (document positions).
fn track_slices<'a>(mut order: &'a mut [u32], offsets: &[usize]) -> Vec<&'a mut [u32]> {
    offsets
        .windows(2)
        .map(|w| {
            let (track, rest) = std::mem::take(&mut order).split_at_mut(w[1] - w[0]);
            order = rest;
            track
        })
        .collect()
}

/// Merges the two sorted halves of `track` (split at `len / 2`) by `key`, the first half's
/// element first on ties (as a stable sort of the whole); `buffer` holds a copy of the first
/// half meanwhile.
fn merge_halves<K: Ord>(track: &mut [u32], buffer: &mut Vec<u32>, key: impl Fn(&u32) -> K) {
    let mid = track.len() / 2;
    buffer.clear();
    buffer.extend_from_slice(&track[..mid]);
    let (mut a, mut b, mut out) = (0, mid, 0);
    while a < buffer.len() && b < track.len() {
        if key(&track[b]) < key(&buffer[a]) {
            track[out] = track[b];
            b += 1;
        } else {
            track[out] = buffer[a];
            a += 1;
        }
        out += 1;
    }
    // What is left of the second half is in place already.
    track[out..out + buffer.len() - a].copy_from_slice(&buffer[a..]);
}

fn track_ranges(b: &Builder, e: &Events) -> Vec<Track> {
    let mut tracks = b.tracks.clone();
    for t in &mut tracks {
        t.process_name = b.process_names.get(&t.pid).copied();
        t.thread_name = b.thread_names.get(&(t.pid, t.tid)).copied();
    }
    let mut i = 0;
    while i < e.len() {
        let t = e.track[i];
        let begin = i;
        while i < e.len() && e.track[i] == t {
            i += 1;
        }
        tracks[t as usize].events = begin as u32..i as u32;
    }
    tracks
}

/// Each CPU thread's call tree: every event's `parent` and `depth`. Ranges that overlap
/// without nesting (a child that outlives its parent) stay attached to the innermost range
/// that contains their start. Tracks are independent: when `parallel`, those from the middle
/// event on are nested on a second thread.
fn nest(e: &Events, tracks: &[Track], parallel: bool) -> (Vec<u32>, Vec<u16>) {
    let mut parent = vec![NONE; e.len()];
    let mut depth: Vec<u16> = vec![0; e.len()];
    let middle = if parallel { e.len() / 2 } else { e.len() };
    let cut = tracks
        .iter()
        .map(|t| t.events.start as usize)
        .filter(|&s| s >= middle)
        .min()
        .unwrap_or(e.len());
    let (first_parent, second_parent) = parent.split_at_mut(cut);
    let (first_depth, second_depth) = depth.split_at_mut(cut);
    let below = tracks.iter().filter(|t| t.events.end as usize <= cut);
    let above = tracks
        .iter()
        .filter(|t| !t.events.is_empty() && t.events.start as usize >= cut);
    join(
        parallel,
        || nest_tracks(e, below, 0, first_parent, first_depth),
        || nest_tracks(e, above, cut, second_parent, second_depth),
    );
    (parent, depth)
}

/// The call trees of `tracks`, whose events are `parent` and `depth`'s rows from `offset` on.
fn nest_tracks<'a>(
    e: &Events,
    tracks: impl Iterator<Item = &'a Track>,
    offset: usize,
    parent: &mut [u32],
    depth: &mut [u16],
) {
    let mut stack: Vec<u32> = Vec::new();
    for t in tracks.filter(|t| !t.gpu) {
        stack.clear();
        for i in t.events.clone() {
            let iu = i as usize;
            if !e.kind[iu].nests_on_cpu() {
                continue;
            }
            let start = e.start[iu];
            while let Some(&top) = stack.last() {
                if e.end(top as usize) > start || (e.start[top as usize] == start && e.dur[iu] == 0)
                {
                    break;
                }
                stack.pop();
            }
            if let Some(&top) = stack.last() {
                parent[iu - offset] = top;
                depth[iu - offset] = depth[top as usize - offset].saturating_add(1);
            }
            stack.push(i);
        }
    }
}

fn correlation(b: &Builder, kind: EventKind, detail: u32) -> Option<u64> {
    if detail == NONE {
        return None;
    }
    match kind {
        EventKind::GpuKernel | EventKind::Collective => b.details.kernel(detail).correlation,
        EventKind::Memcpy | EventKind::Memset => b.details.copy(detail).correlation,
        EventKind::RuntimeCall => b.details.runtime(detail).correlation,
        _ => None,
    }
}

/// Links each runtime call to the GPU work with the same correlation id (several for a graph
/// launch). `kind` and `detail` are in document order, as the details are stored (so they are
/// read in one sweep, and runtime calls come mostly in correlation order); the links are
/// numbered as the events in `order` (the sorted model), which leaves out events not in it.
fn link_by_correlation(
    b: &Builder,
    kind: &[EventKind],
    detail: &[u32],
    order: &[u32],
) -> Vec<Launch> {
    let mut gpu: Vec<(u64, u32)> = (0..kind.len())
        .filter(|&i| kind[i].is_gpu_work())
        .filter_map(|i| correlation(b, kind[i], detail[i]).map(|c| (c, i as u32)))
        .collect();
    gpu.sort_unstable();
    let mut position = vec![NONE; kind.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i as usize] = p as u32;
    }
    let mut launches = Vec::new();
    for call in 0..kind.len() {
        if kind[call] != EventKind::RuntimeCall {
            continue;
        }
        let Some(c) = correlation(b, kind[call], detail[call]) else {
            continue;
        };
        let from = gpu.partition_point(|&(x, _)| x < c);
        for &(_, g) in gpu[from..].iter().take_while(|&&(x, _)| x == c) {
            let (launch, gpu) = (position[call], position[g as usize]);
            if launch != NONE && gpu != NONE {
                launches.push(Launch { launch, gpu });
            }
        }
    }
    launches.sort_unstable_by_key(|l| (l.gpu, l.launch));
    launches
}

/// The event on `track` that a flow endpoint at `ts` binds to: the innermost event that starts
/// at or before `ts` and is still running at `ts`.
fn event_at(e: &Events, track: &Track, ts: i64) -> u32 {
    let r = track.events.clone();
    let slice = &e.start[r.start as usize..r.end as usize];
    let p = slice.partition_point(|&s| s <= ts);
    if p == 0 {
        return NONE;
    }
    let mut i = r.start + p as u32 - 1;
    while i != NONE && e.end(i as usize) < ts {
        i = e.parent[i as usize];
    }
    i
}

/// Whether two flow points are of one group (the same kind and id).
fn same_group(a: &FlowPoint, b: &FlowPoint) -> bool {
    a.launch == b.launch && a.id == b.id
}

/// The event each flow point binds to, for the points of groups whose start binds (`NONE`
/// for the others, and those that bind to none). `flows` holds whole groups.
fn bind_flows(flows: &[FlowPoint], e: &Events, tracks: &[Track]) -> Vec<u32> {
    let mut bound = vec![NONE; flows.len()];
    let mut at = 0;
    for group in flows.chunk_by(same_group) {
        let points = &mut bound[at..at + group.len()];
        at += group.len();
        let bind = |p: &FlowPoint| event_at(e, &tracks[p.track as usize], p.ts);
        let Some(src) = group.iter().position(|p| p.start) else {
            continue;
        };
        points[src] = bind(&group[src]);
        if points[src] == NONE {
            continue;
        }
        for (p, to) in group.iter().zip(points.iter_mut()) {
            if !p.start {
                *to = bind(p);
            }
        }
    }
    bound
}

/// Uses flow events where correlation ids are missing (launch flows), and for forward→backward
/// links (`fwdbwd`); `flows` in groups by kind and id, each group's start first; `bound`
/// their events.
fn link_flows(
    flows: &[FlowPoint],
    bound: &[u32],
    e: &Events,
    launches: &mut Vec<Launch>,
) -> Vec<ForwardBackward> {
    let mut linked = linked(e, launches);
    let mut added = Vec::new();
    let mut fwdbwd = Vec::new();
    let mut at = 0;
    for group in flows.chunk_by(same_group) {
        let points = at..at + group.len();
        at = points.end;
        let Some(src) = group.iter().position(|p| p.start) else {
            continue;
        };
        let from = bound[points.start + src];
        if from == NONE {
            continue;
        }
        let launch = group[src].launch;
        for (p, &to) in group.iter().zip(&bound[points]) {
            if p.start || to == NONE {
                continue;
            }
            if launch {
                if e.kind[to as usize].is_gpu_work() && !linked[to as usize] {
                    linked[to as usize] = true;
                    added.push(Launch {
                        launch: from,
                        gpu: to,
                    });
                }
            } else if from != to {
                fwdbwd.push(ForwardBackward {
                    forward: from,
                    backward: to,
                });
            }
        }
    }
    add_links(launches, added);
    fwdbwd
}

/// Whether each event is the GPU end of a launch link.
fn linked(e: &Events, launches: &[Launch]) -> Vec<bool> {
    let mut linked = vec![false; e.len()];
    for l in launches {
        linked[l.gpu as usize] = true;
    }
    linked
}

/// Adds links to `launches`, keeping them sorted by GPU event.
fn add_links(launches: &mut Vec<Launch>, added: Vec<Launch>) {
    if !added.is_empty() {
        launches.extend(added);
        launches.sort_unstable_by_key(|l| (l.gpu, l.launch));
    }
}

/// Links a kernel that no correlation id or flow linked to the graph launch whose replay it ran
/// in: on its stream, between the first start and the last end of that launch's linked
/// kernels (a replay holds its streams: work queued after it waits for it to finish).
fn link_graph_kernels_by_time(
    b: &Builder,
    e: &Events,
    tracks: &[crate::model::Track],
    launches: &mut Vec<Launch>,
) {
    let is_graph = |l: u32| {
        let d = e.detail[l as usize];
        d != NONE && b.details.runtime_class(d) == crate::model::RuntimeClass::GraphLaunch
    };
    // (track, launch, start, end) of each graph kernel, then one span per track and launch.
    let mut spans: Vec<(u32, u32, i64, i64)> = launches
        .iter()
        .filter(|l| is_graph(l.launch))
        .map(|l| {
            (
                e.track[l.gpu as usize],
                l.launch,
                e.start[l.gpu as usize],
                e.end(l.gpu as usize),
            )
        })
        .collect();
    if spans.is_empty() {
        return;
    }
    spans.sort_unstable();
    let mut linked = linked(e, launches);
    let mut added = Vec::new();
    for same in spans.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        let (track, launch) = (same[0].0, same[0].1);
        let from = same[0].2;
        let to = same.iter().map(|s| s.3).max().unwrap_or(from);
        let r = tracks[track as usize].events.clone();
        let first = r.start as usize
            + e.start[r.start as usize..r.end as usize].partition_point(|&s| s < from);
        for j in (first..r.end as usize).take_while(|&j| e.start[j] < to) {
            if !linked[j] && e.kind[j].is_gpu_work() && e.end(j) <= to {
                linked[j] = true;
                added.push(Launch {
                    launch,
                    gpu: j as u32,
                });
            }
        }
    }
    add_links(launches, added);
}

/// `span` is that of all events, the fallback step of a trace without GPU work; the tracks and
/// the launches found so far are where iterations are looked for.
fn find_steps(
    b: &Builder,
    e: &Events,
    (tracks, launches): (&[crate::model::Track], &[Launch]),
    span: Option<(i64, i64)>,
) -> (Vec<Step>, StepSource) {
    let mut steps: Vec<Step> = (0..e.len())
        .filter(|&i| e.kind[i] == EventKind::ProfilerStep)
        .map(|i| Step {
            number: b
                .strings
                .get(e.name[i])
                .rsplit('#')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(-1),
            start: e.start[i],
            end: e.end(i),
            event: i as u32,
        })
        .collect();
    if steps.is_empty() {
        if let Some(found) = super::serving::iterations(&b.strings, e, tracks, launches) {
            return (found, StepSource::ServingIterations);
        }
        if let Some(found) = super::iterations::iterations(&b.strings, e, tracks, launches) {
            return found;
        }
        // No steps recorded and no loop: one step over the GPU's active span, from where the
        // host's work for the GPU begins (the profiler's start-up and set-up on the host alone
        // before it are not the step's), to the last GPU work; the whole span on CPU-only traces.
        let gpu = (0..e.len()).filter(|&i| e.kind[i].is_gpu_work());
        let active = gpu.fold(None, |acc: Option<(i64, i64)>, i| {
            Some(acc.map_or((e.start[i], e.end(i)), |(s, end)| {
                (s.min(e.start[i]), end.max(e.end(i)))
            }))
        });
        let span = match active {
            Some((s, end)) => Some((host_work_start(b, e).map_or(s, |h| h.min(s)), end)),
            None => span,
        };
        return (
            span.map(|(start, end)| {
                vec![Step {
                    number: 0,
                    start,
                    end,
                    event: NONE,
                }]
            })
            .unwrap_or_default(),
            StepSource::WholeTrace,
        );
    }
    steps.sort_by_key(|s| (s.start, s.number));
    (steps, StepSource::ProfilerSteps)
}

/// Where the host's work for the GPU begins: the first kernel launch, or the first DataLoader
/// range before it (the first batch, loaded while the GPU waits). Not the op around the launch:
/// the first one holds CUDA's lazy initialisation.
fn host_work_start(b: &Builder, e: &Events) -> Option<i64> {
    let first_call = (0..e.len())
        .filter(|&i| {
            e.kind[i] == EventKind::RuntimeCall
                && e.detail[i] != NONE
                && b.details.runtime_class(e.detail[i]).launches()
        })
        .map(|i| e.start[i])
        .min();
    let first_batch = (0..e.len())
        .filter(|&i| {
            e.kind[i] == EventKind::UserAnnotation
                && b.strings
                    .get(e.name[i])
                    .to_ascii_lowercase()
                    .contains("dataloader")
        })
        .map(|i| e.start[i])
        .min();
    first_call.into_iter().chain(first_batch).min()
}

fn span(e: &Events) -> Option<(i64, i64)> {
    let start = e.start.iter().copied().min()?;
    let end = (0..e.len()).map(|i| e.end(i)).max()?;
    Some((start, end))
}

fn meta(b: &Builder, span: Option<(i64, i64)>) -> TraceMeta {
    let v = &b.top.values;
    let int = |key: &str, field: &str| v.get(key).and_then(|d| d.get(field)).and_then(json_int);
    let era = if b.kineto_events() == 0 {
        Era::NotPyTorch
    } else if b.capitalised_events() > 0 {
        Era::Torch1_8
    } else if v.contains_key("baseTimeNanoseconds") || b.concrete_inputs {
        Era::Torch2_2
    } else {
        Era::Torch1_11
    };
    TraceMeta {
        container: if b.top.object == Some(false) {
            Container::Array
        } else {
            Container::Object
        },
        era,
        schema_version: v.get("schemaVersion").map(|s| match s {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        trace_name: v
            .get("traceName")
            .and_then(|s| s.as_str())
            .map(str::to_owned),
        display_time_unit: v
            .get("displayTimeUnit")
            .and_then(|s| s.as_str())
            .map(str::to_owned),
        base_time_ns: v.get("baseTimeNanoseconds").and_then(json_int),
        devices: v
            .get("deviceProperties")
            .and_then(|d| d.as_array())
            .map(|list| list.iter().map(device).collect())
            .unwrap_or_default(),
        rank: int("distributedInfo", "rank"),
        world_size: int("distributedInfo", "world_size"),
        backend: v
            .get("distributedInfo")
            .and_then(|d| d.get("backend"))
            .and_then(|s| s.as_str())
            .map(str::to_owned),
        span,
        clipped: Clipped::default(),
    }
}

fn json_int(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn device(d: &serde_json::Value) -> Device {
    let int = |k: &str| d.get(k).and_then(json_int);
    let uint = |k: &str| int(k).and_then(|v| u64::try_from(v).ok());
    Device {
        id: int("id"),
        name: d.get("name").and_then(|s| s.as_str()).map(str::to_owned),
        total_global_mem: uint("totalGlobalMem"),
        compute_major: int("computeMajor"),
        compute_minor: int("computeMinor"),
        num_sms: int("numSms"),
        max_threads_per_multiprocessor: int("maxThreadsPerMultiprocessor"),
        regs_per_multiprocessor: int("regsPerMultiprocessor"),
        shared_mem_per_multiprocessor: uint("sharedMemPerMultiprocessor"),
        warp_size: int("warpSize"),
    }
}
