//! What a comparison or run link holds of each trace ([`ProfileFacts`]): a profile's figures,
//! names and finding ids, no prose; and the checks each value passes when a link is read
//! ([`ProfileFacts::profile`]): counts of steps, names and findings, figures within what a real
//! trace gives, each name once, detector ids from this version's catalogue, texts quoted.

use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use crate::attribution::Part;
use crate::detect::{self, Severity};
use crate::profile::{Batch, FindingCost, NameTotal, Profile, StepFacts};
use crate::share::{quoted, quoted_up_to, ShareError};

/// The most steps a profile in a link may have.
pub(crate) const MAX_STEPS: usize = 5_000;
/// The most names (GPU work or CPU operators) per list.
pub(crate) const MAX_NAMES: usize = 5_000;
/// The most devices per trace.
pub(crate) const MAX_DEVICES: usize = 256;
/// The most findings per trace (more than the catalogue has).
pub(crate) const MAX_FINDINGS: usize = 64;
/// The longest step or step part, in ns: 11.6 days.
pub(crate) const MAX_STEP_NS: i64 = 1_000_000_000_000_000;
/// The most time one name may total over a trace, in ns (many streams over a long trace).
pub(crate) const MAX_TOTAL_NS: i64 = 100 * MAX_STEP_NS;
/// The longest kernel or operator name kept, in characters (templated kernel names run long).
pub const MAX_NAME_CHARS: usize = 1024;
/// The largest rank, world size, batch size or call count accepted.
pub(crate) const MAX_RANK: i64 = 1 << 20;
const MAX_BATCH: u64 = 1 << 24;
const MAX_CALLS: u64 = 1 << 40;
const MAX_STEP_NUMBER: i64 = 1_000_000_000_000;

/// One trace as a comparison or run link holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProfileFacts {
    label: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    devices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rank: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    world_size: Option<i64>,
    profiler_steps: bool,
    training: bool,
    steps: Vec<StepFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    batch: Option<Batch>,
    /// `[normalized name, calls, ns]`: the raw name examples are not carried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    gpu_work: Vec<(String, u64, i64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpu_ops: Vec<(String, u64, i64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    findings: Vec<FindingFacts>,
}

/// A finding's id and cost; its title comes from the page's catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FindingFacts {
    id: String,
    /// `high`, `medium` or `low`; anything else reads as the severity of the share.
    severity: String,
    ms_per_step: f64,
    pct_of_step: f64,
}

fn names(list: &[NameTotal], keep: &dyn Fn(&str) -> bool) -> Vec<(String, u64, i64)> {
    list.iter()
        .filter(|n| keep(&n.name))
        .map(|n| (quoted_up_to(&n.name, MAX_NAME_CHARS), n.count, n.ns))
        .collect()
}

/// A figure checked against its bounds.
fn within<T: PartialOrd + std::fmt::Display>(
    place: &dyn Fn() -> String,
    what: &str,
    v: T,
    min: T,
    max: T,
) -> Result<T, ShareError> {
    if v < min || v > max {
        return Err(ShareError::OutOfBounds {
            place: place(),
            detail: format!("{what} is {v}, outside {min}..={max}"),
        });
    }
    Ok(v)
}

/// A list's length checked against its bound.
fn at_most<T>(place: &str, what: &str, list: &[T], max: usize) -> Result<(), ShareError> {
    if list.len() > max {
        return Err(ShareError::OutOfBounds {
            place: place.to_string(),
            detail: format!("{} {what}, more than the {max} a link may hold", list.len()),
        });
    }
    Ok(())
}

impl ProfileFacts {
    /// The facts of `p`, keeping the GPU work and CPU operators whose names `keep_gpu` and
    /// `keep_cpu` accept; texts quoted as the reader will show them.
    pub fn of(
        p: &Profile,
        keep_gpu: &dyn Fn(&str) -> bool,
        keep_cpu: &dyn Fn(&str) -> bool,
    ) -> ProfileFacts {
        ProfileFacts {
            label: quoted(&p.label),
            devices: p.devices.iter().map(|d| quoted(d)).collect(),
            rank: p.rank,
            world_size: p.world_size,
            profiler_steps: p.profiler_steps,
            training: p.training,
            steps: p.steps.clone(),
            batch: p.batch.as_ref().map(|b| Batch {
                size: b.size,
                source: quoted(&b.source),
            }),
            gpu_work: names(&p.gpu_work, keep_gpu),
            cpu_ops: names(&p.cpu_ops, keep_cpu),
            findings: p
                .findings
                .iter()
                .map(|f| FindingFacts {
                    id: f.id.clone(),
                    severity: f.severity.clone(),
                    ms_per_step: f.ms_per_step,
                    pct_of_step: f.pct_of_step,
                })
                .collect(),
        }
    }

