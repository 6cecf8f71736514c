//! fp32 GEMM and convolution on SIMT cores of a GPU that has tensor cores.

use super::contract::{
    finding, judge, pct, About, Detector, Evidence, Fix, Gate, Rejected, StepCheck, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::model::kernels::KernelNames;
use crate::model::{EventKind, Trace};

pub(crate) struct NoTensorCores;

/// SIMT fp32 GEMM/convolution share of kernel time from which the finding is raised.
const GATE: Gate = Gate {
    quantity:
        "SIMT fp32 GEMM/convolution kernel time, % of the step's kernel time (collectives included)",
    threshold: 10.0,
};
/// How a finding's time is counted.
const COST: &str = "half the SIMT fp32 GEMM/convolution time per steady-state step: TF32 or bf16/fp16 autocast runs these at least twice as fast on tensor cores";

/// Whether the trace's GPU has tensor cores (compute capability 7.0 and later; AMD CDNA).
fn has_tensor_cores(t: &Trace) -> Option<String> {
    t.meta.devices.iter().find_map(|d| {
        let name = d.name.clone().unwrap_or_default();
        let nvidia = d.compute_major.is_some_and(|m| m >= 7) && !name.contains("AMD");
        let amd = name.contains("MI100")
            || name.contains("MI2")
            || name.contains("MI3")
            || name.contains("Instinct");
        (nvidia || amd).then_some(name)
    })
}

const FIX_NO_TENSOR_CORES: Fix = Fix {
    summary: "Run matrix math on tensor cores: mixed precision (bf16/fp16 autocast), or at least TF32 for fp32.",
    snippet: "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\nwith torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(x).loss",
    terms: &["autocast", "bf16", "fp16", "TF32", "allow_tf32", "mixed precision"],
};

const NO_TENSOR_CORES_ABOUT: About = About {
    id: "fp32-without-tensor-cores",
    title: "fp32 GEMM/convolution on SIMT cores of a tensor-core GPU",
    rule: "SIMT fp32 GEMM/convolution kernels (sgemm, scudnn, implicit_convolve_sgemm, cutlass simt, cuBLAS/cuDNN xmma _ffma, ROCm Cijk _SB_) at least {0}% of the step's kernel time on a GPU of compute capability 7.0 or later or an AMD Instinct, in at least half of the steady steps (the TensorBoard plugin's tensor-core rule)",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_NO_TENSOR_CORES),
};

impl Detector for NoTensorCores {
    fn about(&self) -> &'static About {
        &NO_TENSOR_CORES_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let Some(device) = has_tensor_cores(t) else {
            return Err(Rejected::NOTHING);
        };
        let e = &t.events;
        let mut names = KernelNames::default();
        let mut by_name: Vec<(usize, i64)> = Vec::new();
        let mut simt_events: Vec<usize> = Vec::new();
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (mut simt, mut kernels, mut iv) = (0i64, 0i64, Vec::new());
                for i in a.gpu_work(k) {
                    // Kernel time counts every kernel the GPU runs, collectives included.
                    if !matches!(e.kind[i], EventKind::GpuKernel | EventKind::Collective) {
                        continue;
                    }
                    kernels += e.dur[i];
                    if e.kind[i] == EventKind::GpuKernel && names.of_event(t, i).simt_fp32 {
                        simt += e.dur[i];
                        iv.push((e.start[i], e.end(i)));
                        simt_events.push(i);
                        match by_name.iter_mut().find(|(j, _)| e.name[*j] == e.name[i]) {
                            Some(entry) => entry.1 += e.dur[i],
                            None => by_name.push((i, e.dur[i])),
                        }
                    }
                }
                StepCheck {
                    step: k,
                    value: pct(simt as f64, kernels as f64),
                    claims: vec![(iv, 0.5)],
                }
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        by_name.sort_by_key(|n| std::cmp::Reverse(n.1));
        let summary = format!(
            "a median {:.0}% of kernel time is fp32 GEMM/convolution on SIMT cores of {device}; tensor cores would save about {:.2} ms per step",
            o.gate.median, o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "SIMT fp32 kernels, by total time per step".into(),
            steps: o.held.clone(),
            events: by_name
                .iter()
                .take(3)
                .map(|&(i, ns)| {
                    format!(
                        "{}: {:.3} ms per step",
                        t.name_of(i),
                        a.per_step(ns as f64) / 1e6
                    )
                })
                .collect(),
            count: Some(by_name.len() as u64),
            sources: simt_events,
        }];
        finding(self, o, summary, evidence, FIX_NO_TENSOR_CORES)
    }
}
