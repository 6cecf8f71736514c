//! fp32 GEMM and convolution on SIMT cores of a GPU that has tensor cores.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::{EventKind, Trace};

pub struct NoTensorCores;

/// SIMT fp32 GEMM/convolution share of kernel time from which the finding is raised.
const SHARE: f64 = 0.1;

/// Kernel-name marks of tensor-core (or matrix-core) kernels: Volta to Blackwell HMMA/xmma
/// names, Hopper wgmma, cutlass tensor-op, flash/fused attention, ROCm MFMA.
const TENSOR_CORE_MARKS: [&str; 14] = [
    "xmma", "wgmma", "hmma", "tensorop", "s884", "s1688", "s16816", "h884", "h1688", "h16816",
    "fmha", "flash", "mfma", "_mma",
];

/// Kernel-name marks of fp32 SIMT GEMM and convolution kernels (cuBLAS/cuDNN/cutlass, ROCm).
const SIMT_MARKS: [&str; 6] = [
    "sgemm",
    "scudnn",
    "implicit_convolve_sgemm",
    "gemmsn",
    "simt",
    "_sb_",
];

/// Whether a kernel is an fp32 GEMM/convolution on SIMT cores.
pub fn is_simt_fp32(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SIMT_MARKS.iter().any(|m| lower.contains(m))
        && !TENSOR_CORE_MARKS.iter().any(|m| lower.contains(m))
        && (!lower.contains("cijk_") || lower.contains("_sb_"))
}

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

impl Detector for NoTensorCores {
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
        for i in 0..e.len() {
            if e.kind[i] != EventKind::GpuKernel || a.steady_step_at(e.start[i]).is_none() {
                continue;
            }
            kernel_ns += e.dur[i];
            let name = t.name_of(i);
            if is_simt_fp32(name) {
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
            Fix {
                summary: "Run matrix math on tensor cores: mixed precision (bf16/fp16 autocast), or at least TF32 for fp32.",
                snippet: "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\nwith torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(x).loss",
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::is_simt_fp32;

    #[test]
    fn simt_and_tensor_core_kernels_are_told_apart() {
        for simt in [
            "volta_sgemm_128x64_nn",
            "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",
            "void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>(int)",
            "cutlass_80_simt_sgemm_128x128_8x4_nn_align1",
            "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0",
        ] {
            assert!(is_simt_fp32(simt), "{simt}");
        }
        for tc in [
            "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)",
            "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1",
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        ] {
            assert!(!is_simt_fp32(tc), "{tc}");
        }
    }
}
