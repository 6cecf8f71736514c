//! Window labels: which anti-pattern a window holds. `ttap-dev synth --labels` writes them for a
//! generated trace (the generator's `Label`: `step`, `phase`, `pattern`); the web app writes the same
//! entries for the windows of a real trace a person judged (an LLM's verdict on an unexplained
//! region, confirmed or corrected), with the trace's name and fingerprint so that each label
//! finds its trace again. `ttap-dev features --labels` and `ttap-dev eval --labels` read both.
//!
//! The file is a JSON array of entries; `pattern` is a detector id the generator injects
//! (`model::AntiPattern::id`, the classes of the window detector's type forest) or
//! [`NOT_AN_ANTI_PATTERN`].

use serde::{Deserialize, Serialize};

use super::MlError;
use crate::model::AntiPattern;

/// `pattern` of a window a person judged normal: the word `ttap-dev features` writes for an
/// unlabelled window.
pub const NOT_AN_ANTI_PATTERN: &str = "none";

/// One labelled window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowLabel {
    /// `N` of `ProfilerStep#N`.
    pub step: i64,
    /// The window's phase (`window::Phase::label`).
    pub phase: String,
    /// A detector id (`model::AntiPattern::id`) or [`NOT_AN_ANTI_PATTERN`].
    pub pattern: String,
    /// The window's index among its step's windows (several windows of a step can share a
    /// phase); absent in the generator's labels, which name every window of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// The trace's file name, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// `share::fingerprint` of the trace: how a reader matches the label to its trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl WindowLabel {
    /// Whether the label names a window the label applies to: its step and phase, and its
    /// index in the step when the label has one.
    pub fn names(&self, step: i64, phase: &str, index: usize) -> bool {
        self.step == step && self.phase == phase && self.window.is_none_or(|w| w == index)
    }
}

/// The patterns a label may hold: the detector ids the generator injects (and the window
/// detector types), then [`NOT_AN_ANTI_PATTERN`].
pub fn patterns() -> impl Iterator<Item = &'static str> {
    AntiPattern::ALL
        .iter()
        .map(|p| p.id())
        .chain([NOT_AN_ANTI_PATTERN])
}

