//! The iterations of a capture without `ProfilerStep#` ranges: one `with profile():` around a
//! loop. On the thread that starts first, the outermost user events (ops and `record_function`
//! ranges, Python frames crossed) are read as a sequence of names; a name that starts the same
//! sequence again and again ([`MIN_MATCHING`] of the repeats), whose repeats cover
//! [`MIN_COVER`] of the sequence, marks the iterations: each runs from one of its occurrences to
//! the next (the last to the end of its ops and of the GPU work they launched). Where one range
//! (`model_inference`) holds most of the sequence and nothing repeats around it, its children
//! are read instead. A single call is not cut: the repeats must start the sequence and cover
//! most of it, and a forward pass's layers come after its embedding; one op repeated alone is
//! a benchmark of that op.

use rustc_hash::FxHashMap;

use crate::model::{EventKind, Events, Launch, Step, StepSource, StrId, Strings, Track, NONE};

/// Share of the sequence the repeats must cover.
const MIN_COVER: f64 = 0.9;
/// Share of the repeats that must be the same sequence of names.
const MIN_MATCHING: f64 = 0.75;
/// A range holding at least this share of its level's span is descended into.
const HOLDS: f64 = 0.5;
/// Levels descended at most.
const MAX_DEPTH: usize = 4;
/// Names tried as the iteration's first, fewest repeats first.
const MAX_TRIED: usize = 64;

/// A range that is a phase of an iteration (its optimizer step, its backward, its batch), not
/// one around the loop: its repeats are per parameter or per worker, not iterations.
fn is_phase(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["optimizer", "zero_grad", "backward", "dataloader"]
        .iter()
        .any(|p| lower.contains(p))
}

fn is_user(kind: EventKind) -> bool {
    matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
}

/// The iterations, if the capture shows a loop, with the kind of event that marks them.
pub(super) fn iterations(
    strings: &Strings,
    e: &Events,
    tracks: &[Track],
    launches: &[Launch],
) -> Option<(Vec<Step>, StepSource)> {
    let track = tracks
        .iter()
        .filter(|t| !t.gpu)
        .filter_map(|t| {
            let first = t
                .events
                .clone()
                .map(|i| i as usize)
                .find(|&i| is_user(e.kind[i]))?;
            Some((e.start[first], t))
        })
        .min_by_key(|(start, _)| *start)?
        .1;
    let range = track.events.start as usize..track.events.end as usize;
    // Each event's nearest enclosing user event (NONE: none), Python frames crossed.
    let mut near = vec![NONE; range.len()];
    for i in range.clone() {
        let p = e.parent[i];
        if p != NONE && (p as usize) >= range.start && (p as usize) < i {
            near[i - range.start] = if is_user(e.kind[p as usize]) {
                p
            } else {
                near[p as usize - range.start]
            };
        }
    }
    let level_under = |holder: u32| -> Vec<usize> {
        range
            .clone()
            .filter(|&i| is_user(e.kind[i]) && near[i - range.start] == holder)
            .collect()
    };
    let mut level = level_under(NONE);
    for _ in 0..MAX_DEPTH {
        let names: Vec<StrId> = level.iter().map(|&i| e.name[i]).collect();
        if let Some((anchors, period)) = repeats(&names) {
            let source = match e.kind[level[anchors[0]]] {
                EventKind::UserAnnotation => StepSource::RepeatedAnnotations,
                _ => StepSource::RepeatedOps,
            };
            // One op called again and again is a benchmark of that op, not a loop's body.
            if source == StepSource::RepeatedAnnotations || period >= 2 {
                return Some((steps(e, launches, &level, &anchors, period), source));
            }
        }
        let (first, last) = (level.first()?, level.last()?);
        let span = (e.end(*last) - e.start[*first]) as f64;
        let holder = level
            .iter()
            .copied()
            .filter(|&i| {
                e.kind[i] == EventKind::UserAnnotation && !is_phase(strings.get(e.name[i]))
            })
            .max_by_key(|&i| e.dur[i])
            .filter(|&i| e.dur[i] as f64 >= HOLDS * span)?;
        level = level_under(holder as u32);
    }
    None
}

