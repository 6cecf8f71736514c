//! The normalized trace model: what every later stage reads.
//!
//! Invariants (established by `ingest`, relied on by everything downstream):
//! - times are integer nanoseconds on the trace's own clock; durations are `>= 0`;
//! - events are stored column by column and sorted by `(track, start, longest first)`, so each
//!   track's events are the contiguous range `Track::events`; events past `Trace::recorded`
//!   were grafted from a capture trace (`ingest::capture`): in no track (`track == NONE`),
//!   reached only through `Trace::origin_of`;
//! - on CPU tracks, `parent` and `depth` give the call tree of the nesting kinds
//!   ([`EventKind::nests_on_cpu`]); events that are not nested have `parent == NONE`;
//! - `detail` is the offset of the event's record in [`Details`] (decoded by the event's kind:
//!   kernel, copy, runtime call, op or memory), or `NONE`;
//! - names and categories are interned in `strings`; no event owns a `String`.
//!
//! Steps are the `ProfilerStep#N` ranges when recorded; without any, a serving engine's
//! iterations (its model runner's ranges: `ingest::serving`), else the iterations of a loop
//! (a repeating `record_function` range or sequence of ops: `ingest::iterations`), else (single
//! forward passes) one step over the GPU's work, from the first batch loaded before it
//! (`StepSource::WholeTrace`; the whole span on CPU-only traces). Launch links join a runtime call and its GPU work by their shared
//! `correlation`, else by launch flow events (`ac2g`, `async`, …) bound to their endpoints.
//! The columns and `Details` the ingest builds derive serde, for the web app's workers,
//! which send a block's partial model to the worker that merges them (`ingest::blocks`);
//! views serialize their own types.

pub mod anti_pattern;
pub mod details;
pub mod fingerprint;
pub mod footprint;
pub mod kernels;
pub mod kind;
pub mod patterns;
mod strings;

use serde::{Deserialize, Serialize};

pub use anti_pattern::AntiPattern;
pub use details::Details;
pub use kind::{CopyDirection, EventKind, HostMemory, RuntimeClass};
pub use strings::{StrId, Strings};

/// What Kineto writes before a module's name in a Python-function range.
const MODULE_PREFIX: &str = "nn.Module: ";

/// "No index": used for absent parents, details and links.
pub const NONE: u32 = u32::MAX;

/// Columnar event storage; every column has one entry per event.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Events {
    pub start: Vec<i64>,
    pub dur: Vec<i64>,
    pub name: Vec<StrId>,
    pub cat: Vec<StrId>,
    pub kind: Vec<EventKind>,
    pub track: Vec<u32>,
    pub detail: Vec<u32>,
    pub parent: Vec<u32>,
    pub depth: Vec<u16>,
}

impl Events {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    pub fn end(&self, i: usize) -> i64 {
        self.start[i] + self.dur[i]
    }

    /// Rows the columns filled while reading hold without growing (the fewest of any).
    pub fn capacity(&self) -> usize {
        [
            self.start.capacity(),
            self.dur.capacity(),
            self.name.capacity(),
            self.cat.capacity(),
            self.kind.capacity(),
            self.track.capacity(),
            self.detail.capacity(),
        ]
        .into_iter()
        .min()
        .unwrap_or(0)
    }

    /// Makes room for `rows` more rows in the columns filled while reading, exactly, as far as
    /// memory allows: a column that cannot have it stays as it is (and grows as it fills).
    pub(crate) fn try_reserve_exact(&mut self, rows: usize) {
        let _ = self.start.try_reserve_exact(rows);
        let _ = self.dur.try_reserve_exact(rows);
        let _ = self.name.try_reserve_exact(rows);
        let _ = self.cat.try_reserve_exact(rows);
        let _ = self.kind.try_reserve_exact(rows);
        let _ = self.track.try_reserve_exact(rows);
        let _ = self.detail.try_reserve_exact(rows);
    }

    /// Frees the room the columns filled while reading hold beyond their rows.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.start.shrink_to_fit();
        self.dur.shrink_to_fit();
        self.name.shrink_to_fit();
        self.cat.shrink_to_fit();
        self.kind.shrink_to_fit();
        self.track.shrink_to_fit();
        self.detail.shrink_to_fit();
    }
}

/// A CPU thread or a GPU stream: one row group of the timeline.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Track {
    /// `pid` as written in the trace (a number or a label such as `Spans`).
    pub pid: StrId,
    /// `tid` as written in the trace (a number, or a label such as `stream 7`).
    pub tid: StrId,
    /// Whether the track holds GPU-side events.
    pub gpu: bool,
    /// GPU device index, for GPU tracks (from the events' `device` argument, else the pid).
    pub device: Option<i64>,
    /// CUDA/HIP stream id, for GPU tracks.
    pub stream: Option<i64>,
    /// `process_name` metadata of the pid, if any.
    pub process_name: Option<StrId>,
    /// `thread_name` metadata of the tid, if any.
    pub thread_name: Option<StrId>,
    /// The half-open range of this track's events in [`Events`].
    pub events: std::ops::Range<u32>,
}

