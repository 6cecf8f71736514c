//! Device allocations in steady state (allocator churn), and memory pressure.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix, Severity};

pub struct AllocatorChurn;
pub struct MemoryPressure;

/// Device malloc/free calls per steady-state step from which the caching allocator is missed.
const CALLS_PER_STEP: f64 = 1.0;
/// The TensorBoard plugin's threshold: peak memory above 90% of the device's memory.
const PRESSURE: f64 = 0.9;

const ALLOCATOR_CHURN_FIX: Fix = Fix {
    summary: "Let the caching allocator keep memory: remove torch.cuda.empty_cache() from the loop, do not set PYTORCH_NO_CUDA_MEMORY_CACHING, and keep tensor shapes stable (pad variable-size batches).",
    snippet: "# remove from the training loop:\n# torch.cuda.empty_cache()\n# and check: os.environ.get(\"PYTORCH_NO_CUDA_MEMORY_CACHING\") is None",
};

impl Detector for AllocatorChurn {
    fn fixes(&self) -> &'static [Fix] {
        &[ALLOCATOR_CHURN_FIX]
    }

    fn id(&self) -> &'static str {
        "allocator-churn"
    }

    fn title(&self) -> &'static str {
        "Device memory allocated and freed every step"
    }

    fn threshold(&self) -> &'static str {
        "at least one device malloc/free runtime call per steady-state step (the caching allocator should serve them after warm-up)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let mallocs = a.steady_mean(|m| m.mallocs as f64);
        let frees = a.steady_mean(|m| m.frees as f64);
        if mallocs + frees < CALLS_PER_STEP {
            return None;
        }
        let impact = a.impact(
            a.steady_mean(|m| m.alloc_call_ns as f64),
            "CPU time inside device malloc/free calls per steady-state step (cudaFree also synchronizes the device, so the real cost is higher)",
        );
        Some(finding(
            self,
            format!("{mallocs:.0} device mallocs and {frees:.0} frees per step take {:.2} ms of CPU time", impact.ms_per_step),
            impact,
            0.7,
            vec![Evidence {
                what: "device allocation calls per step".into(),
                steps: a.steady_numbers(),
                events: vec!["cudaMalloc / hipMalloc".into(), "cudaFree / hipFree".into()],
                count: Some((mallocs + frees).round() as u64),
            }],
            ALLOCATOR_CHURN_FIX,
        ))
    }
}

const MEMORY_PRESSURE_FIX: Fix = Fix {
    summary: "Lower the activation memory: activation checkpointing, mixed precision, a smaller micro-batch with gradient accumulation.",
    snippet: "from torch.utils.checkpoint import checkpoint\nx = checkpoint(block, x, use_reentrant=False)",
};

impl Detector for MemoryPressure {
    fn fixes(&self) -> &'static [Fix] {
        &[MEMORY_PRESSURE_FIX]
    }

    fn id(&self) -> &'static str {
        "memory-pressure"
    }

    fn title(&self) -> &'static str {
        "Peak memory close to the device's capacity"
    }

    fn threshold(&self) -> &'static str {
        "peak allocated memory above 90% of the device's memory (the TensorBoard plugin's rule); needs profile_memory=True"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let peak = a
            .step_metrics
            .iter()
            .filter_map(|m| m.peak_allocated)
            .max()?;
        let capacity = a
            .trace
            .meta
            .devices
            .iter()
            .filter_map(|d| d.total_global_mem)
            .max()?;
        let share = peak as f64 / capacity as f64;
        if share <= PRESSURE {
            return None;
        }
        let mut f = finding(
            self,
            format!("peak allocated memory is {:.1} GiB, {:.0}% of the device's {:.1} GiB", peak as f64 / (1u64 << 30) as f64, 100.0 * share, capacity as f64 / (1u64 << 30) as f64),
            a.impact(0.0, "no time estimate: the risk is an out-of-memory error or allocator retries, not lost time"),
            0.8,
            vec![Evidence { what: "peak Total Allocated of the caching allocator".into(), steps: Vec::new(), events: vec!["[memory]".into()], count: None }],
            MEMORY_PRESSURE_FIX,
        );
        f.severity = Severity::Medium;
        Some(f)
    }
}
