//! Before/after comparison of two analyzed traces ([`Profile`]s): throughput, step time with its
//! spread, the step split, GPU busy share, the GPU work and CPU operators whose time changed most
//! (matched by normalized name), findings fixed, new and unchanged, and a verdict line.
//!
//! Steady-state steps (warm-up left out) are matched by position: the first `n` of each side, `n`
//! the fewer; step time, throughput, GPU busy share and the split are of those steps. Step time is "no significant change" when the difference of the means is
//! within twice its standard error (Welch: `sqrt(sd_b²/n_b + sd_a²/n_a)`), the spread of the
//! steps covering it, or under [`MIN_CHANGE_PCT`] of the step. Names are compared over the whole trace, per step (total ÷ steps).

pub mod render;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::attribution::Part;
pub use crate::metrics::Spread;
use crate::profile::{NameTotal, Profile, StepFacts};

/// A step-time difference is significant beyond this many standard errors…
pub(crate) const SIGNIFICANCE_SE: f64 = 2.0;
/// …and this share of the step, in percent: steps within one trace vary less than runs do
/// (another process, another node, clocks), so a change smaller than this is not called one
/// however steady the steps.
pub(crate) const MIN_CHANGE_PCT: f64 = 1.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub before: Side,
    pub after: Side,
    pub step_ms: StepChange,
    /// Steps per second, from the mean steady step.
    pub steps_per_s: Rate,
    /// Samples per second, when both batch sizes are known.
    pub samples_per_s: Option<Rate>,
    /// GPU busy share of the steady steps on the main GPU (percent), when both have a GPU.
    pub gpu_busy_pct: Option<(f64, f64)>,
    /// Steady steps paired by position.
    pub pairs: Vec<StepPair>,
    /// The mean steady step's split, part by part (parts with time on either side).
    pub split: Vec<PartChange>,
    pub gpu_work: NameChanges,
    pub cpu_ops: NameChanges,
    pub findings: FindingChanges,
    /// One line for a ticket.
    pub verdict: String,
}

/// One trace's identity in the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub label: String,
    pub devices: Vec<String>,
    pub steps: usize,
    pub warmup_steps: Vec<i64>,
    pub batch: Option<crate::profile::Batch>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepChange {
    pub before: Spread,
    pub after: Spread,
    pub delta_ms: f64,
    pub delta_pct: f64,
    /// Standard error of the difference of the means.
    pub(crate) se_ms: f64,
    /// `None` when either side has fewer than two steady steps (no spread to judge by).
    pub significant: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub before: f64,
    pub after: f64,
    pub delta_pct: f64,
}