/// Launch configuration and resource use of one kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelDetail {
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub correlation: Option<u64>,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub registers_per_thread: Option<u32>,
    pub(crate) shared_memory: Option<u64>,
    /// `est. achieved occupancy %` (2.x) or `theoretical occupancy %` (1.x).
    pub occupancy_pct: Option<f32>,
    /// Index into [`Trace::collectives`] for collective kernels that carry their arguments.
    pub collective: Option<u32>,
}

/// One memcpy or memset on a GPU stream.
#[derive(Clone, Copy, Debug)]
pub struct CopyDetail {
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub correlation: Option<u64>,
    pub bytes: Option<u64>,
    pub(crate) bandwidth_gbps: Option<f32>,
    pub direction: CopyDirection,
    pub host_memory: HostMemory,
}

/// One CUDA/HIP runtime or driver call.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeDetail {
    pub class: RuntimeClass,
    pub correlation: Option<u64>,
}

/// Arguments kept for CPU ops and annotations.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpDetail {
    pub external_id: Option<u64>,
    pub(crate) sequence_number: Option<u64>,
    /// `Input Dims` as written (interned JSON text, e.g. `[[32, 3, 224, 224], [64, 3, 7, 7]]`).
    pub input_dims: Option<StrId>,
    /// `Input type` as written (interned JSON text, e.g. `["float", "c10::Half"]`).
    pub input_types: Option<StrId>,
    /// `Concrete Inputs` as written (interned JSON text, e.g. `["", "", "", "[2, 2]", …]`),
    /// kept only where [`keeps_concrete_inputs`]: the scalars FLOP counts need.
    pub concrete_inputs: Option<StrId>,
    /// Index into [`Trace::collectives`] for `record_param_comms` and c10d ops.
    pub collective: Option<u32>,
}

/// Whether an op's `Concrete Inputs` are kept: convolutions (stride, padding, dilation,
/// transposed, groups), attention (causal) and `contiguous` (the memory format it converts to).
/// Other ops' scalars would only cost memory.
pub(crate) fn keeps_concrete_inputs(name: &str) -> bool {
    name.contains("conv") || name.contains("attention") || name == "aten::contiguous"
}

/// A collective's name and sizes, from a `record_param_comms` op or an NCCL kernel.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CollectiveDetail {
    pub name: Option<StrId>,
    pub in_elements: Option<u64>,
    pub(crate) out_elements: Option<u64>,
    pub group_size: Option<u64>,
    pub dtype: Option<StrId>,
    pub(crate) process_group: Option<StrId>,
}

/// One caching-allocator event (`[memory]`).
#[derive(Clone, Copy, Debug)]
pub struct MemoryDetail {
    /// Positive for an allocation, negative for a free.
    pub bytes: i64,
    pub total_allocated: Option<i64>,
    pub(crate) total_reserved: Option<i64>,
    /// `Device Type` (0 = CPU, 1 = CUDA in Kineto's numbering).
    pub device_type: Option<i64>,
    pub device_id: Option<i64>,
}

/// A CPU launch (runtime call) and one piece of GPU work it queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub launch: u32,
    pub gpu: u32,
}

/// A forward op linked to the backward op autograd ran for it (`fwdbwd` flows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForwardBackward {
    pub forward: u32,
    pub backward: u32,
}

/// One training or inference step.
#[derive(Clone, Debug)]
pub struct Step {
    /// `N` of `ProfilerStep#N`; `0` for the whole-trace fallback.
    pub number: i64,
    pub start: i64,
    pub end: i64,
    /// The `ProfilerStep#N` event, or the range marking a serving iteration; `NONE` otherwise.
    pub event: u32,
}

/// Where the steps came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// `ProfilerStep#N` ranges recorded by `torch.profiler.profile(schedule=…)` and `prof.step()`.
    ProfilerSteps,
    /// No `ProfilerStep#` range and no loop seen (a single call): one step from the first kernel
    /// launch or GPU work, or the first DataLoader range before them (the host loading the
    /// first batch while the GPU waits counts; the profiler's start-up does not), to the end of
    /// the last GPU work; over the whole span of the trace's events when there is no GPU work.
    WholeTrace,
    /// No `ProfilerStep#` range: one step per iteration of a loop, marked by a `record_function`
    /// range that repeats (`train_step`, `enumerate(DataLoader)…__next__`)…
    RepeatedAnnotations,
    /// …or by a top-level op that starts the same sequence of ops again and again.
    RepeatedOps,
    /// No `ProfilerStep#` range: one step per iteration of a serving engine (vLLM, SGLang,
    /// TGI), marked by its model runner's range (`ingest::serving`).
    ServingIterations,
}

