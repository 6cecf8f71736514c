//! A fleet report (`torchtraceap.fleet`, version 1), as `scripts/fleet/fleet.py` writes it after
//! analyzing a folder of traces on Ray: which anti-patterns cost the most time across jobs, which
//! jobs and ranks are worst. [`Fleet::from_json`] reads one for the app and the CLI.
//!
//! A fleet report is a file from elsewhere, read as untrusted data: every number must be finite
//! and within its range, every list and text within [`MAX_ROWS`] and [`MAX_TEXT_CHARS`]; its
//! anti-pattern and split-part ids must be ones this version knows, so that their words (titles,
//! labels) come from this version's catalogue and never from the file. Trace and job names are
//! the file's own text: views show them as data (text nodes, code cells), never as markup.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::attribution::Part;
use crate::detect;

/// The format name in the file's `format` field.
pub const FORMAT: &str = "torchtraceap.fleet";
/// The format version this version reads.
pub const VERSION: u32 = 1;
/// The most rows a list may hold (traces, jobs, anti-patterns, failures).
pub(crate) const MAX_ROWS: usize = 200_000;
/// The longest text (a trace path, a job, an error message), in characters.
pub(crate) const MAX_TEXT_CHARS: usize = 2_000;
/// The longest time accepted, in ms (over 30 years: past any fleet's total).
const MAX_MS: f64 = 1e12;
/// The highest rank number accepted.
const MAX_RANK: u32 = 1 << 20;

/// Why a file cannot be shown as a fleet report.
#[derive(Debug, Error)]
pub enum FleetError {
    #[error("this is not a fleet report TorchTraceAP can read: {0}. Open the fleet.json that scripts/fleet/fleet.py wrote")]
    Json(#[from] serde_json::Error),
    #[error("the file's format is {found:?}, not {FORMAT:?}: open the fleet.json that scripts/fleet/fleet.py wrote")]
    Format { found: String },
    #[error("fleet report version {found} is not version {VERSION}, the one this version of TorchTraceAP reads: open it with the version that wrote it, or run the fleet job again")]
    Version { found: u32 },
    #[error("{at} holds {found}, {why}: the file was changed by hand or damaged; run the fleet job again")]
    Bounds {
        at: String,
        found: String,
        why: &'static str,
    },
}

/// A fleet report: what `fleet.py`'s `merge` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fleet {
    format: String,
    version: u32,
    /// Traces found.
    pub traces: u64,
    /// Traces analyzed.
    pub analyzed: u64,
    pub failed: Vec<Failure>,
    /// The anti-patterns found across the fleet, most time lost first.
    pub anti_patterns: Vec<FleetPattern>,
    /// Jobs (a folder of ranks, or one trace), most recoverable time first.
    pub jobs: Vec<Job>,
    /// Traces, most recoverable time per step first.
    pub worst_traces: Vec<TraceRow>,
    /// The step split averaged over the analyzed traces: part id → ms per step.
    pub mean_split_ms_per_step: BTreeMap<String, f64>,
}

/// A trace that could not be analyzed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub trace: String,
    pub error: String,
}

/// One anti-pattern across the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetPattern {
    /// A detector's id (checked against this version's catalogue).
    pub id: String,
    pub traces: u64,
    pub jobs: u64,
    /// Its cost per step, summed over the traces that show it.
    pub ms_per_step_sum: f64,
    /// Its cost over every profiled step of every trace.
    pub ms_total: f64,
    /// Findings per severity (`high`, `medium`, `low`).
    pub severity: BTreeMap<String, u64>,
}

/// One job of the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub job: String,
    pub traces: u64,
    pub recoverable_ms_per_step: f64,
    pub worst_rank: Option<u32>,
    pub slowest_rank: Option<u32>,
    pub mean_step_ms: f64,
    /// The ranks each anti-pattern was found on.
    pub anti_patterns: BTreeMap<String, Vec<u32>>,
    /// Ranks whose top finding fewer than half of the job's ranks share.
    pub outlier_ranks: Vec<u32>,
}

/// One trace of the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    pub trace: String,
    pub job: String,
    pub rank: Option<u32>,
    pub mean_step_ms: Option<f64>,
    /// The share of the step its findings claim.
    pub recoverable_pct: f64,
    pub recoverable_ms_per_step: f64,
    pub top_finding: Option<String>,
}

impl Fleet {
    /// Reads and checks a fleet report.
    pub fn from_json(text: &str) -> Result<Fleet, FleetError> {
        let fleet: Fleet = serde_json::from_str(text)?;
        if fleet.format != FORMAT {
            return Err(FleetError::Format {
                found: fleet.format.chars().take(40).collect(),
            });
        }
        if fleet.version != VERSION {
            return Err(FleetError::Version {
                found: fleet.version,
            });
        }
        fleet.check()?;
        Ok(fleet)
    }

    /// Whether `text` starts like a fleet report (its first bytes name the format).
    pub fn looks_like(head: &str) -> bool {
        head.contains(&format!("\"{FORMAT}\""))
    }