impl Rate {
    fn new(before: f64, after: f64) -> Rate {
        Rate {
            before,
            after,
            delta_pct: pct_change(before, after),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPair {
    pub before_step: i64,
    pub before_ms: f64,
    pub after_step: i64,
    pub after_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartChange {
    /// [`Part::id`].
    pub part: String,
    pub label: String,
    pub before_ms: f64,
    pub after_ms: f64,
}

/// GPU work or CPU operators, matched by normalized name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NameChanges {
    /// Names on both sides, largest absolute change per step first.
    pub changed: Vec<NameChange>,
    /// Names only after, most time first.
    pub added: Vec<NameChange>,
    /// Names only before, most time first.
    pub removed: Vec<NameChange>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameChange {
    pub name: String,
    /// A raw name it stands for (the one with the most time; the after side's when present).
    pub example: String,
    pub before_count: u64,
    pub after_count: u64,
    pub before_ms_per_step: f64,
    pub after_ms_per_step: f64,
}

impl NameChange {
    pub fn delta_ms_per_step(&self) -> f64 {
        self.after_ms_per_step - self.before_ms_per_step
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingChanges {
    pub fixed: Vec<FindingChange>,
    pub new: Vec<FindingChange>,
    pub unchanged: Vec<FindingChange>,
}

/// A finding and its cost per steady step on each side (0 where absent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingChange {
    pub id: String,
    pub title: String,
    pub before_ms_per_step: f64,
    pub after_ms_per_step: f64,
}

fn pct_change(before: f64, after: f64) -> f64 {
    if before != 0.0 {
        100.0 * (after - before) / before
    } else {
        0.0
    }
}

fn side(p: &Profile) -> Side {
    Side {
        label: p.label.clone(),
        devices: p.devices.clone(),
        steps: p.steps.len(),
        warmup_steps: p
            .steps
            .iter()
            .filter(|s| s.warmup)
            .map(|s| s.number)
            .collect(),
        batch: p.batch.clone(),
    }
}

/// The steady steps both sides have, matched by position: the first `n` steady steps of each,
/// `n` the fewer of the two (all of them where a side has none).
fn matched<'p>(p: &'p Profile, other: &Profile) -> Vec<&'p StepFacts> {
    let mut steady = p.steady();
    let n = other.steady().len();
    if n > 0 {
        steady.truncate(n);
    }
    steady
}

/// The steady steps of each side that the comparison pairs (step `k` of before with step `k`
/// of after).
pub fn paired_steps<'p>(
    before: &'p Profile,
    after: &'p Profile,
) -> (Vec<&'p StepFacts>, Vec<&'p StepFacts>) {
    (matched(before, after), matched(after, before))
}

fn ms(steps: &[&StepFacts]) -> Vec<f64> {
    steps.iter().map(|s| s.dur_ns as f64 / 1e6).collect()
}

impl Comparison {
    pub fn new(before: &Profile, after: &Profile) -> Comparison {
        let (b_steps, a_steps) = paired_steps(before, after);
        let (b_ms, a_ms) = (ms(&b_steps), ms(&a_steps));
        let (sb, sa) = (Spread::of(&b_ms), Spread::of(&a_ms));
        let se =
            (sb.sd_ms.powi(2) / sb.n.max(1) as f64 + sa.sd_ms.powi(2) / sa.n.max(1) as f64).sqrt();
        let delta = sa.mean_ms - sb.mean_ms;
        let step_ms = StepChange {
            delta_ms: delta,
            delta_pct: pct_change(sb.mean_ms, sa.mean_ms),
            se_ms: se,
            significant: (sb.n >= 2 && sa.n >= 2).then_some(
                delta.abs() > SIGNIFICANCE_SE * se
                    && pct_change(sb.mean_ms, sa.mean_ms).abs() >= MIN_CHANGE_PCT,
            ),
            before: sb,
            after: sa,
        };
        let per_s = |ms: f64| if ms > 0.0 { 1e3 / ms } else { 0.0 };
        let steps_per_s = Rate::new(per_s(step_ms.before.mean_ms), per_s(step_ms.after.mean_ms));
        let samples_per_s = before
            .batch
            .as_ref()
            .zip(after.batch.as_ref())
            .map(|(b, a)| {
                Rate::new(
                    steps_per_s.before * b.size as f64,
                    steps_per_s.after * a.size as f64,
                )
            });
        let pairs = b_steps
            .iter()
            .zip(&a_steps)
            .map(|(b, a)| StepPair {
                before_step: b.number,
                before_ms: b.dur_ns as f64 / 1e6,
                after_step: a.number,
                after_ms: a.dur_ns as f64 / 1e6,
            })
            .collect();
        let mut c = Comparison {
            before: side(before),
            after: side(after),
            gpu_busy_pct: busy_pct(&b_steps).zip(busy_pct(&a_steps)),
            split: split_changes(&b_steps, &a_steps),
            gpu_work: name_changes(
                &before.gpu_work,
                before.step_count(),
                &after.gpu_work,
                after.step_count(),
            ),
            cpu_ops: name_changes(
                &before.cpu_ops,
                before.step_count(),
                &after.cpu_ops,
                after.step_count(),
            ),
            findings: finding_changes(before, after),
            step_ms,
            steps_per_s,
            samples_per_s,
            pairs,
            verdict: String::new(),
        };
        c.verdict = render::verdict(&c);
        c
    }

    /// The throughput compared: samples/s where both batch sizes are known, else steps/s.
    pub fn throughput(&self) -> (&Rate, &'static str) {
        match &self.samples_per_s {
            Some(r) => (r, "samples/s"),
            None => (&self.steps_per_s, "steps/s"),
        }
    }

    /// The throughput's drop in percent when it is a regression not covered by the spread
    /// (`None`: faster, or no significant change).
    pub fn regression_pct(&self) -> Option<f64> {
        let (rate, _) = self.throughput();
        (rate.delta_pct < 0.0 && self.step_ms.significant != Some(false)).then_some(-rate.delta_pct)
    }
}

/// Mean GPU busy share of the steps, in percent.
fn busy_pct(steady: &[&StepFacts]) -> Option<f64> {
    let busy: i64 = steady.iter().map(|s| s.busy_ns).sum::<Option<i64>>()?;
    let dur: i64 = steady.iter().map(|s| s.dur_ns).sum();
    (dur > 0).then(|| 100.0 * busy as f64 / dur as f64)
}

/// Mean time of each part over the steps, in ms.
fn mean_parts(steady: &[&StepFacts]) -> Vec<f64> {
    Part::ALL
        .iter()
        .map(|&part| {
            steady.iter().map(|s| s.part(part)).sum::<i64>() as f64
                / steady.len().max(1) as f64
                / 1e6
        })
        .collect()
}

fn split_changes(before: &[&StepFacts], after: &[&StepFacts]) -> Vec<PartChange> {
    let (b, a) = (mean_parts(before), mean_parts(after));
    Part::ALL
        .iter()
        .enumerate()
        .filter(|&(k, _)| b[k] > 0.0 || a[k] > 0.0)
        .map(|(k, p)| PartChange {
            part: p.id().to_string(),
            label: p.label().to_string(),
            before_ms: b[k],
            after_ms: a[k],
        })
        .collect()
}

fn name_changes(
    before: &[NameTotal],
    before_steps: usize,
    after: &[NameTotal],
    after_steps: usize,
) -> NameChanges {
    let per_step =
        |n: Option<&NameTotal>, steps: usize| n.map_or(0.0, |n| n.ns as f64 / steps as f64 / 1e6);
    let change = |b: Option<&NameTotal>, a: Option<&NameTotal>| {
        let any = a.or(b).expect("one side has the name");
        NameChange {
            name: any.name.clone(),
            example: any.example.clone(),
            before_count: b.map_or(0, |n| n.count),
            after_count: a.map_or(0, |n| n.count),
            before_ms_per_step: per_step(b, before_steps),
            after_ms_per_step: per_step(a, after_steps),
        }
    };
    let index = |list: &'_ [NameTotal]| -> FxHashMap<String, usize> {
        list.iter()
            .enumerate()
            .map(|(k, n)| (n.name.clone(), k))
            .collect()
    };
    let (in_before, in_after) = (index(before), index(after));
    let mut out = NameChanges::default();
    for a in after {
        match in_before.get(&a.name) {
            Some(&k) => out.changed.push(change(Some(&before[k]), Some(a))),
            None => out.added.push(change(None, Some(a))),
        }
    }
    for b in before {
        if !in_after.contains_key(&b.name) {
            out.removed.push(change(Some(b), None));
        }
    }
    out.changed.sort_by(|x, y| {
        y.delta_ms_per_step()
            .abs()
            .total_cmp(&x.delta_ms_per_step().abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

fn finding_changes(before: &Profile, after: &Profile) -> FindingChanges {
    let mut out = FindingChanges::default();
    for b in &before.findings {
        let a = after.findings.iter().find(|a| a.id == b.id);
        let change = FindingChange {
            id: b.id.clone(),
            title: b.title.clone(),
            before_ms_per_step: b.ms_per_step,
            after_ms_per_step: a.map_or(0.0, |a| a.ms_per_step),
        };
        if a.is_some() {
            out.unchanged.push(change);
        } else {
            out.fixed.push(change);
        }
    }
    for a in &after.findings {
        if !before.findings.iter().any(|b| b.id == a.id) {
            out.new.push(FindingChange {
                id: a.id.clone(),
                title: a.title.clone(),
                before_ms_per_step: 0.0,
                after_ms_per_step: a.ms_per_step,
            });
        }
    }
    out
}