impl StepSource {
    /// The name reports and links carry (`whole_trace` as before this version's iterations).
    pub fn label(self) -> &'static str {
        match self {
            StepSource::ProfilerSteps => "profiler_steps",
            StepSource::WholeTrace => "whole_trace",
            StepSource::RepeatedAnnotations => "repeated_annotations",
            StepSource::RepeatedOps => "repeated_ops",
            StepSource::ServingIterations => "serving_iterations",
        }
    }
}

/// A GPU described in `deviceProperties`.
#[derive(Clone, Debug, Default)]
pub struct Device {
    pub id: Option<i64>,
    pub name: Option<String>,
    pub(crate) total_global_mem: Option<u64>,
    pub compute_major: Option<i64>,
    pub(crate) compute_minor: Option<i64>,
    pub num_sms: Option<i64>,
    pub(crate) max_threads_per_multiprocessor: Option<i64>,
    pub(crate) regs_per_multiprocessor: Option<i64>,
    pub(crate) shared_mem_per_multiprocessor: Option<u64>,
    pub(crate) warp_size: Option<i64>,
}

/// How the JSON was laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Container {
    /// `{"traceEvents": [...], ...}` as written by Kineto.
    Object,
    /// A bare JSON array of events.
    Array,
}

/// Which generation of the PyTorch profiler wrote the trace, as far as its content tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// PyTorch 1.8–1.10: capitalised categories (`Operator`, `Kernel`, `Runtime`).
    Torch1_8,
    /// PyTorch 1.11–2.1: lower-case categories (`cpu_op`, `kernel`, `cuda_runtime`).
    Torch1_11,
    /// PyTorch 2.2 and later: `baseTimeNanoseconds` or `Concrete Inputs` present.
    Torch2_2,
    /// A Chrome trace from another tool, read because the caller asked for it.
    NotPyTorch,
}

impl Era {
    pub fn label(self) -> &'static str {
        match self {
            Era::Torch1_8 => "PyTorch 1.8-1.10 (capitalised categories)",
            Era::Torch1_11 => "PyTorch 1.11-2.1",
            Era::Torch2_2 => "PyTorch 2.2+",
            Era::NotPyTorch => "not PyTorch (generic Chrome trace)",
        }
    }
}

/// Facts about the whole trace.
#[derive(Clone, Debug)]
pub struct TraceMeta {
    pub container: Container,
    pub era: Era,
    /// `schemaVersion` as written.
    pub schema_version: Option<String>,
    pub(crate) trace_name: Option<String>,
    pub(crate) display_time_unit: Option<String>,
    pub base_time_ns: Option<i64>,
    pub devices: Vec<Device>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    /// Communication backend from `distributedInfo` (`nccl`, `gloo`, …).
    pub backend: Option<String>,
    /// Earliest start and latest end over all timed events.
    pub span: Option<(i64, i64)>,
    /// GPU records clipped where they overran the next on their stream.
    pub clipped: Clipped,
}

/// GPU records that overran the next one on their stream, and by how much in all: each was
/// clipped to that one's start (`ingest::assemble`), so that no time counts twice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clipped {
    pub records: u64,
    pub ns: i64,
    /// Each clipped record with its duration as written, by event: what the fingerprint reads.
    pub(crate) written: Vec<(u32, i64)>,
}

/// The whole normalized trace.
#[derive(Debug)]
pub struct Trace {
    pub meta: TraceMeta,
    pub strings: Strings,
    pub events: Events,
    pub tracks: Vec<Track>,
    /// Each event's details, at its `detail` offset.
    pub details: Details,
    pub collectives: Vec<CollectiveDetail>,
    /// Launch links, sorted by GPU event.
    pub launches: Vec<Launch>,
    pub forward_backward: Vec<ForwardBackward>,
    /// Graph-replayed GPU records tied to the recorded launch of the same work
    /// (`ingest::replays`): `launch` is that launch call, `gpu` the replayed record; sorted
    /// by GPU event.
    pub replayed_from: Vec<Launch>,
    pub steps: Vec<Step>,
    pub step_source: StepSource,
    /// The capture trace given beside this one, if any, and what of it was grafted.
    pub captured: Option<Captured>,
}

