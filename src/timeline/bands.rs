//! The diagnosis on the timeline: the time ranges to draw as bands for the findings and the
//! window detector's unexplained regions, and the detector's score per window for the heat strip.

use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::detect::Finding;
use crate::report::Report;

/// A flagged window on the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub start: i64,
    pub end: i64,
    /// The finding's id (`Finding::id`), or `unexplained:<type>` for a region no finding explains.
    pub finding: String,
    pub label: String,
}

/// A window and the window detector's probability for it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub start: i64,
    pub end: i64,
    pub probability: f32,
}

/// A band per window that holds a finding's evidence (`Report::finding_windows`, best first, at
/// most `report::MAX_FINDING_WINDOWS` per finding); then the unexplained regions.
pub fn bands(a: &Analysis<'_>, findings: &[Finding], report: &Report) -> Vec<Band> {
    let mut out = Vec::new();
    for f in findings {
        for (step, w) in report.finding_windows(a, f) {
            let win = &a.steps.steps[step].windows[w];
            out.push(Band {
                start: win.start,
                end: win.end,
                finding: f.id.to_string(),
                label: f.title.to_string(),
            });
        }
    }
    let origin = a.trace.meta.span.map_or(0, |s| s.0);
    let ns = |ms: f64| origin + (ms * 1e6).round() as i64;
    out.extend(report.unexplained.iter().map(|u| Band {
        start: ns(u.start_ms),
        end: ns(u.start_ms + u.duration_ms),
        finding: format!("unexplained:{}", u.predicted_type),
        label: format!(
            "unexplained: likely {} ({:.0}%)",
            u.predicted_type,
            100.0 * u.anomaly_probability
        ),
    }));
    out
}

/// The window detector's probability per window, where it scored them.
pub fn scores(a: &Analysis<'_>, report: &Report) -> Vec<Score> {
    a.steps
        .windows()
        .zip(&report.windows)
        .filter_map(|(w, entry)| {
            Some(Score {
                start: w.start,
                end: w.end,
                probability: entry.anomaly_probability?,
            })
        })
        .collect()
}
