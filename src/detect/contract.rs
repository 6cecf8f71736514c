//! The contract every detector implements: the finding types, [`judge`] (the gate, the claim
//! on the step's time through a [`Ledger`], severity and confidence), the notes, and the
//! arithmetic on the [`Analysis`] they read (made in `src/analysis.rs`). Kept in one file so
//! that it is read at once; the detectors (one file each) and the registry that lists them
//! (`registry.rs`) import from here, never the other way.

use crate::analysis::Analysis;
use crate::attribution::{intersect, Intervals, Ledger, Part};

/// The detectors' arithmetic on an [`Analysis`]: a finding's impact, the idle a cause costs,
/// evidence events.
impl Analysis<'_> {
    /// An impact of `ns_per_step` nanoseconds per steady-state step.
    pub fn impact(&self, ns_per_step: f64, method: &'static str) -> Impact {
        let step = self.step_ns();
        Impact {
            ms_per_step: ns_per_step / 1e6,
            pct_of_step: if step > 0.0 {
                100.0 * ns_per_step / step
            } else {
                0.0
            },
            method,
        }
    }

    /// Step `step`'s GPU idle inside `ranges` (sorted, disjoint), whatever the GPU waited for:
    /// what a cause running there costs the GPU (what earlier findings hold stays theirs).
    pub(crate) fn idle_in(&self, step: usize, ranges: &[(i64, i64)]) -> Intervals {
        let idle: Vec<Part> = Part::ALL.into_iter().filter(|p| p.is_idle()).collect();
        intersect(&self.splits[step].intervals_of(&idle), ranges)
    }

    /// The `n` longest of `events` for evidence, longest first (see [`Analysis::event_ref`]).
    pub(crate) fn longest_refs(&self, events: &[usize], n: usize) -> Vec<String> {
        let mut by_length = events.to_vec();
        by_length.sort_by_key(|&i| std::cmp::Reverse(self.trace.events.dur[i]));
        by_length
            .iter()
            .take(n)
            .map(|&i| self.event_ref(i))
            .collect()
    }

    /// Event `i` for evidence: its name, where it starts (from the trace's start) and how long
    /// it lasts.
    pub(crate) fn event_ref(&self, i: usize) -> String {
        let t = self.trace;
        let origin = t.meta.span.map_or(0, |s| s.0);
        format!(
            "{} at {:.3} ms ({:.3} ms)",
            t.name_of(i),
            (t.events.start[i] - origin) as f64 / 1e6,
            t.events.dur[i] as f64 / 1e6
        )
    }
}

/// How bad a finding is, from its share of the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    /// High from 20% of the step, medium from 5%, low below.
    pub fn of(pct_of_step: f64) -> Severity {
        if pct_of_step >= 20.0 {
            Severity::High
        } else if pct_of_step >= 5.0 {
            Severity::Medium
        } else {
            Severity::Low
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    /// The severity a [`label`](Severity::label) names, if any.
    pub fn from_label(label: &str) -> Option<Severity> {
        [Severity::Low, Severity::Medium, Severity::High]
            .into_iter()
            .find(|s| s.label() == label)
    }
}

/// Time recoverable per steady-state step, and how it was estimated.
#[derive(Clone, Debug, PartialEq)]
pub struct Impact {
    pub ms_per_step: f64,
    pub pct_of_step: f64,
    pub method: &'static str,
}

/// What was seen, where.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    pub what: String,
    /// Step numbers concerned (empty: the whole trace).
    pub steps: Vec<i64>,
    /// Events that show it, by name and time, most important first.
    pub events: Vec<String>,
    pub count: Option<u64>,
    /// The events it stands for (all of them, not only those named; empty where the evidence
    /// is not events): the module frame that holds most of their time names the finding's
    /// module ([`Finding::module`]).
    pub sources: Vec<usize>,
}

/// The change that removes the problem.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub summary: &'static str,
    pub snippet: &'static str,
    /// The changes the fix names, each as `summary` or `snippet` write it (case aside): an
    /// explanation's fix that names none of them proposes another change (`llm::check`).
    pub terms: &'static [&'static str],
}

