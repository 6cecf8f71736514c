//! Frequent or large memory copies, device-to-device ones included (`.contiguous()`, `clone`).

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::CopyDirection;

pub struct HeavyCopies;

/// Copies matter from this share of the step.
const SHARE: f64 = 0.05;

const HEAVY_COPIES_FIX: Fix = Fix {
    summary: "Avoid copies that only change layout (.contiguous(), .clone(), .to() of tensors already on the device, permute followed by copy); batch small host copies into one pinned buffer.",
    snippet: "# instead of x.permute(0, 2, 3, 1).contiguous() every step:\nmodel = model.to(memory_format=torch.channels_last)",
};

impl Detector for HeavyCopies {
    fn fixes(&self) -> &'static [Fix] {
        &[HEAVY_COPIES_FIX]
    }

    fn id(&self) -> &'static str {
        "heavy-memcpy"
    }

    fn title(&self) -> &'static str {
        "Frequent or large memory copies"
    }

    fn threshold(&self) -> &'static str {
        "GPU copy time (all directions) above 5% of the steady-state step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let by = |d: Option<CopyDirection>| {
            move |m: &crate::metrics::RangeMetrics| -> f64 {
                m.copies
                    .iter()
                    .filter(|c| d.is_none_or(|d| c.direction == d))
                    .map(|c| c.ns as f64)
                    .sum()
            }
        };
        let all = a.steady_mean(by(None));
        if all < SHARE * a.step_ns() {
            return None;
        }
        let d2d = a.steady_mean(by(Some(CopyDirection::DeviceToDevice)));
        let count = a.steady_mean(|m| m.copies.iter().map(|c| c.count as f64).sum());
        let impact = a.impact(
            d2d + (all - d2d) / 2.0,
            "device-to-device copy time plus half the host copy time per steady-state step: layout copies can usually be avoided, host copies overlapped",
        );
        Some(finding(
            self,
            format!(
                "{count:.0} copies per step take {:.2} ms of GPU time ({:.2} ms device-to-device)",
                all / 1e6,
                d2d / 1e6
            ),
            impact,
            0.5,
            vec![Evidence {
                what: "GPU memcpy time per step".into(),
                steps: a.steady_numbers(),
                events: vec![
                    "Memcpy DtoD (Device -> Device)".into(),
                    "Memcpy HtoD".into(),
                ],
                count: Some(count.round() as u64),
            }],
            HEAVY_COPIES_FIX,
        ))
    }
}
