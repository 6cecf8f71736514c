//! Steps split into windows aligned to their structure: data loading, forward, backward,
//! optimizer, communication; fixed-length slices where a step shows no such structure.
//!
//! Reads only the model. A window is a time range of one step; the CPU work in it is the events
//! of the CPU tracks in that range, and its GPU work is what those CPU events launched.
//!
//! `torch.compile`'s compilation and autotuning ([`Compiling`]) is start-up, like warm-up: a step
//! holding any is warm-up, and a first step's lead of it is its cold start.

use std::sync::LazyLock;

use crate::model::patterns::Patterns;
use crate::model::{EventKind, RuntimeClass, StepSource, Trace, NONE};

/// What part of a training or inference step a window holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    DataLoading,
    Forward,
    Backward,
    Optimizer,
    Communication,
    /// A fixed-length slice of a step without recognisable structure.
    Slice,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::DataLoading => "data loading",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
            Phase::Communication => "communication",
            Phase::Slice => "slice",
        }
    }
}

/// A time range of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Index into [`Steps::steps`].
    pub step: usize,
    pub phase: Phase,
    pub start: i64,
    pub end: i64,
    /// The first top-level range that opened the window (e.g. `## forward ##`), if any.
    pub label: Option<String>,
}

/// One step with its windows.
#[derive(Clone, Debug, PartialEq)]
pub struct StepWindows {
    pub number: i64,
    pub start: i64,
    pub end: i64,
    /// Warm-up steps are reported apart and kept out of steady-state statistics; so is a last
    /// step that launches no GPU work in a trace that has some (what the last `prof.step()`
    /// opens), a step with kernel launches after the capture's GPU record stopped (its GPU
    /// work is not all recorded: see [`unrecorded_launches`]), and one that compiles.
    pub warmup: bool,
    /// What a first step spent starting up before its first launch, left out of it.
    pub cold_start: Option<ColdStart>,
    pub windows: Vec<Window>,
}

/// A capture's cold start (see [`cold_start`]): `[start, end)`, left out of its first step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColdStart {
    pub start: i64,
    pub end: i64,
    /// The longest one-off call or range in it.
    pub longest: u32,
}

impl StepWindows {
    pub fn dur(&self) -> i64 {
        self.end - self.start
    }
}

/// Host time `torch.compile` spent compiling or autotuning, `[start, end)`: an outermost range
/// [`COMPILING`] names, or a compiled region's first call [`FIRST_CALL_SLOWDOWN`] times slower
/// than the median of its later ones. Kernels launched in it are its autotuning benchmarks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compiling {
    pub start: i64,
    pub end: i64,
    /// The range or call.
    pub event: u32,
}

/// All steps of a trace, split into windows.
#[derive(Clone, Debug)]
pub struct Steps {
    pub source: StepSource,
    pub steps: Vec<StepWindows>,
    /// Compilation and autotuning, by start, none inside another.
    pub compiling: Vec<Compiling>,
    /// Every piece of GPU work with the start of the CPU call that launched it, by that start.
    launched: Vec<(i64, u32)>,
}

impl Steps {
    /// Indices of the steady-state steps (all steps when every one is warm-up).
    pub fn steady(&self) -> Vec<usize> {
        let steady: Vec<usize> = (0..self.steps.len())
            .filter(|&i| !self.steps[i].warmup)
            .collect();
        if steady.is_empty() {
            (0..self.steps.len()).collect()
        } else {
            steady
        }
    }

    pub fn windows(&self) -> impl Iterator<Item = &Window> {
        self.steps.iter().flat_map(|s| s.windows.iter())
    }

    /// The GPU work launched from the window's CPU work (launch calls that start in it),
    /// wherever the GPU ran it: a window's own GPU work, not what merely overlaps it in time.
    pub fn launched_in(&self, w: &Window) -> impl Iterator<Item = u32> + '_ {
        self.launched_during(w.start, w.end)
    }

    /// The GPU work launched by calls that start in `[start, end)`.
    pub fn launched_during(&self, start: i64, end: i64) -> impl Iterator<Item = u32> + '_ {
        let from = self.launched.partition_point(|l| l.0 < start);
        let to = self.launched.partition_point(|l| l.0 < end);
        self.launched[from..to].iter().map(|l| l.1)
    }
}