    /// The profile these facts describe, every value checked (`place` names the trace in
    /// errors: `before`, `rank 3`); finding titles from this version's catalogue.
    pub fn profile(&self, place: &str) -> Result<Profile, ShareError> {
        at_most(place, "steps", &self.steps, MAX_STEPS)?;
        if self.steps.is_empty() {
            return Err(ShareError::OutOfBounds {
                place: place.to_string(),
                detail: "no step".to_string(),
            });
        }
        at_most(place, "devices", &self.devices, MAX_DEVICES)?;
        at_most(place, "GPU work names", &self.gpu_work, MAX_NAMES)?;
        at_most(place, "CPU operator names", &self.cpu_ops, MAX_NAMES)?;
        at_most(place, "findings", &self.findings, MAX_FINDINGS)?;
        let here = || place.to_string();
        if let Some(r) = self.rank {
            within(&here, "the rank", r, 0, MAX_RANK)?;
        }
        if let Some(w) = self.world_size {
            within(&here, "the world size", w, 1, MAX_RANK)?;
        }
        for (k, s) in self.steps.iter().enumerate() {
            let at = || format!("{place}, step row {}", k + 1);
            within(
                &at,
                "the step number",
                s.number,
                -MAX_STEP_NUMBER,
                MAX_STEP_NUMBER,
            )?;
            for (what, v) in [
                ("the step time (ns)", s.dur_ns),
                ("the GPU busy time (ns)", s.busy_ns.unwrap_or(0)),
                ("the collective time (ns)", s.collective_ns),
                ("the exposed communication (ns)", s.exposed_comm_ns),
                ("the DataLoader time (ns)", s.dataloader_ns),
            ] {
                within(&at, what, v, 0, MAX_STEP_NS)?;
            }
            if !s.parts_ns.is_empty() && s.parts_ns.len() != Part::ALL.len() {
                return Err(ShareError::OutOfBounds {
                    place: at(),
                    detail: format!(
                        "a split of {} parts, where there are {}",
                        s.parts_ns.len(),
                        Part::ALL.len()
                    ),
                });
            }
            for &v in &s.parts_ns {
                within(&at, "a part of the split (ns)", v, 0, MAX_STEP_NS)?;
            }
        }
        let batch = match &self.batch {
            Some(b) => Some(Batch {
                size: within(&here, "the batch size", b.size, 1, MAX_BATCH)?,
                source: quoted(&b.source),
            }),
            None => None,
        };
        // Each name once, as in a profile (a comparison matches rows by name): two names that
        // read the same once quoted are refused too.
        let totals = |list: &[(String, u64, i64)], what: &str| {
            let mut seen = FxHashSet::default();
            list.iter()
                .enumerate()
                .map(|(k, (name, count, ns))| {
                    let at = || format!("{place}, {what} {}", k + 1);
                    let name = quoted_up_to(name, MAX_NAME_CHARS);
                    if !seen.insert(name.clone()) {
                        return Err(ShareError::OutOfBounds {
                            place: at(),
                            detail: format!("a name given twice ({name})"),
                        });
                    }
                    Ok(NameTotal {
                        example: name.clone(),
                        name,
                        variants: 1,
                        count: within(&at, "the call count", *count, 0, MAX_CALLS)?,
                        ns: within(&at, "the time (ns)", *ns, 0, MAX_TOTAL_NS)?,
                    })
                })
                .collect::<Result<Vec<_>, ShareError>>()
        };
        let findings = self
            .findings
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let at = || format!("{place}, finding {}", k + 1);
                let d = detect::detector(&f.id).ok_or_else(|| ShareError::UnknownDetector {
                    id: quoted(&f.id),
                    place: at(),
                })?;
                let pct = within(&at, "the share of the step (%)", f.pct_of_step, 0.0, 100.0)?;
                Ok(FindingCost {
                    id: d.id().to_string(),
                    title: d.title().to_string(),
                    severity: [Severity::High, Severity::Medium, Severity::Low]
                        .into_iter()
                        .find(|s| s.label() == f.severity)
                        .unwrap_or_else(|| Severity::of(pct))
                        .label()
                        .to_string(),
                    ms_per_step: within(&at, "the cost (ms/step)", f.ms_per_step, 0.0, 1e9)?,
                    pct_of_step: pct,
                })
            })
            .collect::<Result<Vec<_>, ShareError>>()?;
        Ok(Profile {
            label: quoted(&self.label),
            devices: self.devices.iter().map(|d| quoted(d)).collect(),
            rank: self.rank,
            world_size: self.world_size,
            profiler_steps: self.profiler_steps,
            training: self.training,
            steps: self.steps.clone(),
            batch,
            gpu_work: totals(&self.gpu_work, "GPU work name")?,
            cpu_ops: totals(&self.cpu_ops, "CPU operator name")?,
            findings,
        })
    }
}