/// A detector's gate: the quantity it measures per steady step and the threshold it must reach.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gate {
    /// What is measured, with its unit (e.g. "GPU idle in DataLoader ranges, % of the step").
    pub quantity: &'static str,
    pub threshold: f64,
}

/// How the gate fared: the inputs of the confidence, so a reader can check it.
#[derive(Clone, Debug, PartialEq)]
pub struct GateCheck {
    pub gate: Gate,
    /// Steady steps where the gate holds, of `steady_steps`.
    pub held_steps: usize,
    pub steady_steps: usize,
    /// Median of the measured quantity over the steps where the gate holds.
    pub median: f64,
    /// `median / threshold`.
    pub margin: f64,
}

/// Share of steady steps in which a gate must hold for a finding.
pub(crate) const MIN_CONSISTENCY: f64 = 0.5;
/// A finding must explain at least this share of the step, in percent, or
/// [`MIN_COST_PCT_OF_BUSY`] of the GPU's busy time (a step dominated by one stall still has GPU
/// work worth making faster)…
pub(crate) const MIN_COST_PCT: f64 = 0.5;
pub(crate) const MIN_COST_PCT_OF_BUSY: f64 = 3.0;
/// …and at least this many milliseconds per step.
pub(crate) const MIN_COST_MS: f64 = 0.005;

impl GateCheck {
    /// `consistency × margin factor`: the share of steady steps where the gate holds, times a
    /// factor that grows from 0.5 at the threshold to 1 at twice the threshold.
    pub fn confidence(&self) -> f32 {
        let consistency = self.held_steps as f64 / self.steady_steps.max(1) as f64;
        let factor = (0.5 + 0.5 * (self.margin - 1.0)).clamp(0.5, 1.0);
        ((consistency * factor * 100.0).round() / 100.0) as f32
    }
}

/// One steady step's time a finding explains.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCost {
    pub number: i64,
    /// Time claimed in this step, in milliseconds.
    pub ms: f64,
    /// The gated quantity in this step.
    pub value: f64,
}

/// One anti-pattern found in the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The detector's id; stable across versions.
    pub id: &'static str,
    pub title: &'static str,
    /// One sentence with the numbers.
    pub summary: String,
    pub severity: Severity,
    pub impact: Impact,
    /// 0 to 1, from [`GateCheck::confidence`].
    pub confidence: f32,
    pub gate: GateCheck,
    /// Every steady step where the gate holds, with the time claimed there, worst first.
    pub step_costs: Vec<StepCost>,
    pub evidence: Vec<Evidence>,
    pub fix: Fix,
    /// The deepest module frame holding most of the evidence's time
    /// (`ResNet_0/Sequential_3/BasicBlock_1/Conv2d_2`), where the trace has module frames and
    /// the evidence is events (`crate::modules::Frames::holder`).
    pub module: Option<String>,
    /// Per step where the gate holds (an index into `Analysis::steps.steps`), the intervals the
    /// finding claimed: with its evidence events, what places it on the timeline
    /// (`report::evidence_windows`).
    pub claimed: Vec<(usize, Intervals)>,
}

/// Steps listed as a finding's worst.
pub(crate) const WORST_STEPS: usize = 3;

impl Finding {
    /// The steps where it costs most (at most [`WORST_STEPS`]), worst first.
    pub fn worst_steps(&self) -> &[StepCost] {
        &self.step_costs[..self.step_costs.len().min(WORST_STEPS)]
    }

    /// Whether the finding concerns step `number`: its evidence names it, or names no step at
    /// all (the whole trace).
    pub fn cites(&self, number: i64) -> bool {
        self.evidence.iter().all(|e| e.steps.is_empty())
            || self.evidence.iter().any(|e| e.steps.contains(&number))
    }
}

/// An observation worth a line that is not a ranked finding: no time estimate, or a gate that
/// holds too rarely or costs too little.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// The detector or observer id.
    pub id: &'static str,
    pub text: String,
}

/// What a detector measured in one steady step.
#[derive(Clone, Debug, Default)]
pub struct StepCheck {
    /// Index into `Analysis::steps.steps`.
    pub step: usize,
    /// The gated quantity.
    pub value: f64,
    /// The time the finding explains in this step when the gate holds: intervals of the step
    /// (parts of the attribution, or the events that cost it) and the share of them it claims.
    pub claims: Vec<(Intervals, f64)>,
}