/// A first step longer than this many times the median of the others is warm-up.
pub(crate) const WARMUP_SLOWDOWN: f64 = 1.25;
/// A first step with more than this many times the median device allocations of the others is
/// warm-up (the caching allocator filling up).
pub(crate) const WARMUP_ALLOCATIONS: f64 = 2.0;
/// One-off host work of at least this long before a first step's first launch (CUDA's lazy
/// initialisation in a `cudaFree`, cuDNN's first handle, a DataLoader starting its workers)…
pub(crate) const COLD_CALL_NS: i64 = 100_000_000;
/// …that fills at least this share of the step is the capture's cold start.
pub(crate) const COLD_SHARE: f64 = 0.25;
/// Host ranges of Dynamo's and Inductor's compilation (`_compile.compile_inner (dynamo_timed)`,
/// `compile_fx_inner`, `pad_mm_benchmark`: all timed so) and of autotuning.
const COMPILING: [&str; 2] = ["(dynamo_timed)", "autotune"];
/// A compiled region's first call this many times slower than the median of its later calls
/// (at least 2) compiled in it.
pub(crate) const FIRST_CALL_SLOWDOWN: f64 = 5.0;
/// Steps without structure are cut into slices of about this length…
pub(crate) const SLICE_NS: i64 = 10_000_000;
/// …but into no more than this many.
pub(crate) const MAX_SLICES: i64 = 64;

/// The phase a top-level CPU range announces by its name, if any.
pub(crate) fn phase_of(name: &str) -> Option<Phase> {
    static DATA: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&["dataloader", "__next__"]));
    static OPTIMIZER: LazyLock<Patterns> =
        LazyLock::new(|| Patterns::new(&["optimizer", "zero_grad"]));
    static BACKWARD: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&["backward"]));
    static COMMUNICATION: LazyLock<Patterns> = LazyLock::new(|| {
        Patterns::new(&["nccl:", "record_param_comms", "allreduce", "all_reduce"])
    });
    static FORWARD: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&["forward"]));
    let lower = name.to_ascii_lowercase();
    if DATA.any_in(&lower) {
        Some(Phase::DataLoading)
    } else if OPTIMIZER.any_in(&lower) {
        Some(Phase::Optimizer)
    } else if BACKWARD.any_in(&lower) || lower.starts_with("autograd::engine") {
        Some(Phase::Backward)
    } else if COMMUNICATION.any_in(&lower) || lower.starts_with("c10d::") {
        Some(Phase::Communication)
    } else if FORWARD.any_in(&lower) || lower.starts_with("nn.module") {
        Some(Phase::Forward)
    } else {
        None
    }
}

/// [`phase_of`] each event's name, each distinct name tested once (ops repeat their names).
pub struct Phases(Vec<Option<Option<Phase>>>);

impl Phases {
    pub fn new(t: &Trace) -> Phases {
        Phases(vec![None; t.strings.len()])
    }

    /// The phase event `i`'s name announces.
    pub(crate) fn of_event(&mut self, t: &Trace, i: usize) -> Option<Phase> {
        let name = t.events.name[i];
        *self.0[name as usize].get_or_insert_with(|| phase_of(t.strings.get(name)))
    }
}

