//! A compact profile of one analyzed trace: what a before/after comparison and a multi-rank run
//! read, so that once a trace is analyzed only this is kept (kilobytes, whatever the trace's
//! size).
//!
//! Reads the analysis (steps, their split and metrics), the findings and the model (kernel and
//! operator names, input shapes). Serializes, so the web worker can hand it to the page.

pub mod names;
mod pool;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::attribution::Part;
use crate::detect::Finding;
use crate::model::{EventKind, Trace, NONE};

/// One trace, reduced to what comparisons and run views read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// What the user calls it (a file name).
    pub label: String,
    pub devices: Vec<String>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    /// Whether the steps are `ProfilerStep#` ranges (`false`: one step over the whole trace).
    pub(crate) profiler_steps: bool,
    pub training: bool,
    /// Every step, in order.
    pub steps: Vec<StepFacts>,
    pub batch: Option<Batch>,
    /// GPU work (kernels, collectives, copies, memsets) of the whole trace by normalized name,
    /// most time first.
    pub gpu_work: Vec<NameTotal>,
    /// CPU operators of the whole trace by normalized name, by self time, most first.
    pub cpu_ops: Vec<NameTotal>,
    pub findings: Vec<FindingCost>,
}

/// One step's facts, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepFacts {
    pub number: i64,
    pub warmup: bool,
    pub dur_ns: i64,
    /// GPU busy time on the main device (`None`: no GPU work in the trace).
    pub(crate) busy_ns: Option<i64>,
    /// The step's split on the main GPU, indexed like [`Part::ALL`] (empty without a GPU).
    pub parts_ns: Vec<i64>,
    /// Collective kernel time on the main device (the union of its collective kernels).
    pub collective_ns: i64,
    /// Collective time with no compute alongside.
    pub exposed_comm_ns: i64,
    /// Time in DataLoader ranges.
    pub dataloader_ns: i64,
}

impl StepFacts {
    /// Time of part `p` (0 without a GPU).
    pub fn part(&self, p: Part) -> i64 {
        self.parts_ns.get(p as usize).copied().unwrap_or(0)
    }
}

/// The batch size, and where it was read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    pub size: u64,
    /// E.g. `aten::conv2d input [64, 3, 224, 224]`, or `given`.
    pub source: String,
}

/// All events of one normalized name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameTotal {
    pub name: String,
    /// The raw name with the most time, to show what the normalized one stands for.
    pub example: String,
    /// How many raw names it stands for.
    pub variants: u32,
    pub count: u64,
    /// Total (GPU work) or self (CPU operators) time.
    pub ns: i64,
}

/// A finding and its cost per steady step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingCost {
    pub id: String,
    pub title: String,
    pub severity: String,
    pub ms_per_step: f64,
    pub pct_of_step: f64,
}

/// Operators whose first input's first dimension is the batch (the first such operator of the
/// first steady step is read).
const BATCH_OPS: [&str; 4] = [
    "aten::conv2d",
    "aten::conv3d",
    "aten::convolution",
    "aten::linear",
];

impl Profile {
    /// The profile of an analyzed trace and its findings (`detect::run`'s, ranked).
    pub fn new(label: &str, a: &Analysis<'_>, findings: &[Finding]) -> Profile {
        let t = a.trace;
        let steps = a
            .steps
            .steps
            .iter()
            .zip(&a.step_metrics)
            .zip(&a.splits)
            .map(|((s, m), split)| {
                let d = m.main_device();
                StepFacts {
                    number: s.number,
                    warmup: s.warmup,
                    dur_ns: s.dur(),
                    busy_ns: split.has_gpu().then(|| split.busy_ns()),
                    parts_ns: if split.has_gpu() {
                        Part::ALL.iter().map(|&p| split.ns(p)).collect()
                    } else {
                        Vec::new()
                    },
                    collective_ns: d.map_or(0, |d| d.communication),
                    exposed_comm_ns: split.ns(Part::BusyCommunication),
                    dataloader_ns: m.dataloader_ns,
                }
            })
            .collect();
        let first_steady = a.steady.first().map(|&i| a.range(i));
        Profile {
            label: label.to_string(),
            devices: t
                .meta
                .devices
                .iter()
                .filter_map(|d| d.name.clone())
                .collect(),
            rank: t.meta.rank,
            world_size: t.meta.world_size,
            profiler_steps: t.step_source == crate::model::StepSource::ProfilerSteps,
            training: a.training,
            steps,
            batch: first_steady.and_then(|r| batch_of(t, r)),
            gpu_work: totals(t, |k| k.is_gpu_work(), false),
            cpu_ops: totals(t, |k| k == EventKind::CpuOp, true),
            findings: findings
                .iter()
                .map(|f| FindingCost {
                    id: f.id.to_string(),
                    title: f.title.to_string(),
                    severity: f.severity.label().to_string(),
                    ms_per_step: f.impact.ms_per_step,
                    pct_of_step: f.impact.pct_of_step,
                })
                .collect(),
        }
    }

