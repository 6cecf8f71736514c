//! Graph replays tied to the recorded launches of the same work. A kernel a CUDA/HIP graph
//! replays carries its graph launch's correlation, not the operator that launched it when the
//! graph was captured. Where the trace also records that work launched one by one (the warm-up
//! run before a capture, an eager run of the same code, a capture whose kernels the tracer
//! recorded), the replay's GPU records, in time order, are matched to those records, in launch
//! order on one host thread: the run whose first and last records have the replay's first and
//! last names and that agrees at the most positions (at least half). Each replayed record whose
//! name equals the recorded one at its position is tied to that one's launch; one that differs
//! stays untied (counted by `graphs::summarize`), never guessed. `ingest::capture` matches a
//! replay trace's replays to the runs of a capture trace given beside it the same way.

use rustc_hash::FxHashMap;

use crate::model::{Details, Events, Launch, RuntimeClass, StrId, NONE};

/// Runs tried per distinct replay: the most recent first (the warm-up is nearest the capture).
const MAX_CANDIDATES: usize = 256;

/// A launch recorded one by one, with its GPU record.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Recorded {
    track: u32,
    start: i64,
    pub(super) launch: u32,
    pub(super) gpu: u32,
}

/// Whether launch call `l` is a graph launch.
fn is_graph(details: &Details, e: &Events, l: u32) -> bool {
    let d = e.detail[l as usize];
    d != NONE && details.runtime_class(d) == RuntimeClass::GraphLaunch
}

/// The launches recorded one by one with their GPU work: each host thread's, in launch order.
pub(super) fn recorded(details: &Details, e: &Events, launches: &[Launch]) -> Vec<Recorded> {
    let mut recorded: Vec<Recorded> = launches
        .iter()
        .filter(|l| e.kind[l.gpu as usize].is_gpu_work() && !is_graph(details, e, l.launch))
        .map(|l| {
            let c = l.launch as usize;
            Recorded {
                track: e.track[c],
                start: e.start[c],
                launch: l.launch,
                gpu: l.gpu,
            }
        })
        .collect();
    recorded.sort_unstable();
    recorded
}

/// Each graph launch's GPU records, in time order; the launches in event order.
pub(super) fn replays(details: &Details, e: &Events, launches: &[Launch]) -> Vec<Vec<u32>> {
    let mut replays: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for l in launches
        .iter()
        .filter(|l| e.kind[l.gpu as usize].is_gpu_work() && is_graph(details, e, l.launch))
    {
        replays.entry(l.launch).or_default().push(l.gpu);
    }
    let mut order: Vec<(u32, Vec<u32>)> = replays.into_iter().collect();
    order.sort_unstable_by_key(|(l, _)| *l);
    order
        .into_iter()
        .map(|(_, mut gpu)| {
            gpu.sort_unstable_by_key(|&g| (e.start[g as usize], g));
            gpu
        })
        .collect()
}

/// Ties the replays' records to the recorded ones whose names (`recorded_name(k)` for
/// `recorded[k]`, in the replays' string ids) agree: `Launch { launch: the recorded launch, gpu:
/// the replayed record }`.
pub(super) fn match_replays(
    e: &Events,
    replays: &[Vec<u32>],
    recorded: &[Recorded],
    recorded_name: impl Fn(usize) -> StrId,
) -> Vec<Launch> {
    // The same graph replays the same names: match each sequence once.
    let mut matched: FxHashMap<Vec<StrId>, Option<usize>> = FxHashMap::default();
    let mut ties = Vec::new();
    for gpu in replays {
        let names: Vec<StrId> = gpu.iter().map(|&g| e.name[g as usize]).collect();
        let at = *matched
            .entry(names.clone())
            .or_insert_with(|| best_run(recorded, &recorded_name, &names));
        let Some(at) = at else { continue };
        for (k, &g) in gpu.iter().enumerate() {
            if recorded_name(at + k) == names[k] {
                ties.push(Launch {
                    launch: recorded[at + k].launch,
                    gpu: g,
                });
            }
        }
    }
    ties
}

/// For each graph-replayed GPU record tied to a recorded launch, `Launch { launch: that launch,
/// gpu: the replayed record }`, sorted by GPU event.
pub(super) fn tie(details: &Details, e: &Events, launches: &[Launch]) -> Vec<Launch> {
    let recorded = recorded(details, e, launches);
    if recorded.is_empty() {
        return Vec::new();
    }
    let replays = replays(details, e, launches);
    let mut ties = match_replays(e, &replays, &recorded, |k| e.name[recorded[k].gpu as usize]);
    ties.sort_unstable_by_key(|l| (l.gpu, l.launch));
    ties
}

/// Where in `recorded` the run matching `names` starts: on one thread, first and last names
/// equal, most positions equal (at least half; ties to the latest run); `None` without one.
fn best_run(
    recorded: &[Recorded],
    name: impl Fn(usize) -> StrId,
    names: &[StrId],
) -> Option<usize> {
    let n = names.len();
    let (first, last) = (*names.first()?, *names.last()?);
    let mut best: Option<(usize, usize)> = None;
    for at in (0..=recorded.len().checked_sub(n)?)
        .rev()
        .filter(|&at| {
            name(at) == first
                && name(at + n - 1) == last
                && recorded[at].track == recorded[at + n - 1].track
        })
        .take(MAX_CANDIDATES)
    {
        let agree = (0..n).filter(|&k| name(at + k) == names[k]).count();
        if best.is_none_or(|(_, most)| agree > most) {
            best = Some((at, agree));
        }
    }
    best.filter(|&(_, agree)| 2 * agree >= n).map(|(at, _)| at)
}
