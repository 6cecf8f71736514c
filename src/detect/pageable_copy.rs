//! Pageable host-to-device copies: staged through a bounce buffer, synchronous with the host.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::{CopyDirection, HostMemory};

pub struct PageableCopy;

/// Pageable copies matter from this share of the step in copy time…
const MIN_SHARE: f64 = 0.01;
/// …or from this many bytes per step.
const MIN_BYTES: f64 = 1e6;

const PAGEABLE_COPY_FIX: Fix = Fix {
    summary: "Pin host buffers (DataLoader pin_memory=True) and copy with non_blocking=True.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True)\nx = x.to(device, non_blocking=True)",
};

impl Detector for PageableCopy {
    fn fixes(&self) -> &'static [Fix] {
        &[PAGEABLE_COPY_FIX]
    }

    fn id(&self) -> &'static str {
        "pageable-memcpy"
    }

    fn title(&self) -> &'static str {
        "Copies from pageable host memory"
    }

    fn threshold(&self) -> &'static str {
        "host-to-device or device-to-host copies from pageable memory in steady-state steps taking at least 1% of the step or moving at least 1 MB per step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let pageable = |m: &crate::metrics::RangeMetrics| -> (f64, f64, f64) {
            m.copies
                .iter()
                .filter(|c| {
                    c.host_memory == HostMemory::Pageable
                        && matches!(
                            c.direction,
                            CopyDirection::HostToDevice | CopyDirection::DeviceToHost
                        )
                })
                .fold((0.0, 0.0, 0.0), |acc, c| {
                    (
                        acc.0 + c.count as f64,
                        acc.1 + c.bytes as f64,
                        acc.2 + c.ns as f64,
                    )
                })
        };
        let count = a.steady_mean(|m| pageable(m).0);
        let bytes = a.steady_mean(|m| pageable(m).1);
        let ns = a.steady_mean(|m| pageable(m).2);
        if count <= 0.0 || (ns < MIN_SHARE * a.step_ns() && bytes < MIN_BYTES) {
            return None;
        }
        let impact = a.impact(
            ns / 2.0,
            "half the pageable copy time per steady-state step: pinned copies run about twice as fast and, with non_blocking=True, overlap compute",
        );
        Some(finding(
            self,
            format!("{count:.1} copies per step ({:.1} MB) go through pageable host memory, taking {:.3} ms of GPU copy time", bytes / 1e6, ns / 1e6),
            impact,
            0.7,
            vec![Evidence { what: "pageable copies".into(), steps: a.steady_numbers(), events: vec!["Memcpy HtoD (Pageable -> Device)".into()], count: Some(count.round() as u64) }],
            PAGEABLE_COPY_FIX,
        ))
    }
}