/// Splits every step of the trace into windows.
pub fn split(t: &Trace) -> Steps {
    let e = &t.events;
    let mut malloc_times: Vec<i64> = t
        .recorded()
        .filter(|&i| {
            e.kind[i] == EventKind::RuntimeCall
                && e.detail[i] != NONE
                && t.runtime_class(i) == RuntimeClass::Malloc
        })
        .map(|i| e.start[i])
        .collect();
    malloc_times.sort_unstable();
    let mallocs: Vec<usize> = t
        .steps
        .iter()
        .map(|s| {
            malloc_times.partition_point(|&x| x < s.end)
                - malloc_times.partition_point(|&x| x < s.start)
        })
        .collect();
    let mut launch_times: Vec<i64> = t
        .launches
        .iter()
        .map(|l| e.start[l.launch as usize])
        .collect();
    launch_times.sort_unstable();
    // The last `prof.step()` opens a step that records nothing: with GPU work elsewhere, a last
    // step that launches none is left out of the steady state, and of the warm-up rule's median.
    let launches_in = |s: &crate::model::Step| {
        launch_times.partition_point(|&x| x < s.end)
            > launch_times.partition_point(|&x| x < s.start)
    };
    let empty_last = t.steps.len() >= 2
        && !launch_times.is_empty()
        && t.steps.last().is_some_and(|s| !launches_in(s));
    let unrecorded = unrecorded_launches(t);
    let compiling = compiling(t);
    let judged = t.steps.len() - usize::from(empty_last);
    let durations: Vec<i64> = t.steps[..judged].iter().map(|s| s.end - s.start).collect();
    let mut phases = Phases::new(t);
    let steps = t
        .steps
        .iter()
        .enumerate()
        .map(|(k, s)| {
            // A serving capture's iterations differ by kind (a prefill is no warm-up).
            let warmup = (k == 0
                && judged >= 2
                && t.step_source != StepSource::ServingIterations
                && is_warmup(&durations, &mallocs[..judged]))
                || (empty_last && k + 1 == t.steps.len())
                || unrecorded.partition_point(|&x| x < s.end)
                    > unrecorded.partition_point(|&x| x < s.start);
            let cold = if k == 0 && !warmup && s.event == NONE {
                cold_start(t, &mut phases, s, &compiling)
            } else {
                None
            };
            let start = cold.map_or(s.start, |c| c.end);
            let warmup = warmup
                || (t.steps.len() >= 2
                    && compiling[..compiling.partition_point(|c| c.start < s.end)]
                        .last()
                        .is_some_and(|c| c.end > start));
            let structured = if t.step_source == StepSource::ProfilerSteps {
                structure(t, &mut phases, k, s.event)
            } else {
                Vec::new()
            };
            let windows = if structured.len() >= 2 {
                structured
            } else {
                slices(k, start, s.end)
            };
            StepWindows {
                number: s.number,
                start,
                end: s.end,
                warmup,
                cold_start: cold,
                windows,
            }
        })
        .collect();
    let mut launched: Vec<(i64, u32)> = t
        .launches
        .iter()
        .map(|l| (e.start[l.launch as usize], l.gpu))
        .collect();
    launched.sort_unstable();
    Steps {
        launched,
        source: t.step_source,
        steps,
        compiling,
    }
}

/// Whether time `x` is in a compilation (`compiling` as [`Steps::compiling`] holds it).
fn in_compiling(compiling: &[Compiling], x: i64) -> bool {
    compiling[..compiling.partition_point(|c| c.start <= x)]
        .last()
        .is_some_and(|c| c.end > x)
}

/// The trace's [`Compiling`] spans, by start, none inside another.
fn compiling(t: &Trace) -> Vec<Compiling> {
    static NAMES: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&COMPILING));
    let e = &t.events;
    let mut named: Vec<Option<bool>> = vec![None; t.strings.len()];
    let mut regions: rustc_hash::FxHashMap<u32, Vec<usize>> = Default::default();
    let mut found: Vec<Compiling> = Vec::new();
    for track in t.tracks.iter().filter(|tr| !tr.gpu) {
        for i in track.events.clone().map(|i| i as usize) {
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation) {
                continue;
            }
            let name = e.name[i];
            let text = t.strings.get(name);
            if *named[name as usize].get_or_insert_with(|| NAMES.any_in(text)) {
                found.push(Compiling {
                    start: e.start[i],
                    end: e.end(i),
                    event: i as u32,
                });
            } else if text.starts_with("Torch-Compiled Region") {
                regions.entry(name).or_default().push(i);
            }
        }
    }
    for calls in regions.values() {
        let later = median(calls[1..].iter().map(|&i| e.dur[i] as f64).collect());
        if calls.len() >= 3 && e.dur[calls[0]] as f64 > FIRST_CALL_SLOWDOWN * later {
            found.push(Compiling {
                start: e.start[calls[0]],
                end: e.end(calls[0]),
                event: calls[0] as u32,
            });
        }
    }
    found.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
    let mut outermost: Vec<Compiling> = Vec::new();
    for c in found {
        if outermost.last().is_none_or(|o| o.end <= c.start) {
            outermost.push(c);
        }
    }
    outermost
}