    /// The steady-state steps (warm-up left out; all of them when every one is warm-up).
    pub fn steady(&self) -> Vec<&StepFacts> {
        let steady: Vec<&StepFacts> = self.steps.iter().filter(|s| !s.warmup).collect();
        if steady.is_empty() {
            self.steps.iter().collect()
        } else {
            steady
        }
    }

    /// Number of steps the whole-trace totals are divided by for a per-step figure.
    pub(crate) fn step_count(&self) -> usize {
        self.steps.len().max(1)
    }
}

/// Events of the kinds `keep` accepts, by normalized name; `self_time` subtracts the time of
/// the events of a kept kind directly nested in each (CPU operators).
fn totals(t: &Trace, keep: impl Fn(EventKind) -> bool, self_time: bool) -> Vec<NameTotal> {
    let e = &t.events;
    // Per raw name first (interned ids: one normalization per distinct name).
    let mut raw: FxHashMap<u32, (u64, i64)> = FxHashMap::default();
    for i in t.recorded() {
        if !keep(e.kind[i]) {
            continue;
        }
        let entry = raw.entry(e.name[i]).or_default();
        entry.0 += 1;
        entry.1 += e.dur[i];
        let p = e.parent[i];
        if self_time && p != NONE && keep(e.kind[p as usize]) {
            raw.entry(e.name[p as usize]).or_default().1 -= e.dur[i];
        }
    }
    let mut by_name: FxHashMap<String, (NameTotal, i64)> = FxHashMap::default();
    for (id, (count, ns)) in raw {
        let name = t.strings.get(id);
        let key = names::normalize(name);
        let (total, best) = by_name.entry(key.clone()).or_insert_with(|| {
            (
                NameTotal {
                    name: key,
                    example: name.to_string(),
                    variants: 0,
                    count: 0,
                    ns: 0,
                },
                i64::MIN,
            )
        });
        total.variants += 1;
        total.count += count;
        total.ns += ns.max(0);
        if (ns, std::cmp::Reverse(name)) > (*best, std::cmp::Reverse(total.example.as_str())) {
            *best = ns;
            total.example = name.to_string();
        }
    }
    most_time_first(by_name)
}

/// The totals of a map by name (each with the time of its example), most time first, then by
/// name.
fn most_time_first<K>(by_name: FxHashMap<K, (NameTotal, i64)>) -> Vec<NameTotal> {
    let mut out: Vec<NameTotal> = by_name.into_values().map(|(n, _)| n).collect();
    out.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The batch size from the first batch-carrying operator (`BATCH_OPS`) that starts in `range`.
fn batch_of(t: &Trace, range: (i64, i64)) -> Option<Batch> {
    let e = &t.events;
    t.recorded()
        .filter(|&i| {
            e.kind[i] == EventKind::CpuOp
                && e.start[i] >= range.0
                && e.start[i] < range.1
                && e.detail[i] != NONE
        })
        .filter(|&i| BATCH_OPS.contains(&t.name_of(i)))
        .min_by_key(|&i| e.start[i])
        .and_then(|i| {
            let dims = t.details.op(e.detail[i]).input_dims?;
            let text = t.strings.get(dims);
            let dims: Vec<Vec<u64>> = serde_json::from_str(text).ok()?;
            let first = dims.first()?;
            let size = *first.first()?;
            (size > 0 && first.len() >= 2).then(|| Batch {
                size,
                source: format!("{} input {:?}", t.name_of(i), first),
            })
        })
}
