//! The timeline's step strip: each step's range and the label drawn on it. A serving capture's
//! steps are its engine's iterations, labelled by kind (`decode 12`, `prefill 3`) as the
//! report's serving table counts them; any other trace's, `step 12`.

use rustc_hash::FxHashMap;

use crate::analysis::Analysis;

/// A step on the strip.
#[derive(Clone, Debug, PartialEq)]
pub struct StepMark {
    pub start: i64,
    pub end: i64,
    pub label: String,
}

/// The strip: its heading (`steps`, or `iterations` for a serving capture) and its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct StepStrip {
    pub heading: &'static str,
    pub marks: Vec<StepMark>,
}

impl StepStrip {
    pub fn of(a: &Analysis<'_>) -> StepStrip {
        let kinds: Option<FxHashMap<i64, &'static str>> = a.serving.as_ref().map(|s| {
            s.iterations
                .iter()
                .map(|i| (i.number, i.kind.map_or("iteration", |k| k.label())))
                .collect()
        });
        let marks = a
            .steps
            .steps
            .iter()
            .map(|s| {
                let word = kinds
                    .as_ref()
                    .map_or("step", |k| k.get(&s.number).copied().unwrap_or("iteration"));
                StepMark {
                    start: s.start,
                    end: s.end,
                    label: format!("{word} {}", s.number),
                }
            })
            .collect();
        StepStrip {
            heading: if kinds.is_some() {
                "iterations"
            } else {
                "steps"
            },
            marks,
        }
    }
}