/// The cold start of a step recorded without a `ProfilerStep#` range (a whole capture, or a
/// loop's first iteration): its lead before the first kernel's launch (outside compilation: not
/// an autotuning benchmark), where one-off host work (runtime calls and a multiprocessing
/// DataLoader's ranges of at least [`COLD_CALL_NS`] each, compilation; the part of them in the
/// lead) fills [`COLD_SHARE`] of the step. The step then holds its steady part, from the first
/// kernel's launch on.
fn cold_start(
    t: &Trace,
    phases: &mut Phases,
    s: &crate::model::Step,
    compiling: &[Compiling],
) -> Option<ColdStart> {
    let e = &t.events;
    // The first kernel's launch: set-up copies and memsets (cuDNN's workspace) come earlier.
    let first = t
        .launches
        .iter()
        .filter(|l| {
            matches!(
                e.kind[l.gpu as usize],
                EventKind::GpuKernel | EventKind::Collective
            )
        })
        .map(|l| e.start[l.launch as usize])
        .filter(|&x| x >= s.start && x < s.end && !in_compiling(compiling, x))
        .min()?;
    let mut spans: Vec<(i64, i64, usize)> = Vec::new();
    for track in t.tracks.iter().filter(|tr| !tr.gpu) {
        for i in track.events.clone().map(|i| i as usize) {
            let one_off = e.dur[i] >= COLD_CALL_NS
                && e.end(i) > s.start
                && e.start[i] < first
                && match e.kind[i] {
                    EventKind::RuntimeCall => true,
                    // Workers start only under a multiprocessing iterator: a single-process
                    // DataLoader's first batch is as slow as the others.
                    EventKind::CpuOp | EventKind::UserAnnotation => {
                        phases.of_event(t, i) == Some(Phase::DataLoading)
                            && t.name_of(i).contains("MultiProcessing")
                    }
                    _ => false,
                };
            if one_off {
                spans.push((e.start[i].max(s.start), e.end(i).min(first), i));
            }
        }
    }
    spans.extend(
        compiling
            .iter()
            .filter(|c| c.end > s.start && c.start < first)
            .map(|c| (c.start.max(s.start), c.end.min(first), c.event as usize)),
    );
    spans.sort_unstable();
    let (mut covered, mut reach) = (0i64, i64::MIN);
    for &(start, end, _) in &spans {
        covered += (end - start.max(reach)).max(0);
        reach = reach.max(end);
    }
    let longest = spans.iter().max_by_key(|x| x.1 - x.0)?.2;
    (covered as f64 >= COLD_SHARE * (s.end - s.start) as f64).then_some(ColdStart {
        start: s.start,
        end: first,
        longest: longest as u32,
    })
}

/// Kernel launches with no GPU record that start after the last launch that has one, sorted:
/// the capture's GPU record stopped before its host side did.
fn unrecorded_launches(t: &Trace) -> Vec<i64> {
    let e = &t.events;
    let Some(last) = t.launches.iter().map(|l| e.start[l.launch as usize]).max() else {
        return Vec::new();
    };
    let mut recorded: Vec<u32> = t.launches.iter().map(|l| l.launch).collect();
    recorded.sort_unstable();
    let mut lost: Vec<i64> = t
        .recorded()
        .filter(|&i| {
            e.kind[i] == EventKind::RuntimeCall
                && e.start[i] > last
                && e.detail[i] != NONE
                && t.runtime_class(i).launches()
                && recorded.binary_search(&(i as u32)).is_err()
        })
        .map(|i| e.start[i])
        .collect();
    lost.sort_unstable();
    lost
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn is_warmup(durations: &[i64], mallocs: &[usize]) -> bool {
    let rest_dur = median(durations[1..].iter().map(|&d| d as f64).collect());
    let rest_malloc = median(mallocs[1..].iter().map(|&m| m as f64).collect());
    durations[0] as f64 > WARMUP_SLOWDOWN * rest_dur
        || mallocs[0] as f64 > WARMUP_ALLOCATIONS * rest_malloc.max(1.0)
}

/// Windows from the direct children of the `ProfilerStep#` range (on its thread), and the
/// backward thread's activity in the gaps between them.
fn structure(t: &Trace, phases: &mut Phases, step: usize, step_event: u32) -> Vec<Window> {
    if step_event == NONE {
        return Vec::new();
    }
    let e = &t.events;
    let (start, end) = (e.start[step_event as usize], e.end(step_event as usize));
    let track = &t.tracks[e.track[step_event as usize] as usize];
    let mut segments: Vec<(i64, Option<Phase>, Option<String>)> = Vec::new();
    for i in children(t, step_event) {
        let name = t.name_of(i).to_string();
        segments.push((e.start[i], phases.of_event(t, i), Some(name)));
    }
    // Backward runs on autograd's own thread: its top-level ranges fill the main thread's gaps.
    for other in t
        .tracks
        .iter()
        .filter(|o| !o.gpu && o.events != track.events)
    {
        let r = other.events.clone();
        let first = r.start
            + e.start[r.start as usize..r.end as usize].partition_point(|&s| s < start) as u32;
        for i in first..r.end {
            let iu = i as usize;
            if e.start[iu] >= end {
                break;
            }
            if e.parent[iu] == NONE
                && e.kind[iu] == EventKind::CpuOp
                && phases.of_event(t, iu) == Some(Phase::Backward)
            {
                let name = t.name_of(iu).to_string();
                segments.push((e.start[iu], Some(Phase::Backward), Some(name)));
            }
        }
    }
    segments.sort_by_key(|s| s.0);
    let mut windows: Vec<Window> = Vec::new();
    for (at, phase, label) in segments {
        let phase = phase
            .or(windows.last().map(|w| w.phase))
            .unwrap_or(Phase::Forward);
        match windows.last_mut() {
            Some(w) if w.phase == phase => {}
            _ => windows.push(Window {
                step,
                phase,
                start: at,
                end: at,
                label,
            }),
        }
    }
    let n = windows.len();
    for k in 0..n {
        windows[k].end = if k + 1 < n { windows[k + 1].start } else { end };
    }
    if let Some(first) = windows.first_mut() {
        first.start = start;
    }
    windows
}

/// The direct children of CPU range `parent`, in track order. A child follows its parent in
/// the track and starts within it (`ingest::assemble`'s call trees): the scan stops past the
/// parent's end instead of reading the whole track.
fn children(t: &Trace, parent: u32) -> impl Iterator<Item = usize> + '_ {
    let e = &t.events;
    let p = parent as usize;
    let last = t.tracks[e.track[p] as usize].events.end as usize;
    (p + 1..last)
        .take_while(move |&i| e.start[i] <= e.end(p))
        .filter(move |&i| e.parent[i] == parent)
}