/// Per steady step, the share of the step (in percent) that `parts` of the split take, claimed
/// whole where the gate holds; 0 in the steps `applies` rejects.
pub(crate) fn part_checks(
    a: &Analysis<'_>,
    parts: &[crate::attribution::Part],
    applies: impl Fn(usize) -> bool,
) -> Vec<StepCheck> {
    interval_checks(a, |k| (a.splits[k].intervals_of(parts), applies(k)))
}

/// Per steady step, the share of the step (in percent) that the intervals `of` gives take,
/// claimed whole where the gate holds; 0 in the steps where `of` says it does not apply.
pub(crate) fn interval_checks(
    a: &Analysis<'_>,
    of: impl Fn(usize) -> (Intervals, bool),
) -> Vec<StepCheck> {
    a.steady
        .iter()
        .map(|&k| {
            let (claim, applies) = of(k);
            StepCheck {
                step: k,
                value: if applies {
                    a.pct_of_step(k, crate::metrics::total(&claim))
                } else {
                    0.0
                },
                claims: vec![(claim, 1.0)],
            }
        })
        .collect()
}

/// A gate that held, with the time claimed.
pub struct Judged {
    pub gate: GateCheck,
    pub impact: Impact,
    /// Every step where the gate holds, worst first.
    pub step_costs: Vec<StepCost>,
    /// Step numbers where the gate holds.
    pub held: Vec<i64>,
    /// Per step where the gate holds (an index into `Analysis::steps.steps`), the time claimed
    /// there: where the finding's cost lies.
    pub claimed: Vec<(usize, Intervals)>,
    /// Earlier findings that already hold part of the time this one would claim, with the
    /// milliseconds per steady step each holds, in claim order.
    pub(crate) explained_by: Vec<(&'static str, f64)>,
}

impl Judged {
    /// Whether time `ts` lies in a steady step where the gate holds.
    pub(crate) fn holds_at(&self, a: &Analysis<'_>, ts: i64) -> bool {
        a.steady_step_at(ts)
            .is_some_and(|k| self.held.contains(&a.steps.steps[k].number))
    }

    /// The events `keep` accepts that start in a steady step where the gate holds, in event
    /// order: a finding's evidence.
    pub(crate) fn events_where(
        &self,
        a: &Analysis<'_>,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let e = &a.trace.events;
        a.trace
            .recorded()
            .filter(|&i| keep(i) && self.holds_at(a, e.start[i]))
            .collect()
    }
}

/// A detector's answer: its finding, or why it has none. Detectors pass a [`judge`]'s
/// rejection on with `?`.
pub type Verdict = Result<Box<Finding>, Rejected>;

/// What a detector or an observer is, said once: its stable id (e.g. `dataloader-bottleneck`),
/// its title, its gate in words (and where the value comes from), and every fix its findings can
/// carry, the most common first: the catalogue a shared link or a saved report is rendered from,
/// so that the page only ever shows its own fixes (an observer has none).
pub struct About {
    pub id: &'static str,
    pub title: &'static str,
    /// The gate in words, its numbers left to `gates`: `{0}`, `{1}`… stand for the threshold of
    /// `gates[0]`, `gates[1]`… ([`About::threshold`]).
    pub rule: &'static str,
    /// Every gate the detector judges with ([`judge`] checks it), or the observer notes from; a
    /// gate whose threshold is another's (the same gate measured on the host) may share that
    /// one's placeholder.
    pub gates: &'static [Gate],
    pub fixes: &'static [Fix],
}

impl About {
    /// The gate in words, with its numbers: `rule` with each `{k}` replaced by
    /// `gates[k].threshold`.
    pub fn threshold(&self) -> String {
        self.gates
            .iter()
            .enumerate()
            .fold(self.rule.to_string(), |text, (k, gate)| {
                text.replace(&format!("{{{k}}}"), &gate.threshold.to_string())
            })
    }

