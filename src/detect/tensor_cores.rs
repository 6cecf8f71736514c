//! fp32 GEMM and convolution on SIMT cores of a GPU that has tensor cores.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::kernels::KernelNames;
use crate::model::{EventKind, Trace};

pub struct NoTensorCores;

/// SIMT fp32 GEMM/convolution share of kernel time from which the finding is raised.
const SHARE: f64 = 0.1;

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

const NO_TENSOR_CORES_FIX: Fix = Fix {
    summary: "Run matrix math on tensor cores: mixed precision (bf16/fp16 autocast), or at least TF32 for fp32.",
    snippet: "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\nwith torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(x).loss",
};

impl Detector for NoTensorCores {
    fn fixes(&self) -> &'static [Fix] {
        &[NO_TENSOR_CORES_FIX]
    }

    fn id(&self) -> &'static str {
        "fp32-without-tensor-cores"
    }

    fn title(&self) -> &'static str {
        "fp32 GEMM/convolution on SIMT cores of a tensor-core GPU"
    }

    fn threshold(&self) -> &'static str {
        "SIMT fp32 GEMM/convolution kernels (sgemm, scudnn, implicit_convolve_sgemm, cutlass simt, ROCm Cijk _SB_) above 10% of kernel time on a GPU of compute capability 7.0 or later (the TensorBoard plugin's tensor-core rule)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let device = has_tensor_cores(t)?;
        let e = &t.events;
        let mut simt_ns = 0i64;
        let mut kernel_ns = 0i64;
        let mut names: Vec<(String, i64)> = Vec::new();
        let mut kernel_names = KernelNames::default();
        for i in 0..e.len() {
            if e.kind[i] != EventKind::GpuKernel || a.steady_step_at(e.start[i]).is_none() {
                continue;
            }
            kernel_ns += e.dur[i];
            if kernel_names.of_event(t, i).simt_fp32 {
                let name = t.name_of(i);
                simt_ns += e.dur[i];
                match names.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 += e.dur[i],
                    None => names.push((name.to_string(), e.dur[i])),
                }
            }
        }
        if kernel_ns == 0 || (simt_ns as f64) < SHARE * kernel_ns as f64 {
            return None;
        }
        names.sort_by_key(|n| std::cmp::Reverse(n.1));
        let steps = a.steady.len().max(1) as f64;
        let impact = a.impact(
            simt_ns as f64 / steps / 2.0,
            "half the SIMT fp32 GEMM/convolution time per steady-state step: TF32 or bf16/fp16 autocast runs these at least twice as fast on tensor cores",
        );
        Some(finding(
            self,
            format!(
                "{:.0}% of kernel time ({:.2} ms per step) is fp32 GEMM/convolution on SIMT cores of {device}",
                100.0 * simt_ns as f64 / kernel_ns as f64,
                simt_ns as f64 / steps / 1e6
            ),
            impact,
            0.7,
            vec![Evidence {
                what: "SIMT fp32 kernels, by total time".into(),
                steps: a.steady_numbers(),
                events: names.into_iter().take(5).map(|(n, _)| n).collect(),
                count: None,
            }],
            NO_TENSOR_CORES_FIX,
        ))
    }
}
