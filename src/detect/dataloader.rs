//! DataLoader bottleneck: the GPU waits while the host fetches the next batch.

use super::{finding, judge, part_checks, Analysis, Detector, Evidence, Fix, Gate, Verdict};
use crate::attribution::{Ledger, Part};
use crate::model::EventKind;
use crate::window::{phase_of, Phase};

pub struct DataLoaderBottleneck;

/// GPU idle inside DataLoader ranges from 5% of the step (the TensorBoard plugin's 5% rule,
/// counted as time the GPU loses rather than time the host spends).
const GATE: Gate = Gate {
    quantity: "GPU idle inside DataLoader __next__ ranges, % of the step",
    threshold: 5.0,
};

const FIX_DATA_LOADER_BOTTLENECK: Fix = Fix {
    summary: "Load batches in background worker processes, pinned, and keep the workers alive between epochs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)",
};

impl Detector for DataLoaderBottleneck {
    fn id(&self) -> &'static str {
        "dataloader-bottleneck"
    }

    fn title(&self) -> &'static str {
        "The GPU waits for the DataLoader"
    }

    fn threshold(&self) -> &'static str {
        "GPU idle while the host is inside enumerate(DataLoader)#…__next__ at least 5% of the step, in at least half of the steady steps"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_DATA_LOADER_BOTTLENECK)
    }

    fn training_only(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let checks = part_checks(a, &[Part::IdleData], |_| true);
        let o = match judge(
            self,
            a,
            ledger,
            GATE,
            checks,
            "GPU idle while the host is inside DataLoader ranges, mean over steady-state steps",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
        let t = a.trace;
        let e = &t.events;
        // The longest DataLoader ranges of the steps where the gate holds.
        let ranges: Vec<usize> = (0..e.len())
            .filter(|&i| {
                matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                    && a.steady_step_at(e.start[i])
                        .is_some_and(|k| o.held.contains(&a.steps.steps[k].number))
                    && phase_of(t.name_of(i)) == Some(Phase::DataLoading)
            })
            .collect();
        let loading_ms = a.steady_mean(|m| m.dataloader_ns as f64) / 1e6;
        let summary = format!(
            "the GPU is idle {:.2} ms per step ({:.1}% of the step) while the host loads the next batch ({loading_ms:.2} ms in the DataLoader per step)",
            o.impact.ms_per_step, o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: format!(
                "GPU idle inside DataLoader ranges in {} of {} steady steps",
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