/// A capture trace given beside a trace of graph replays (`ingest::capture`): the launches
/// that replays were tied to, with their callers, are grafted into the replay trace's events
/// from `first_event` on, in no track.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The capture trace's name, as given.
    pub from: String,
    /// Where the grafted events start in [`Events`]: past every track's.
    pub first_event: u32,
    /// Graph-replayed records the replay trace did not tie itself, and how many of them the
    /// capture trace tied.
    pub replayed: u64,
    pub tied: u64,
}

impl Trace {
    /// The events the trace records: all but those grafted from a capture trace
    /// ([`Captured`]), which are reached only through [`Trace::origin_of`].
    pub fn recorded(&self) -> std::ops::Range<usize> {
        0..self
            .captured
            .as_ref()
            .map_or(self.events.len(), |c| c.first_event as usize)
    }

    pub fn name_of(&self, event: usize) -> &str {
        self.strings.get(self.events.name[event])
    }

    /// The events of `event`'s track that start inside it, after it: its descendants in the
    /// call tree (tracks sort by start, longest first).
    pub(crate) fn nested_in(&self, event: usize) -> impl Iterator<Item = usize> + '_ {
        let e = &self.events;
        let last = self.tracks[e.track[event] as usize].events.end as usize;
        (event + 1..last).take_while(move |&j| e.start[j] < e.end(event))
    }

    /// The module frame `event` opens, if it is one: the `nn.Module`'s name (`Linear_3` for
    /// `nn.Module: Linear_3`, `true`) or a `record_function` label (`false`).
    pub(crate) fn module_frame(&self, event: usize) -> Option<(&str, bool)> {
        match self.events.kind[event] {
            EventKind::PythonFunction => self
                .name_of(event)
                .strip_prefix(MODULE_PREFIX)
                .map(|name| (name, true)),
            EventKind::UserAnnotation => Some((self.name_of(event), false)),
            _ => None,
        }
    }

    /// The runtime class of `event`, a runtime call with details.
    pub fn runtime_class(&self, event: usize) -> RuntimeClass {
        self.details.runtime_class(self.events.detail[event])
    }

    /// Number of events of each kind.
    pub fn count_by_kind(&self) -> Vec<(EventKind, usize)> {
        let mut counts = [0usize; EventKind::ALL.len()];
        for &k in &self.events.kind[self.recorded()] {
            counts[k as usize] += 1;
        }
        EventKind::ALL
            .iter()
            .map(|&k| (k, counts[k as usize]))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// The CPU launch that queued a GPU event, if it is known.
    pub fn launch_of(&self, gpu_event: u32) -> Option<u32> {
        let i = self.launches.partition_point(|l| l.gpu < gpu_event);
        self.launches
            .get(i)
            .filter(|l| l.gpu == gpu_event)
            .map(|l| l.launch)
    }

    /// The launch call whose operators and module `gpu_event` ran for: for a graph-replayed
    /// record tied to a recorded launch of the same work (in this trace, or grafted from a
    /// capture trace), that launch; else its own launch.
    pub fn origin_of(&self, gpu_event: u32) -> Option<u32> {
        let i = self.replayed_from.partition_point(|l| l.gpu < gpu_event);
        self.replayed_from
            .get(i)
            .filter(|l| l.gpu == gpu_event)
            .map(|l| l.launch)
            .or_else(|| self.launch_of(gpu_event))
    }

    /// `event`'s duration as the trace wrote it: a GPU record clipped where it overran the next
    /// on its stream (`TraceMeta::clipped`) keeps its own here.
    pub fn written_dur(&self, event: usize) -> i64 {
        let written = &self.meta.clipped.written;
        match written.binary_search_by_key(&(event as u32), |c| c.0) {
            Ok(k) => written[k].1,
            Err(_) => self.events.dur[event],
        }
    }

    /// The outermost CPU operator enclosing `event` on its thread (`aten::conv2d` for a launch
    /// inside `aten::conv2d` → `aten::cudnn_convolution`), if any.
    pub(crate) fn outermost_op(&self, event: usize) -> Option<usize> {
        self.and_parents(event)
            .skip(1)
            .filter(|&j| self.events.kind[j] == EventKind::CpuOp)
            .last()
    }

    /// Event `event` and its parents in the call tree, innermost first.
    pub(crate) fn and_parents(&self, event: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(event), |&j| {
            let p = self.events.parent[j];
            (p != NONE).then_some(p as usize)
        })
    }

    /// Whether `event` is a graph launch call (`cudaGraphLaunch`, `hipGraphLaunch`): one host
    /// call that replays a graph's kernels.
    pub fn is_graph_launch(&self, event: usize) -> bool {
        self.events.kind[event] == EventKind::RuntimeCall
            && self.events.detail[event] != NONE
            && self.runtime_class(event) == RuntimeClass::GraphLaunch
    }
}