fn slices(step: usize, start: i64, end: i64) -> Vec<Window> {
    let dur = (end - start).max(1);
    let n = ((dur + SLICE_NS - 1) / SLICE_NS).clamp(1, MAX_SLICES);
    (0..n)
        .map(|k| Window {
            step,
            phase: Phase::Slice,
            start: start + dur * k / n,
            end: start + dur * (k + 1) / n,
            label: None,
        })
        .collect()
}

/// The bundled sample (`www/samples/`: a generated ResNet-50 training trace with DataLoader
/// stalls, kept current by `tests/synth.rs`), read: for tests that compare a fast path with its
/// definition on every event. The generator itself is in the development crate, which the
/// library's own tests cannot use.
#[cfg(test)]
pub(crate) fn generated_trace() -> Trace {
    use crate::ingest::{ingest_bytes, IngestOptions};
    let gzip = include_bytes!("../www/samples/resnet50-a100-dataloader.pt.trace.json.gz");
    ingest_bytes(gzip, IngestOptions::default())
        .expect("the sample ingests")
        .trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_children_and_phases_are_those_of_the_whole_track() {
        let t = generated_trace();
        let e = &t.events;
        let mut phases = Phases::new(&t);
        for i in 0..e.len() {
            assert_eq!(phases.of_event(&t, i), phase_of(t.name_of(i)), "event {i}");
        }
        let mut seen = 0;
        for step in t.steps.iter().filter(|s| s.event != NONE) {
            let track = &t.tracks[e.track[step.event as usize] as usize];
            let everywhere: Vec<usize> = track
                .events
                .clone()
                .map(|i| i as usize)
                .filter(|&i| e.parent[i] == step.event)
                .collect();
            assert_eq!(children(&t, step.event).collect::<Vec<_>>(), everywhere);
            seen += everywhere.len();
        }
        assert!(seen >= 6, "the steps hold phases: {seen} children");
    }

    #[test]
    fn names_announce_phases() {
        assert_eq!(
            phase_of("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
            Some(Phase::DataLoading)
        );
        assert_eq!(phase_of("## forward ##"), Some(Phase::Forward));
        assert_eq!(phase_of("## backward ##"), Some(Phase::Backward));
        assert_eq!(
            phase_of("autograd::engine::evaluate_function: ConvolutionBackward0"),
            Some(Phase::Backward)
        );
        assert_eq!(phase_of("Optimizer.step#SGD.step"), Some(Phase::Optimizer));
        assert_eq!(
            phase_of("Optimizer.zero_grad#SGD.zero_grad"),
            Some(Phase::Optimizer)
        );
        assert_eq!(phase_of("nccl:all_reduce"), Some(Phase::Communication));
        assert_eq!(phase_of("aten::to"), None);
    }

    #[test]
    fn unstructured_steps_become_equal_slices() {
        let w = slices(0, 0, 25_000_000);
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].start, w[2].end), (0, 25_000_000));
        assert!(w.windows(2).all(|p| p[0].end == p[1].start));
        assert_eq!(slices(0, 0, 10_000_000_000).len(), MAX_SLICES as usize);
    }
}
