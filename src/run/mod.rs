//! A multi-rank run from the [`Profile`]s of its ranks (one trace per rank, each analyzed on its
//! own and reduced to its profile): per rank its step time, GPU busy share, exposed
//! communication and collective wait; per step the critical rank; stragglers and load
//! imbalance as findings with evidence.
//!
//! Steps are matched across ranks by their number (`ProfilerStep#N`), by position where the
//! numbers do not meet. A rank's **collective wait** in a step is its exposed collective time
//! (collectives with no compute alongside) beyond the least any rank had that step: the time it
//! sat idle in a collective for a slower peer (a collective overlapped by the rank's own compute
//! is not waiting). Its **own time** is the step minus that wait: the work it did itself. The **critical
//! rank** of a step has the most own time. A rank is a **straggler** in a step when its own time
//! exceeds the median rank's by [`STRAGGLER_MARGIN_PCT`] and [`STRAGGLER_MIN_MS`]; where that
//! happens in at least half of the steady steps it is **load imbalance** instead (a rank with
//! more to do every step, not a one-off stall).

pub mod render;

use serde::{Deserialize, Serialize};

use crate::attribution::Part;
use crate::profile::{Profile, StepFacts};

/// A rank's own time must exceed the median's by this share (percent)…
pub const STRAGGLER_MARGIN_PCT: f64 = 10.0;
/// …and by this much (milliseconds) to make it a straggler in that step.
pub const STRAGGLER_MIN_MS: f64 = 0.5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub ranks: Vec<RankRow>,
    pub steps: Vec<StepRow>,
    pub findings: Vec<RunFinding>,
}

/// One rank's steady-state means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// The trace's rank (`distributedInfo`), else its position among the inputs.
    pub rank: i64,
    pub label: String,
    pub world_size: Option<i64>,
    pub steady_steps: usize,
    pub step_ms: f64,
    pub gpu_busy_pct: Option<f64>,
    pub exposed_comm_ms: f64,
    pub collective_ms: f64,
    pub collective_wait_ms: f64,
    /// Steady steps in which it is the critical rank.
    pub critical_steps: usize,
    /// Its own findings' ids, most costly first.
    pub findings: Vec<String>,
}

/// One step across the ranks, in rank order (`None`: that rank has no such step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub step: i64,
    pub step_ms: Vec<Option<f64>>,
    pub own_ms: Vec<Option<f64>>,
    pub wait_ms: Vec<Option<f64>>,
    /// The rank with the most own time.
    pub critical_rank: Option<i64>,
    pub median_own_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunFinding {
    /// `straggler` or `load-imbalance`.
    pub id: String,
    pub rank: i64,
    /// Steady steps where it holds, worst first.
    pub steps: Vec<i64>,
    /// Own time beyond the median rank's in the worst step.
    pub(crate) excess_ms: f64,
    pub(crate) excess_pct: f64,
    /// The part of the step (a [`Part::label`]) where the rank spent most beyond the median
    /// rank, in the worst step, and by how much.
    pub part: Option<String>,
    pub(crate) part_excess_ms: f64,
    /// The most another rank waited in collectives in the worst step.
    pub others_wait_ms: f64,
    pub severity: String,
    pub summary: String,
}

/// `1 step`, `N steps`: how many steps a rank was the critical one in, as the views say it.
pub fn steps_text(n: usize) -> String {
    if n == 1 {
        "1 step".to_string()
    } else {
        format!("{n} steps")
    }
}