/// Where the iterations start in `names` and how many names one holds, if they repeat.
fn repeats(names: &[StrId]) -> Option<(Vec<usize>, usize)> {
    let mut at: FxHashMap<StrId, Vec<usize>> = FxHashMap::default();
    for (k, &n) in names.iter().enumerate() {
        at.entry(n).or_default().push(k);
    }
    let mut tried: Vec<&Vec<usize>> = at.values().filter(|p| p.len() >= 2).collect();
    tried.sort_by_key(|p| (p.len(), p[0]));
    tried.into_iter().take(MAX_TRIED).find_map(|positions| {
        let segments: Vec<&[StrId]> = positions.windows(2).map(|w| &names[w[0]..w[1]]).collect();
        let mut same: FxHashMap<&[StrId], usize> = FxHashMap::default();
        for s in &segments {
            *same.entry(s).or_default() += 1;
        }
        let (pattern, matching) = same.into_iter().max_by_key(|(s, n)| (*n, s.len()))?;
        // The iteration starts where the repeats start: as far before the name tried as the
        // names before it repeat too (the name tried may be an iteration's eighth op).
        let (first, next) = (positions[0], positions[1]);
        let back = (1..=first)
            .take_while(|&b| names[first - b] == names[next - b])
            .count();
        let anchors: Vec<usize> = positions.iter().map(|&p| p - back).collect();
        let last = &names[anchors[anchors.len() - 1]..];
        let covered = pattern.len() * (anchors.len() - 1) + last.len().min(pattern.len());
        (matching as f64 >= MIN_MATCHING * segments.len() as f64
            && anchors[0] == 0
            && last.len() * 2 >= pattern.len()
            && covered as f64 >= MIN_COVER * names.len() as f64)
            .then_some((anchors, pattern.len()))
    })
}

/// One step per iteration: from its first event to the next iteration's; the last to the end of
/// its `period` events and of the GPU work launched in it.
fn steps(
    e: &Events,
    launches: &[Launch],
    level: &[usize],
    anchors: &[usize],
    period: usize,
) -> Vec<Step> {
    let last = anchors[anchors.len() - 1];
    let cpu_end = level[last..(last + period).min(level.len())]
        .iter()
        .map(|&i| e.end(i))
        .max()
        .unwrap_or(0);
    let end = gpu_end(e, launches, e.start[level[last]], cpu_end);
    anchors
        .iter()
        .enumerate()
        .map(|(k, &a)| Step {
            number: k as i64 + 1,
            start: e.start[level[a]],
            end: anchors.get(k + 1).map_or(end, |&next| e.start[level[next]]),
            event: NONE,
        })
        .collect()
}

/// The end of a last iteration whose host work runs `from..to`: the later of `to` and the end of
/// the GPU work launched in it.
pub(super) fn gpu_end(e: &Events, launches: &[Launch], from: i64, to: i64) -> i64 {
    launches
        .iter()
        .filter(|l| (from..to).contains(&e.start[l.launch as usize]))
        .map(|l| e.end(l.gpu as usize))
        .fold(to, i64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_repeats_and_a_forward_pass_does_not() {
        // Set-up and a tail around 3 iterations of 4 ops: 12 of 14 names, too few.
        let names = [9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5];
        assert_eq!(repeats(&names), None);
        // 5 iterations, one with an extra op (`loss.item()` every so often).
        let names = [
            1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 7, 1, 2, 3, 4, 1, 2, 3, 4,
        ];
        assert_eq!(repeats(&names), Some((vec![0, 4, 8, 13, 17], 4)));
        // Layers of one forward pass between an embedding and a head: 2 × 2 of 8.
        let names = [8, 8, 8, 1, 2, 1, 2, 9];
        assert_eq!(repeats(&names), None);
        // 10 layers after an embedding: they cover 31 of 32 names, but the sequence does not
        // start with them.
        let mut names = vec![5];
        names.extend([1, 2, 3].repeat(10));
        names.push(6);
        assert_eq!(repeats(&names), None);
    }
}
