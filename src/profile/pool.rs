//! A set of traces compared as one side (`ttap compare BEFORE_DIR AFTER_DIR`): several runs of
//! the same configuration, or the ranks of one job, pooled into the profile of their mean trace.
//!
//! Steps are kept, trace after trace (each with its own warm-up), so the step time's spread is
//! the spread over every step of the set; whole-trace totals (GPU work, CPU operators) are summed,
//! so that per-step figures (totals over all the set's steps) are means over the set; a finding's
//! cost per step is its mean over the set's steps (0 on the steps of a trace without it).

use rustc_hash::FxHashMap;

use super::{most_time_first, Batch, FindingCost, NameTotal, Profile};
use crate::detect::Severity;

impl Profile {
    /// The profile of `set`'s mean trace, called `label`; `None` for an empty set.
    pub fn pooled(label: &str, set: &[Profile]) -> Option<Profile> {
        let first = set.first()?;
        let same = |f: fn(&Profile) -> Option<i64>| {
            let v = f(first);
            set.iter().all(|p| f(p) == v).then_some(v).flatten()
        };
        let mut devices: Vec<String> = Vec::new();
        for d in set.iter().flat_map(|p| &p.devices) {
            if !devices.contains(d) {
                devices.push(d.clone());
            }
        }
        let batch = first.batch.as_ref().and_then(|b| {
            set.iter()
                .all(|p| p.batch.as_ref().map(|x| x.size) == Some(b.size))
                .then(|| Batch {
                    size: b.size,
                    source: b.source.clone(),
                })
        });
        Some(Profile {
            label: label.to_string(),
            devices,
            rank: same(|p| p.rank),
            world_size: same(|p| p.world_size),
            profiler_steps: set.iter().all(|p| p.profiler_steps),
            training: set.iter().all(|p| p.training),
            steps: set.iter().flat_map(|p| p.steps.iter().cloned()).collect(),
            batch,
            gpu_work: summed(set.iter().map(|p| p.gpu_work.as_slice())),
            cpu_ops: summed(set.iter().map(|p| p.cpu_ops.as_slice())),
            findings: mean_findings(set),
        })
    }
}

/// Totals of the same normalized name summed; the example is the one with the most time.
fn summed<'p>(lists: impl Iterator<Item = &'p [NameTotal]>) -> Vec<NameTotal> {
    let mut by_name: FxHashMap<&str, (NameTotal, i64)> = FxHashMap::default();
    for t in lists.flatten() {
        let (total, best) = by_name.entry(t.name.as_str()).or_insert_with(|| {
            (
                NameTotal {
                    name: t.name.clone(),
                    example: t.example.clone(),
                    variants: 0,
                    count: 0,
                    ns: 0,
                },
                i64::MIN,
            )
        });
        total.variants = total.variants.max(t.variants);
        total.count += t.count;
        total.ns += t.ns;
        if t.ns > *best {
            *best = t.ns;
            total.example = t.example.clone();
        }
    }
    most_time_first(by_name)
}

/// Each finding's cost per steady step, averaged over the set's steady steps; ranked by it.
fn mean_findings(set: &[Profile]) -> Vec<FindingCost> {
    let steps = |p: &Profile| p.steady().len().max(1) as f64;
    let total: f64 = set.iter().map(steps).sum();
    let mut by_id: Vec<FindingCost> = Vec::new();
    for p in set {
        let weight = steps(p) / total;
        for f in &p.findings {
            let i = by_id.iter().position(|x| x.id == f.id).unwrap_or_else(|| {
                by_id.push(FindingCost {
                    id: f.id.clone(),
                    title: f.title.clone(),
                    severity: String::new(),
                    ms_per_step: 0.0,
                    pct_of_step: 0.0,
                });
                by_id.len() - 1
            });
            by_id[i].ms_per_step += weight * f.ms_per_step;
            by_id[i].pct_of_step += weight * f.pct_of_step;
        }
    }
    for f in &mut by_id {
        f.severity = Severity::of(f.pct_of_step).label().to_string();
    }
    by_id.sort_by(|a, b| {
        b.ms_per_step
            .total_cmp(&a.ms_per_step)
            .then_with(|| a.id.cmp(&b.id))
    });
    by_id
}