    fn check(&self) -> Result<(), FleetError> {
        rows("failed", self.failed.len())?;
        rows("anti_patterns", self.anti_patterns.len())?;
        rows("jobs", self.jobs.len())?;
        rows("worst_traces", self.worst_traces.len())?;
        if self.analyzed > self.traces {
            return Err(bounds(
                "analyzed",
                self.analyzed,
                "more than the traces found",
            ));
        }
        for (i, f) in self.failed.iter().enumerate() {
            text(&format!("failed[{i}].trace"), &f.trace)?;
            text(&format!("failed[{i}].error"), &f.error)?;
        }
        for (i, p) in self.anti_patterns.iter().enumerate() {
            let at = format!("anti_patterns[{i}]");
            detector_id(&format!("{at}.id"), &p.id)?;
            ms(&format!("{at}.ms_per_step_sum"), p.ms_per_step_sum)?;
            ms(&format!("{at}.ms_total"), p.ms_total)?;
            if p.traces > self.analyzed {
                return Err(bounds(
                    &format!("{at}.traces"),
                    p.traces,
                    "more than the traces analyzed",
                ));
            }
            for severity in p.severity.keys() {
                if !["high", "medium", "low"].contains(&severity.as_str()) {
                    return Err(bounds(
                        &format!("{at}.severity"),
                        quoted_start(severity),
                        "not high, medium or low",
                    ));
                }
            }
        }
        for (i, j) in self.jobs.iter().enumerate() {
            let at = format!("jobs[{i}]");
            text(&format!("{at}.job"), &j.job)?;
            ms(
                &format!("{at}.recoverable_ms_per_step"),
                j.recoverable_ms_per_step,
            )?;
            ms(&format!("{at}.mean_step_ms"), j.mean_step_ms)?;
            rank(&format!("{at}.worst_rank"), j.worst_rank)?;
            rank(&format!("{at}.slowest_rank"), j.slowest_rank)?;
            rows(&format!("{at}.anti_patterns"), j.anti_patterns.len())?;
            for (id, ranks) in &j.anti_patterns {
                detector_id(&format!("{at}.anti_patterns"), id)?;
                rows(&format!("{at}.anti_patterns.{id}"), ranks.len())?;
                for &r in ranks {
                    rank(&format!("{at}.anti_patterns.{id}"), Some(r))?;
                }
            }
            rows(&format!("{at}.outlier_ranks"), j.outlier_ranks.len())?;
            for &r in &j.outlier_ranks {
                rank(&format!("{at}.outlier_ranks"), Some(r))?;
            }
        }
        for (i, t) in self.worst_traces.iter().enumerate() {
            let at = format!("worst_traces[{i}]");
            text(&format!("{at}.trace"), &t.trace)?;
            text(&format!("{at}.job"), &t.job)?;
            rank(&format!("{at}.rank"), t.rank)?;
            if let Some(step) = t.mean_step_ms {
                ms(&format!("{at}.mean_step_ms"), step)?;
            }
            ms(
                &format!("{at}.recoverable_ms_per_step"),
                t.recoverable_ms_per_step,
            )?;
            if !(0.0..=100.0).contains(&t.recoverable_pct) {
                return Err(bounds(
                    &format!("{at}.recoverable_pct"),
                    t.recoverable_pct,
                    "not a share between 0 and 100",
                ));
            }
            if let Some(top) = &t.top_finding {
                detector_id(&format!("{at}.top_finding"), top)?;
            }
        }
        for (part, &value) in &self.mean_split_ms_per_step {
            if part_of(part).is_none() {
                return Err(bounds(
                    "mean_split_ms_per_step",
                    quoted_start(part),
                    "not a part of the step split this version knows",
                ));
            }
            ms(&format!("mean_split_ms_per_step.{part}"), value)?;
        }
        Ok(())
    }

    /// The split's parts in this version's order, with their labels.
    pub fn split(&self) -> Vec<(Part, f64)> {
        Part::ALL
            .into_iter()
            .filter_map(|p| Some((p, *self.mean_split_ms_per_step.get(p.id())?)))
            .collect()
    }
}

/// The catalogue title of a detector id the report was checked to hold.
pub fn title_of(id: &str) -> &'static str {
    detect::detector(id).map_or("", |d| d.title())
}

fn part_of(id: &str) -> Option<Part> {
    Part::ALL.into_iter().find(|p| p.id() == id)
}

fn bounds(at: &str, found: impl std::fmt::Display, why: &'static str) -> FleetError {
    FleetError::Bounds {
        at: at.to_string(),
        found: found.to_string(),
        why,
    }
}

/// The start of a text from the file, quoted, for a message.
fn quoted_start(text: &str) -> String {
    format!("{:?}", text.chars().take(40).collect::<String>())
}

fn rows(at: &str, n: usize) -> Result<(), FleetError> {
    if n > MAX_ROWS {
        return Err(bounds(
            at,
            format!("{n} rows"),
            "more than a fleet report holds",
        ));
    }
    Ok(())
}

fn text(at: &str, value: &str) -> Result<(), FleetError> {
    let n = value.chars().count();
    if n > MAX_TEXT_CHARS {
        return Err(bounds(
            at,
            format!("{n} characters"),
            "longer than a path or message can be",
        ));
    }
    Ok(())
}

fn ms(at: &str, value: f64) -> Result<(), FleetError> {
    if !(0.0..=MAX_MS).contains(&value) {
        return Err(bounds(at, value, "not a time in milliseconds"));
    }
    Ok(())
}

fn rank(at: &str, value: Option<u32>) -> Result<(), FleetError> {
    match value {
        Some(r) if r > MAX_RANK => Err(bounds(at, r, "not a rank number")),
        _ => Ok(()),
    }
}

fn detector_id(at: &str, id: &str) -> Result<(), FleetError> {
    if detect::detector(id).is_none() {
        return Err(bounds(
            at,
            quoted_start(id),
            "not an anti-pattern this version knows (a fleet report from another version, or forged)",
        ));
    }
    Ok(())
}