    /// An observer's note: its title, then what it saw.
    pub fn note(&self, saw: String) -> Note {
        Note {
            id: self.id,
            text: format!("{}: {saw}", self.title),
        }
    }
}

/// One anti-pattern's detector.
pub trait Detector: Sync {
    fn about(&self) -> &'static About;
    fn id(&self) -> &'static str {
        self.about().id
    }
    fn title(&self) -> &'static str {
        self.about().title
    }
    fn threshold(&self) -> String {
        self.about().threshold()
    }
    fn fixes(&self) -> &'static [Fix] {
        self.about().fixes
    }
    /// Whether the pattern exists only in training (optimizer, `zero_grad`).
    fn training_only(&self) -> bool {
        false
    }
    /// Whether the rule assumes a training loop (a data loader feeding each step, host-only
    /// edges that are the step's own): off for a serving capture, whose iterations the
    /// scheduler feeds (its host time between them is the serving figures').
    fn assumes_training(&self) -> bool {
        self.training_only()
    }
    /// Whether, on a serving capture, the rule reads its decode iterations only (where they
    /// are steady), not the prefill ones: launch overhead and host syncs are decode's cost.
    fn reads_decode(&self) -> bool {
        false
    }
    /// Whether the finding names a symptom (idle GPU, short kernels, host-only time) rather than
    /// a cause: symptoms claim time after every cause, and say which causes explain part of it.
    fn symptom(&self) -> bool {
        false
    }
    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict;
}

