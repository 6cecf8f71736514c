//! Device allocations that stall the GPU in steady state (allocator churn), and memory pressure.

use super::contract::{
    finding, judge, part_checks, About, Detector, Evidence, Fix, Gate, Note, Observer, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{Ledger, Part};
use crate::model::{EventKind, RuntimeClass, NONE};

pub struct AllocatorChurn;
pub(crate) struct MemoryPressure;

/// GPU idle during device malloc/free calls from 2% of the step: a cudaMalloc that the GPU
/// never waits for costs nothing, one that drains it (cudaFree synchronizes) does.
const GATE: Gate = Gate {
    quantity: "GPU idle during device malloc/free calls, % of the step",
    threshold: 2.0,
};
/// How a finding's time is counted.
const COST: &str =
    "GPU idle while the host is inside device malloc/free calls, mean over steady-state steps";
/// The TensorBoard plugin's threshold: peak memory above 90% of the device's memory (an
/// observer's gate: it makes a note, never a finding).
const PRESSURE_GATE: Gate = Gate {
    quantity: "peak allocated memory, % of the device's memory",
    threshold: 90.0,
};
/// The same, as a share.
const PRESSURE: f64 = PRESSURE_GATE.threshold / 100.0;

const FIX_ALLOCATOR_CHURN: Fix = Fix {
    summary: "Let the caching allocator keep memory: remove torch.cuda.empty_cache() from the loop, do not set PYTORCH_NO_CUDA_MEMORY_CACHING, and keep tensor shapes stable (pad variable-size batches).",
    snippet: "# remove from the training loop:\n# torch.cuda.empty_cache()\n# and check: os.environ.get(\"PYTORCH_NO_CUDA_MEMORY_CACHING\") is None",
    terms: &["empty_cache", "PYTORCH_NO_CUDA_MEMORY_CACHING", "shapes stable", "pad"],
};

const ALLOCATOR_CHURN_ABOUT: About = About {
    id: "allocator-churn",
    title: "Device memory allocated and freed every step, stalling the GPU",
    rule: "GPU idle while the host is inside device malloc/free calls (cudaMalloc, cudaFree, hipMalloc, hipFree) at least {0}% of the step, in at least half of the steady steps (the caching allocator should serve them after warm-up)",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_ALLOCATOR_CHURN),
};

impl Detector for AllocatorChurn {
    fn about(&self) -> &'static About {
        &ALLOCATOR_CHURN_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let checks = part_checks(a, &[Part::IdleAllocator], |_| true);
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let t = a.trace;
        let e = &t.events;
        let calls = o.events_where(a, |i| {
            e.kind[i] == EventKind::RuntimeCall
                && e.detail[i] != NONE
                && matches!(
                    t.runtime_class(i),
                    RuntimeClass::Malloc | RuntimeClass::Free
                )
        });
        let count = calls.len();
        let mallocs = a.steady_mean(|m| m.mallocs as f64);
        let frees = a.steady_mean(|m| m.frees as f64);
        let summary = format!(
            "{mallocs:.0} device mallocs and {frees:.0} frees per step; the GPU is idle {:.2} ms per step ({:.1}%) while they run",
            o.impact.ms_per_step, o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: "the longest device allocation calls in the steps where the GPU waits on them"
                .into(),
            steps: o.held.clone(),
            events: a.longest_refs(&calls, 3),
            count: Some(count as u64),
            sources: calls,
        }];
        finding(self, o, summary, evidence, FIX_ALLOCATOR_CHURN)
    }
}

const MEMORY_PRESSURE_ABOUT: About = About {
    id: "memory-pressure",
    title: "Peak memory close to the device's capacity",
    rule: "peak allocated memory above {0}% of the device's memory (the TensorBoard plugin's rule); needs profile_memory=True",
    gates: &[PRESSURE_GATE],
    fixes: &[],
};

impl Observer for MemoryPressure {
    fn about(&self) -> &'static About {
        &MEMORY_PRESSURE_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let (device, share) = a
            .memory
            .devices
            .iter()
            .filter_map(|d| d.peak_share().map(|s| (d, s)))
            .max_by(|x, y| x.1.total_cmp(&y.1))?;
        let peak = device.peak.as_ref()?.allocated;
        let capacity = device.capacity?;
        (share > PRESSURE).then(|| self.about().note(format!(
                "peak allocated memory on {} is {:.1} GiB, {:.0}% of the device's {:.1} GiB; an out-of-memory error or allocator retries are near (activation checkpointing or a smaller micro-batch lower it)",
                device.device.label(),
                peak as f64 / (1u64 << 30) as f64,
                100.0 * share,
                capacity as f64 / (1u64 << 30) as f64
            )))
    }
}
