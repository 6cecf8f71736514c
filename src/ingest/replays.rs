//! Graph replays tied to the recorded launches of the same work. A kernel a CUDA/HIP graph
//! replays carries its graph launch's correlation, not the operator that launched it when the
//! graph was captured. Where the trace also records that work launched one by one (the warm-up
//! run before a capture, an eager run of the same code, a capture whose kernels the tracer
//! recorded), the replay's GPU records, in time order, are matched to those records, in launch
//! order on one host thread: the run whose first and last records have the replay's first and
//! last names and that agrees at the most positions (at least half). Each replayed record whose
//! name equals the recorded one at its position is tied to that one's launch; one that differs
//! stays untied (counted by `graphs::summarize`), never guessed.

use rustc_hash::FxHashMap;

use super::builder::Builder;
use crate::model::{Events, Launch, RuntimeClass, StrId, NONE};

/// Runs tried per distinct replay: the most recent first (the warm-up is nearest the capture).
const MAX_CANDIDATES: usize = 256;

/// For each graph-replayed GPU record tied to a recorded launch, `Launch { launch: that launch,
/// gpu: the replayed record }`, sorted by GPU event.
pub(super) fn tie(b: &Builder, e: &Events, launches: &[Launch]) -> Vec<Launch> {
    let is_graph = |l: u32| {
        let d = e.detail[l as usize];
        d != NONE && b.details.runtime_class(d) == RuntimeClass::GraphLaunch
    };
    let gpu_work = |g: u32| e.kind[g as usize].is_gpu_work();
    // Recorded one by one: each host thread's launches in order, with their records.
    let mut recorded: Vec<(u32, i64, u32, u32)> = launches
        .iter()
        .filter(|l| gpu_work(l.gpu) && !is_graph(l.launch))
        .map(|l| {
            let c = l.launch as usize;
            (e.track[c], e.start[c], l.launch, l.gpu)
        })
        .collect();
    if recorded.is_empty() {
        return Vec::new();
    }
    recorded.sort_unstable();
    // Each graph launch's records, in time order.
    let mut replays: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for l in launches
        .iter()
        .filter(|l| gpu_work(l.gpu) && is_graph(l.launch))
    {
        replays.entry(l.launch).or_default().push(l.gpu);
    }
    let mut order: Vec<(u32, Vec<u32>)> = replays.into_iter().collect();
    order.sort_unstable_by_key(|(l, _)| *l);
    // The same graph replays the same names: match each sequence once.
    let mut matched: FxHashMap<Vec<StrId>, Option<usize>> = FxHashMap::default();
    let mut ties = Vec::new();
    for (_, mut gpu) in order {
        gpu.sort_unstable_by_key(|&g| (e.start[g as usize], g));
        let names: Vec<StrId> = gpu.iter().map(|&g| e.name[g as usize]).collect();
        let at = *matched
            .entry(names.clone())
            .or_insert_with(|| best_run(e, &recorded, &names));
        let Some(at) = at else { continue };
        for (k, &g) in gpu.iter().enumerate() {
            let (_, _, launch, recorded_gpu) = recorded[at + k];
            if e.name[recorded_gpu as usize] == names[k] {
                ties.push(Launch { launch, gpu: g });
            }
        }
    }
    ties.sort_unstable_by_key(|l| (l.gpu, l.launch));
    ties
}

/// Where in `recorded` the run matching `names` starts: on one thread, first and last names
/// equal, most positions equal (at least half; ties to the latest run); `None` without one.
fn best_run(e: &Events, recorded: &[(u32, i64, u32, u32)], names: &[StrId]) -> Option<usize> {
    let n = names.len();
    let (first, last) = (*names.first()?, *names.last()?);
    let name = |k: usize| e.name[recorded[k].3 as usize];
    let mut best: Option<(usize, usize)> = None;
    for at in (0..=recorded.len().checked_sub(n)?)
        .rev()
        .filter(|&at| {
            name(at) == first
                && name(at + n - 1) == last
                && recorded[at].0 == recorded[at + n - 1].0
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