/// An observation with no time cost of its own (the trace cannot tell what fixing it saves).
pub trait Observer: Sync {
    fn about(&self) -> &'static About;
    fn observe(&self, a: &Analysis<'_>) -> Option<Note>;
}

/// Keeps a gate that holds in at least [`MIN_CONSISTENCY`] of the steady steps and explains at
/// least [`MIN_COST_PCT`] of the step (or [`MIN_COST_PCT_OF_BUSY`] of GPU busy time): claims its time (only in the steps where it holds) and
/// measures it. Otherwise a note saying what was seen, or nothing when the gate never held.
pub fn judge(
    d: &dyn Detector,
    a: &Analysis<'_>,
    ledger: &mut Ledger,
    gate: Gate,
    checks: Vec<StepCheck>,
    method: &'static str,
) -> Result<Judged, Rejected> {
    debug_assert!(
        d.about().gates.contains(&gate),
        "{}: judged with a gate its About does not list: {gate:?}",
        d.id()
    );
    let steady = a.steady.len();
    let held: Vec<&StepCheck> = checks
        .iter()
        .filter(|c| c.value >= gate.threshold)
        .collect();
    if held.is_empty() || steady == 0 {
        return Err(Rejected(None));
    }
    let mut values: Vec<f64> = held.iter().map(|c| c.value).collect();
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    let check = GateCheck {
        gate,
        held_steps: held.len(),
        steady_steps: steady,
        median,
        margin: if gate.threshold > 0.0 {
            median / gate.threshold
        } else {
            1.0
        },
    };
    if (held.len() as f64) < MIN_CONSISTENCY * steady as f64 {
        return Err(Rejected(Some(Note {
            id: d.id(),
            text: format!(
                "{}: {} reaches {} in {} of {} steady steps (median {:.1}); a finding needs at least half of them",
                d.title(),
                gate.quantity,
                gate.threshold,
                held.len(),
                steady,
                median
            ),
        })));
    }
    let mut trial = ledger.clone();
    let mut claimed = Vec::with_capacity(held.len());
    // Time of these claims that earlier findings already hold, by claimant, summed over steps.
    let mut explained: Vec<(&'static str, i64)> = Vec::new();
    let mut costs: Vec<StepCost> = held
        .iter()
        .map(|c| {
            let range = a.range(c.step);
            let mut here = Vec::new();
            let mut ns = 0.0;
            for (iv, fraction) in &c.claims {
                for (owner, ns) in trial.held_by(c.step, range, iv) {
                    match explained.iter_mut().find(|o| o.0 == owner) {
                        Some(o) => o.1 += ns,
                        None if owner != d.id() => explained.push((owner, ns)),
                        None => {}
                    }
                }
                let new = trial.claim_intervals(d.id(), c.step, range, iv);
                ns += crate::metrics::total(&new) as f64 * fraction.clamp(0.0, 1.0);
                here.extend(new);
            }
            claimed.push((c.step, crate::metrics::merge(here)));
            StepCost {
                number: a.steps.steps[c.step].number,
                ms: ns / 1e6,
                value: c.value,
            }
        })
        .collect();
    let per_step_ns = a.per_step(costs.iter().map(|c| c.ms * 1e6).sum());
    let impact = a.impact(per_step_ns, method);
    let explained_by: Vec<(&'static str, f64)> = explained
        .into_iter()
        .map(|(owner, ns)| (owner, a.per_step(ns as f64) / 1e6))
        .collect();
    let costs_enough =
        impact.pct_of_step >= MIN_COST_PCT || pct(per_step_ns, a.busy_ns()) >= MIN_COST_PCT_OF_BUSY;
    if !costs_enough || impact.ms_per_step < MIN_COST_MS {
        return Err(Rejected(Some(Note {
            id: d.id(),
            text: format!(
                "{}: {} reaches {} in {} of {} steady steps, but the time it explains that no other finding already explains is {:.3} ms per step ({:.2}% of the step), below the {MIN_COST_PCT}% of the step (or {MIN_COST_PCT_OF_BUSY}% of GPU busy time) a finding needs{}",
                d.title(),
                gate.quantity,
                gate.threshold,
                held.len(),
                steady,
                impact.ms_per_step,
                impact.pct_of_step,
                explained_text(&explained_by).map_or(String::new(), |t| format!(" ({t})"))
            ),
        })));
    }
    *ledger = trial;
    let held_numbers = costs.iter().map(|c| c.number).collect();
    costs.sort_by(|x, y| y.ms.total_cmp(&x.ms).then(x.number.cmp(&y.number)));
    Ok(Judged {
        gate: check,
        impact,
        step_costs: costs,
        held: held_numbers,
        claimed,
        explained_by,
    })
}

/// "optimizer-not-fused and zero-grad-memset already explain 3.10 ms per step of this time",
/// or `None` when no other finding holds any of it.
fn explained_text(explained_by: &[(&'static str, f64)]) -> Option<String> {
    let (last, rest) = explained_by.split_last()?;
    let ids: Vec<&str> = rest.iter().map(|e| e.0).collect();
    let names = if ids.is_empty() {
        last.0.to_string()
    } else {
        format!("{} and {}", ids.join(", "), last.0)
    };
    let ms: f64 = explained_by.iter().map(|e| e.1).sum();
    let verb = if rest.is_empty() {
        "explains"
    } else {
        "explain"
    };
    Some(format!(
        "{names} already {verb} {ms:.2} ms per step of this time"
    ))
}

/// A gate that did not make a finding: a note saying what was seen, or nothing.
pub struct Rejected(pub Option<Note>);

impl Rejected {
    /// Nothing seen that is worth a note (the trace does not have what the detector reads).
    pub(crate) const NOTHING: Rejected = Rejected(None);
}

/// A finding from a [`Judged`] gate.
/// A symptom's finding also says which causes already explain part of its time.
pub(crate) fn finding(
    d: &dyn Detector,
    outcome: Judged,
    mut summary: String,
    mut evidence: Vec<Evidence>,
    fix: Fix,
) -> Verdict {
    if let Some(text) = explained_text(&outcome.explained_by).filter(|_| d.symptom()) {
        summary = format!("{summary}; {text}, not counted here");
        evidence.push(Evidence {
            what: format!("causes found first: {text}"),
            steps: outcome.held.clone(),
            events: Vec::new(),
            count: None,
            sources: Vec::new(),
        });
    }
    Ok(Box::new(Finding {
        id: d.id(),
        title: d.title(),
        summary,
        severity: Severity::of(outcome.impact.pct_of_step),
        confidence: outcome.gate.confidence(),
        impact: outcome.impact,
        gate: outcome.gate,
        step_costs: outcome.step_costs,
        evidence,
        fix,
        module: None,
        claimed: outcome.claimed,
    }))
}

/// `part` as a percentage of `whole`.
pub(crate) fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}