/// Whether the profiles are the ranks of one run: two or more, each with its rank, all
/// different, of one world size.
pub fn is_run(profiles: &[Profile]) -> bool {
    let mut ranks: Vec<Option<i64>> = profiles.iter().map(|p| p.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    profiles.len() >= 2
        && ranks.len() == profiles.len()
        && !ranks.contains(&None)
        && profiles
            .iter()
            .all(|p| p.world_size == profiles[0].world_size)
}

/// Whether a rank with `own_ms` of its own work in a step is slow against the median rank's
/// `median_ms` (beyond both the margin and the floor).
pub fn is_slow(own_ms: f64, median_ms: f64) -> bool {
    let excess = own_ms - median_ms;
    excess >= STRAGGLER_MIN_MS && excess >= STRAGGLER_MARGIN_PCT / 100.0 * median_ms
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

const MS: f64 = 1e6;

/// Each profile's steady steps by the step numbers they share with the others, or by position.
fn aligned(profiles: &[Profile]) -> (Vec<i64>, Vec<Vec<Option<&StepFacts>>>) {
    let steady: Vec<Vec<&StepFacts>> = profiles.iter().map(|p| p.steady()).collect();
    let mut numbers: Vec<i64> = steady
        .iter()
        .flat_map(|s| s.iter().map(|f| f.number))
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    let shared = numbers
        .iter()
        .filter(|&&n| {
            steady
                .iter()
                .filter(|s| s.iter().any(|f| f.number == n))
                .count()
                > 1
        })
        .count();
    if shared > 0 {
        let table = steady
            .iter()
            .map(|s| {
                numbers
                    .iter()
                    .map(|&n| s.iter().copied().find(|f| f.number == n))
                    .collect()
            })
            .collect();
        (numbers, table)
    } else {
        let len = steady.iter().map(Vec::len).max().unwrap_or(0);
        let numbers = (0..len as i64).collect();
        let table = steady
            .iter()
            .map(|s| (0..len).map(|k| s.get(k).copied()).collect())
            .collect();
        (numbers, table)
    }
}

impl RunView {
    pub fn new(profiles: &[Profile]) -> RunView {
        let ranks: Vec<i64> = profiles
            .iter()
            .enumerate()
            .map(|(k, p)| p.rank.unwrap_or(k as i64))
            .collect();
        let (numbers, table) = aligned(profiles);
        let mut steps = Vec::new();
        for (j, &number) in numbers.iter().enumerate() {
            let facts: Vec<Option<&StepFacts>> = table.iter().map(|r| r[j]).collect();
            let least_exposed = facts
                .iter()
                .flatten()
                .map(|f| f.exposed_comm_ns)
                .min()
                .unwrap_or(0);
            let wait: Vec<Option<f64>> = facts
                .iter()
                .map(|f| f.map(|f| (f.exposed_comm_ns - least_exposed) as f64 / MS))
                .collect();
            let step_ms: Vec<Option<f64>> = facts
                .iter()
                .map(|f| f.map(|f| f.dur_ns as f64 / MS))
                .collect();
            let own: Vec<Option<f64>> = step_ms
                .iter()
                .zip(&wait)
                .map(|(s, w)| Some(s.as_ref()? - w.as_ref()?))
                .collect();
            let critical = own
                .iter()
                .enumerate()
                .filter_map(|(k, o)| Some((k, (*o)?)))
                .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
                .map(|(k, _)| ranks[k]);
            steps.push(StepRow {
                step: number,
                median_own_ms: median(own.iter().flatten().copied().collect()),
                step_ms,
                own_ms: own,
                wait_ms: wait,
                critical_rank: critical,
            });
        }
        let rows = profiles
            .iter()
            .enumerate()
            .map(|(k, p)| rank_row(p, ranks[k], &steps, k))
            .collect();
        let findings = findings(&ranks, &steps, &table);
        RunView {
            ranks: rows,
            steps,
            findings,
        }
    }
}

fn rank_row(p: &Profile, rank: i64, steps: &[StepRow], k: usize) -> RankRow {
    let steady = p.steady();
    let n = steady.len().max(1) as f64;
    let mean =
        |f: &dyn Fn(&StepFacts) -> i64| steady.iter().map(|s| f(s)).sum::<i64>() as f64 / n / MS;
    let dur: i64 = steady.iter().map(|s| s.dur_ns).sum();
    let busy: Option<i64> = steady.iter().map(|s| s.busy_ns).sum();
    let waits: Vec<f64> = steps.iter().filter_map(|s| s.wait_ms[k]).collect();
    RankRow {
        rank,
        label: p.label.clone(),
        world_size: p.world_size,
        steady_steps: steady.len(),
        step_ms: mean(&|s| s.dur_ns),
        gpu_busy_pct: busy
            .filter(|_| dur > 0)
            .map(|b| 100.0 * b as f64 / dur as f64),
        exposed_comm_ms: mean(&|s| s.exposed_comm_ns),
        collective_ms: mean(&|s| s.collective_ns),
        collective_wait_ms: waits.iter().sum::<f64>() / waits.len().max(1) as f64,
        critical_steps: steps
            .iter()
            .filter(|s| s.critical_rank == Some(rank))
            .count(),
        findings: p.findings.iter().map(|f| f.id.clone()).collect(),
    }
}

/// The part where `mine` exceeds the median of `others` most, and by how much (ms).
fn worst_part(mine: &StepFacts, others: &[&StepFacts]) -> Option<(Part, f64)> {
    if mine.parts_ns.is_empty() {
        return None;
    }
    Part::ALL
        .iter()
        .map(|&p| {
            let typical = median(others.iter().map(|o| o.part(p) as f64).collect());
            (p, (mine.part(p) as f64 - typical) / MS)
        })
        .filter(|(_, excess)| *excess > 0.0)
        .max_by(|x, y| x.1.total_cmp(&y.1))
}

fn findings(
    ranks: &[i64],
    steps: &[StepRow],
    table: &[Vec<Option<&StepFacts>>],
) -> Vec<RunFinding> {
    let mut out = Vec::new();
    for (k, &rank) in ranks.iter().enumerate() {
        // (step index, excess ms) where the rank is slow beyond the margin.
        let mut slow: Vec<(usize, f64)> = steps
            .iter()
            .enumerate()
            .filter_map(|(j, s)| {
                let own = s.own_ms[k]?;
                is_slow(own, s.median_own_ms).then_some((j, own - s.median_own_ms))
            })
            .collect();
        if slow.is_empty() {
            continue;
        }
        slow.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        let (j, excess) = slow[0];
        let s = &steps[j];
        let others: Vec<&StepFacts> = table
            .iter()
            .enumerate()
            .filter(|&(o, _)| o != k)
            .filter_map(|(_, r)| r[j])
            .collect();
        let part = table[k][j].and_then(|mine| worst_part(mine, &others));
        let others_wait = s
            .wait_ms
            .iter()
            .enumerate()
            .filter(|&(o, _)| o != k)
            .filter_map(|(_, w)| *w)
            .fold(0.0, f64::max);
        let present = steps.iter().filter(|s| s.own_ms[k].is_some()).count();
        let persistent = 2 * slow.len() >= present && present >= 2;
        let id = if persistent {
            "load-imbalance"
        } else {
            "straggler"
        };
        let excess_pct = 100.0 * excess / s.median_own_ms.max(f64::MIN_POSITIVE);
        let step_ms = s.step_ms[k].unwrap_or(0.0);
        let severity = crate::detect::Severity::of(100.0 * excess / step_ms.max(f64::MIN_POSITIVE));
        let step_numbers: Vec<i64> = slow.iter().map(|&(j, _)| steps[j].step).collect();
        let summary = format!(
            "rank {rank} {} {} of {present} steps; in step {}, {:.1} ms of its own work against \
             the median rank's {:.1} ms (+{:.0} %){}; the others waited up to {:.1} ms in \
             collectives",
            if persistent {
                "is slower than the median rank in"
            } else {
                "holds the others back in"
            },
            slow.len(),
            s.step,
            s.own_ms[k].unwrap_or(0.0),
            s.median_own_ms,
            excess_pct,
            part.map_or(String::new(), |(p, ms)| format!(
                ", most of it in {} (+{ms:.1} ms)",
                p.label()
            )),
            others_wait
        );
        out.push(RunFinding {
            id: id.to_string(),
            rank,
            steps: step_numbers,
            excess_ms: excess,
            excess_pct,
            part: part.map(|(p, _)| p.label().to_string()),
            part_excess_ms: part.map_or(0.0, |(_, ms)| ms),
            others_wait_ms: others_wait,
            severity: severity.label().to_string(),
            summary,
        });
    }
    out.sort_by(|x, y| y.excess_ms.total_cmp(&x.excess_ms));
    out
}

#[cfg(test)]
mod tests {
    use super::steps_text;

    #[test]
    fn one_step_is_singular() {
        assert_eq!(steps_text(1), "1 step");
        assert_eq!(steps_text(0), "0 steps");
        assert_eq!(steps_text(7), "7 steps");
    }
}