/// Reads a labels file's text (`source` names it in errors), checking every entry's pattern.
pub fn parse(text: &str, source: &str) -> Result<Vec<WindowLabel>, MlError> {
    let labels: Vec<WindowLabel> = serde_json::from_str(text).map_err(|e| MlError::NotLabels {
        file: source.to_string(),
        message: e.to_string(),
    })?;
    if let Some((i, l)) = labels
        .iter()
        .enumerate()
        .find(|(_, l)| !patterns().any(|p| p == l.pattern))
    {
        return Err(MlError::UnknownPattern {
            file: source.to_string(),
            index: i,
            step: l.step,
            phase: l.phase.clone(),
            pattern: l.pattern.clone(),
            expected: patterns().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(labels)
}

/// The labels that apply to the trace of `fingerprint`: those made for it, and those without a
/// fingerprint (the generator's, which come with their own trace). An error when the file holds
/// labels but none for this trace (`source` names the file, `trace` the trace).
pub fn for_trace(
    labels: Vec<WindowLabel>,
    fingerprint: &str,
    source: &str,
    trace: &str,
) -> Result<Vec<WindowLabel>, MlError> {
    let total = labels.len();
    let mine: Vec<WindowLabel> = labels
        .into_iter()
        .filter(|l| l.fingerprint.as_deref().is_none_or(|f| f == fingerprint))
        .collect();
    if total > 0 && mine.is_empty() {
        return Err(MlError::NoLabelsForTrace {
            total,
            file: source.to_string(),
            trace: trace.to_string(),
            fingerprint: fingerprint.to_string(),
        });
    }
    Ok(mine)
}

/// The labels file's text (what [`parse`] reads).
pub fn to_json(labels: &[WindowLabel]) -> String {
    serde_json::to_string_pretty(labels).expect("labels serialize")
}

/// What an LLM's `anti_pattern` answer (free text: a detector id, or words like "DataLoader
/// bottleneck") names, as a label's pattern; `None` when it names none of them, and the person
/// chooses. Cues are matched at the start of a word, in this order (pinned memory before the
/// DataLoader, whose `pin_memory` is the fix for pageable copies).
pub fn pattern_of(said: &str) -> Option<&'static str> {
    let words: String = said
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(p) = patterns().find(|p| p.replace('-', " ") == words) {
        return Some(p);
    }
    if matches!(
        words.as_str(),
        "no anti pattern" | "not an anti pattern" | "no antipattern" | "normal" | "n a"
    ) {
        return Some(NOT_AN_ANTI_PATTERN);
    }
    const CUES: [(&str, AntiPattern); 17] = [
        ("pageable", AntiPattern::PageableCopy),
        ("pinned", AntiPattern::PageableCopy),
        ("pin memory", AntiPattern::PageableCopy),
        ("dataloader", AntiPattern::DataLoader),
        ("data loader", AntiPattern::DataLoader),
        ("data loading", AntiPattern::DataLoader),
        ("input pipeline", AntiPattern::DataLoader),
        ("sync", AntiPattern::HostSync),
        ("item", AntiPattern::HostSync),
        ("tensor core", AntiPattern::Fp32Simt),
        ("fp32", AntiPattern::Fp32Simt),
        ("tf32", AntiPattern::Fp32Simt),
        ("alloc", AntiPattern::AllocatorChurn),
        ("malloc", AntiPattern::AllocatorChurn),
        ("cudamalloc", AntiPattern::AllocatorChurn),
        ("launch", AntiPattern::LaunchBound),
        ("small kernel", AntiPattern::LaunchBound),
    ];
    let at_word_start = |cue: &str| {
        words
            .match_indices(cue)
            .any(|(i, _)| i == 0 || words.as_bytes()[i - 1] == b' ')
    };
    CUES.iter()
        .find(|(cue, _)| at_word_start(cue))
        .map(|(_, p)| p.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_detector_ids() {
        for (said, id) in [
            ("dataloader-bottleneck", Some("dataloader-bottleneck")),
            ("Host_Device_Sync", Some("host-device-sync")),
            ("DataLoader bottleneck", Some("dataloader-bottleneck")),
            ("Slow input pipeline", Some("dataloader-bottleneck")),
            (
                "Copies from pageable memory (DataLoader without pin_memory)",
                Some("pageable-memcpy"),
            ),
            (
                "CPU-GPU synchronization (.item())",
                Some("host-device-sync"),
            ),
            (
                "FP32 matmuls not on tensor cores",
                Some("fp32-without-tensor-cores"),
            ),
            (
                "Caching allocator churn (cudaMalloc)",
                Some("allocator-churn"),
            ),
            ("cudaMalloc per step", Some("allocator-churn")),
            ("Kernel launch overhead", Some("launch-bound-small-kernels")),
            ("none", Some(NOT_AN_ANTI_PATTERN)),
            ("Not an anti-pattern", Some(NOT_AN_ANTI_PATTERN)),
            // "asynchronous" is not "sync"; random words name nothing.
            ("asynchronous execution", None),
            ("qzx blorf", None),
            ("", None),
        ] {
            assert_eq!(pattern_of(said), id, "{said:?}");
        }
    }

    #[test]
    fn every_pattern_is_a_type_of_the_window_detector() {
        let classes = &crate::ml::Model::embedded().kind.classes;
        for p in patterns().filter(|p| *p != NOT_AN_ANTI_PATTERN) {
            assert!(classes.iter().any(|c| c == p), "{p}");
        }
    }

    #[test]
    fn bad_files_say_what_is_expected() {
        let e = parse("{}", "l.json").unwrap_err().to_string();
        assert!(e.starts_with("l.json: not a labels file"), "{e}");
        let e = parse(
            r#"[{"step": 3, "phase": "forward", "pattern": "slow"}]"#,
            "l.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("label 0 (step 3 forward) has the pattern 'slow'; expected one of dataloader-bottleneck"),
            "{e}"
        );
    }
}
