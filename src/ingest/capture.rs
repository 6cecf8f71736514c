//! Graph replays tied to a capture trace given beside them. A serving engine, or
//! `torch.compile(mode="reduce-overhead")`, captures its CUDA/HIP graphs in a warm-up that a
//! trace of the replays does not hold. Given a trace of that warm-up (its runs recorded one by
//! one: the eager passes before each capture), the replays are matched to its runs as
//! `replays` matches them within one trace (kernel names in order, at least half agreeing; a
//! differing name stays untied, never guessed), and each tied launch of the capture trace, with
//! its callers (operators with their shapes, module frames, labels), is grafted into the replay
//! trace: appended past every track's events, in no track (`Trace::recorded` ends before them),
//! reached only through `Trace::origin_of`. Their times are the capture's own clock: nothing
//! compares them with the replay's.

use rustc_hash::FxHashMap;

use super::{replays, Ingested};
use crate::model::{Captured, EventKind, Launch, OpDetail, StrId, Trace, NONE};

impl Ingested {
    /// This trace of graph replays with the capture trace `capture` (named `from`) given beside
    /// it: the replays its own records do not tie are matched to the capture's runs, and each
    /// tied kernel gets the operator and module that launched it at capture
    /// (`Trace::captured` says how many).
    pub fn with_capture(mut self, capture: &Ingested, from: &str) -> Ingested {
        graft(&mut self.trace, &capture.trace, from);
        self
    }
}

/// Ties the graph replays of `replay` that its own records do not tie to the runs of
/// `capture` (named `from`), and grafts the tied launches and their callers into `replay`.
fn graft(replay: &mut Trace, capture: &Trace, from: &str) {
    let c = &capture.events;
    let recorded = replays::recorded(&capture.details, c, &capture.launches);
    // The capture's kernel names in the replay's ids (NONE: a name the replay never has).
    let names: Vec<StrId> = recorded
        .iter()
        .map(|r| {
            replay
                .strings
                .find(capture.name_of(r.gpu as usize))
                .unwrap_or(NONE)
        })
        .collect();
    let untied: Vec<Vec<u32>> = replays::replays(&replay.details, &replay.events, &replay.launches)
        .into_iter()
        .filter(|gpu| {
            !gpu.iter()
                .any(|&g| replay.origin_of(g) != replay.launch_of(g))
        })
        .collect();
    let ties = replays::match_replays(&replay.events, &untied, &recorded, |k| names[k]);
    // The tied launches and their callers, in the capture's event order (callers first).
    let mut taken: Vec<u32> = ties
        .iter()
        .flat_map(|l| capture.and_parents(l.launch as usize))
        .filter(|&i| grafted_kind(c.kind[i]))
        .map(|i| i as u32)
        .collect();
    taken.sort_unstable();
    taken.dedup();
    let first = replay.events.len() as u32;
    let at: FxHashMap<u32, u32> = taken
        .iter()
        .enumerate()
        .map(|(k, &i)| (i, first + k as u32))
        .collect();
    for &i in &taken {
        let i = i as usize;
        let name = replay.strings.intern(capture.name_of(i));
        let cat = replay.strings.intern(capture.strings.get(c.cat[i]));
        let detail = copy_detail(replay, capture, i);
        // The nearest caller grafted too (a profiler step above is not).
        let parent = capture
            .and_parents(i)
            .skip(1)
            .find_map(|p| at.get(&(p as u32)).copied())
            .unwrap_or(NONE);
        let e = &mut replay.events;
        e.start.push(c.start[i]);
        e.dur.push(c.dur[i]);
        e.name.push(name);
        e.cat.push(cat);
        e.kind.push(c.kind[i]);
        e.track.push(NONE);
        e.detail.push(detail);
        e.parent.push(parent);
        e.depth.push(c.depth[i]);
    }
    let replayed: u64 = untied.iter().map(|g| g.len() as u64).sum();
    replay.replayed_from.extend(ties.iter().map(|l| Launch {
        launch: at[&l.launch],
        gpu: l.gpu,
    }));
    replay
        .replayed_from
        .sort_unstable_by_key(|l| (l.gpu, l.launch));
    replay.captured = Some(Captured {
        from: from.to_string(),
        first_event: first,
        replayed,
        tied: ties.len() as u64,
    });
}

/// What a grafted launch's callers may be: what gives a kernel its operator and module.
fn grafted_kind(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::RuntimeCall
            | EventKind::CpuOp
            | EventKind::UserAnnotation
            | EventKind::PythonFunction
    )
}

/// Event `i`'s details from `capture`, written into `replay`'s with its strings re-interned.
fn copy_detail(replay: &mut Trace, capture: &Trace, i: usize) -> u32 {
    let d = capture.events.detail[i];
    if d == NONE {
        return NONE;
    }
    match capture.events.kind[i] {
        EventKind::RuntimeCall => replay.details.push_runtime(&capture.details.runtime(d)),
        EventKind::CpuOp | EventKind::UserAnnotation => {
            let o = capture.details.op(d);
            let mut text =
                |s: Option<StrId>| s.map(|s| replay.strings.intern(capture.strings.get(s)));
            let op = OpDetail {
                input_dims: text(o.input_dims),
                input_types: text(o.input_types),
                concrete_inputs: text(o.concrete_inputs),
                collective: None,
                ..o
            };
            replay.details.push_op(&op)
        }
        _ => NONE,
    }
}
