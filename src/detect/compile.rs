//! `torch.compile` graph breaks and recompilations, where the trace shows them (a note).

use super::{About, Analysis, Note, Observer};
use crate::model::EventKind;

pub(crate) struct GraphBreaks;

const GRAPH_BREAKS_ABOUT: About = About {
    id: "compile-graph-breaks",
    title: "torch.compile splits the model into several graphs or recompiles",
    rule: "more than one \"Torch-Compiled Region\" per steady-state step (graph breaks), or a region whose id shows a recompilation (\"0/1\" and later)",
    gates: &[],
    fixes: &[],
};

impl Observer for GraphBreaks {
    fn about(&self) -> &'static About {
        &GRAPH_BREAKS_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let e = &t.events;
        let (mut regions, mut recompiled) = (0u64, Vec::new());
        for i in 0..e.len() {
            // The name first: a step lookup per event costs more than the whole scan.
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation) {
                continue;
            }
            let name = t.name_of(i);
            let Some(id) = name.strip_prefix("Torch-Compiled Region") else {
                continue;
            };
            if a.steady_step_at(e.start[i]).is_none() {
                continue;
            }
            regions += 1;
            // "Torch-Compiled Region: 0/1": frame 0, compiled for the second time.
            let again = id
                .rsplit('/')
                .next()
                .and_then(|n| n.trim().parse::<u32>().ok())
                .is_some_and(|n| n > 0);
            if again && !recompiled.iter().any(|r: &String| r == name) {
                recompiled.push(name.to_string());
            }
        }
        let per_step = a.per_step(regions as f64);
        (per_step > 1.0 || !recompiled.is_empty()).then(|| self.about().note(format!(
                "{per_step:.0} compiled regions per step{}; find the breaks with TORCH_LOGS=\"graph_breaks,recompiles\"",
                if recompiled.is_empty() {
                    String::new()
                } else {
                    format!("; recompiled: {}", recompiled.join(", "))
                }
            )))
    }
}
