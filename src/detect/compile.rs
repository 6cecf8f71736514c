//! `torch.compile` graph breaks and recompilations, where the trace shows them.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix, Severity};
use crate::model::EventKind;

pub struct GraphBreaks;

const GRAPH_BREAKS_FIX: Fix = Fix {
    summary: "Find the breaks and make the model graph-friendly (no .item() or data-dependent Python control flow inside); mark dynamic dimensions to stop recompilations.",
    snippet: "TORCH_LOGS=\"graph_breaks,recompiles\" python train.py\n# or: torch._dynamo.explain(model)(x)\ntorch._dynamo.mark_dynamic(x, 0)",
};

impl Detector for GraphBreaks {
    fn fixes(&self) -> &'static [Fix] {
        &[GRAPH_BREAKS_FIX]
    }

    fn id(&self) -> &'static str {
        "compile-graph-breaks"
    }

    fn title(&self) -> &'static str {
        "torch.compile splits the model into several graphs or recompiles"
    }

    fn threshold(&self) -> &'static str {
        "more than one \"Torch-Compiled Region\" per steady-state step (graph breaks), or a region whose id shows a recompilation (\"0/1\" and later)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let (mut regions, mut recompiled) = (0u64, Vec::new());
        for i in 0..e.len() {
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                || a.steady_step_at(e.start[i]).is_none()
            {
                continue;
            }
            let name = t.name_of(i);
            let Some(id) = name.strip_prefix("Torch-Compiled Region") else {
                continue;
            };
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
        let per_step = regions as f64 / a.steady.len().max(1) as f64;
        if per_step <= 1.0 && recompiled.is_empty() {
            return None;
        }
        let mut f = finding(
            self,
            format!("{per_step:.0} compiled regions per step{}", if recompiled.is_empty() { String::new() } else { format!("; {} recompiled", recompiled.len()) }),
            a.impact(0.0, "no time estimate: each graph break adds Python and launch overhead between graphs and blocks fusion across it"),
            0.6,
            vec![Evidence { what: "Torch-Compiled Region ranges".into(), steps: a.steady_numbers(), events: recompiled, count: Some(regions) }],
            GRAPH_BREAKS_FIX,
        );
        f.severity = Severity::Medium;
        Some(f)
    }
}
