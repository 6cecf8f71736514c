//! DataLoader bottleneck: the step waits for the next batch.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::metrics::measure;
use crate::model::{EventKind, NONE};
use crate::window::{phase_of, Phase};

pub struct DataLoaderBottleneck;

/// The TensorBoard plugin's threshold: DataLoader time above 5% of the step.
const SHARE: f64 = 0.05;

const DATA_LOADER_BOTTLENECK_FIX: Fix = Fix {
    summary: "Load batches in background worker processes, pinned, and keep the workers alive between epochs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)",
};

impl Detector for DataLoaderBottleneck {
    fn fixes(&self) -> &'static [Fix] {
        &[DATA_LOADER_BOTTLENECK_FIX]
    }

    fn id(&self) -> &'static str {
        "dataloader-bottleneck"
    }

    fn title(&self) -> &'static str {
        "The step waits for the DataLoader"
    }

    fn threshold(&self) -> &'static str {
        "time in enumerate(DataLoader)#…__next__ above 5% of the steady-state step (the TensorBoard plugin's rule)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let share = a.steady_mean(|m| m.dataloader_ns as f64) / a.step_ns().max(1.0);
        if share <= SHARE {
            return None;
        }
        let t = a.trace;
        let e = &t.events;
        let has_gpu = t.tracks.iter().any(|tr| tr.gpu);
        let mut names = Vec::new();
        let mut idle_ns = 0.0;
        for i in 0..e.len() {
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                || a.steady_step_at(e.start[i]).is_none()
            {
                continue;
            }
            let name = t.name_of(i);
            let parent = e.parent[i];
            if phase_of(name) != Some(Phase::DataLoading)
                || (parent != NONE
                    && phase_of(t.name_of(parent as usize)) == Some(Phase::DataLoading))
            {
                continue;
            }
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
            // What the GPU does meanwhile: only its idle time is lost.
            idle_ns += if has_gpu {
                measure(t, e.start[i], e.end(i))
                    .main_device()
                    .map_or(0, |d| d.idle) as f64
            } else {
                e.dur[i] as f64
            };
        }
        let per_step = idle_ns / a.steady.len().max(1) as f64;
        let impact = a.impact(
            per_step,
            "GPU idle time inside DataLoader ranges (their whole length on CPU-only traces), mean over steady-state steps",
        );
        Some(finding(
            self,
            format!(
                "loading the next batch takes {:.1}% of the step; the GPU is idle for {:.2} ms of it per step",
                100.0 * share,
                impact.ms_per_step
            ),
            impact,
            0.8,
            vec![Evidence {
                what: format!("DataLoader time: {:.2} ms per step", a.steady_mean(|m| m.dataloader_ns as f64) / 1e6),
                steps: a.steady_numbers(),
                events: names,
                count: None,
            }],
            DATA_LOADER_BOTTLENECK_FIX,
        ))
    }
}
