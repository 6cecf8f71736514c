//! DataLoader bottleneck: the GPU waits while the host fetches the next batch, in any pipeline
//! (training, evaluation, batch inference); on a CPU-only trace, the host's own time in it.

use super::contract::{
    finding, interval_checks, judge, part_checks, About, Detector, Evidence, Fix, Gate, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{intersect, HostRanges, Ledger, Part};
use crate::model::EventKind;
use crate::window::{phase_of, Phase};

pub(crate) struct DataLoaderBottleneck;

/// GPU idle inside DataLoader ranges from 5% of the step (the TensorBoard plugin's 5% rule,
/// counted as time the GPU loses rather than time the host spends).
const GATE: Gate = Gate {
    quantity: "GPU idle inside DataLoader __next__ ranges, % of the step",
    threshold: 5.0,
};
/// With no GPU, the host's own time in the DataLoader, from the same share.
const GATE_HOST: Gate = Gate {
    quantity: "host time inside DataLoader __next__ ranges, % of the step (CPU-only trace)",
    threshold: GATE.threshold,
};

const FIX_DATA_LOADER_BOTTLENECK: Fix = Fix {
    summary: "Load batches in background worker processes, pinned, and keep the workers alive between epochs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)",
    terms: &["num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "worker processes"],
};

const DATA_LOADER_BOTTLENECK_ABOUT: About = About {
    id: "dataloader-bottleneck",
    title: "The step waits for the DataLoader",
    rule: "GPU idle while the host is inside enumerate(DataLoader)#…__next__ (on a CPU-only trace: host time inside it) at least {0}% of the step, in at least half of the steady steps; training, evaluation or inference",
    gates: &[GATE, GATE_HOST],
    fixes: std::slice::from_ref(&FIX_DATA_LOADER_BOTTLENECK),
};

impl Detector for DataLoaderBottleneck {
    fn about(&self) -> &'static About {
        &DATA_LOADER_BOTTLENECK_ABOUT
    }

    fn assumes_training(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let (gate, checks, method, waits) = if a.cpu_only {
            let data = HostRanges::of(a.trace).data;
            (
                GATE_HOST,
                // The host's own time inside DataLoader ranges: no GPU to wait.
                interval_checks(a, |k| (intersect(&data, &[a.range(k)]), true)),
                "host time inside DataLoader ranges, mean over steady-state steps: loading in worker processes, ahead of the step, takes it off the main process",
                "the main process waits",
            )
        } else {
            (
                GATE,
                part_checks(a, &[Part::IdleData], |_| true),
                "GPU idle while the host is inside DataLoader ranges, mean over steady-state steps",
                "the GPU is idle",
            )
        };
        let o = judge(self, a, ledger, gate, checks, method)?;
        let t = a.trace;
        let e = &t.events;
        // The longest DataLoader ranges of the steps where the gate holds.
        let ranges = o.events_where(a, |i| {
            matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                && phase_of(t.name_of(i)) == Some(Phase::DataLoading)
        });
        let loading_ms = a.steady_mean(|m| m.dataloader_ns as f64) / 1e6;
        let summary = format!(
            "{waits} {:.2} ms per step ({:.1}% of the step) while the host loads the next batch ({loading_ms:.2} ms in the DataLoader per step)",
            o.impact.ms_per_step, o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: format!(
                "{} inside DataLoader ranges in {} of {} steady steps",
                if a.cpu_only { "host time" } else { "GPU idle" },
                o.held.len(),
                a.steady.len()
            ),
            steps: o.held.clone(),
            events: a.longest_refs(&ranges, 3),
            count: Some(ranges.len() as u64),
            sources: ranges,
        }];
        finding(self, o, summary, evidence, FIX_DATA_LOADER_BOTTLENECK)
    }
}
