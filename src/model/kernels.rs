//! What a kernel's name says: fp32 on SIMT cores or tensor cores, a layout conversion, a
//! convolution, element-wise work, an Inductor Triton kernel's class and fused ops. One place for
//! the spellings of every vendor and generation, read by the detectors and the window features.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

use super::patterns::Patterns;
use super::{StrId, Trace};

/// Kernel-name marks of tensor-core (or matrix-core) kernels: Volta to Blackwell HMMA/xmma
/// names, Hopper wgmma, cutlass tensor-op, flash/fused attention, ROCm MFMA.
const TENSOR_CORE_MARKS: [&str; 14] = [
    "xmma", "wgmma", "hmma", "tensorop", "s884", "s1688", "s16816", "h884", "h1688", "h16816",
    "fmha", "flash", "mfma", "_mma",
];

/// Kernel-name marks of fp32 SIMT GEMM and convolution kernels (cuBLAS/cuDNN/cutlass, ROCm).
const SIMT_MARKS: [&str; 7] = [
    "sgemm",
    "scudnn",
    "implicit_convolve_sgemm",
    "gemmsn",
    "simt",
    "_sb_",
    FFMA,
];

/// fp32 fused multiply-add on the SIMT cores: cuBLAS and cuDNN name their `xmma` kernels that
/// run fp32 without tensor cores so (`sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_…_ffma_…`), and it
/// outweighs every tensor-core mark beside it (`xmma`).
const FFMA: &str = "ffma";

static SIMT: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&SIMT_MARKS));
static TENSOR_CORES: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&TENSOR_CORE_MARKS));
static ROCM_GEMM: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&["cijk_"]));
static ROCM_SIMT: LazyLock<Patterns> = LazyLock::new(|| Patterns::new(&["_sb_"]));
static LAYOUT: LazyLock<Patterns> = LazyLock::new(|| {
    Patterns::new(&[
        "nchwtonhwc",
        "nhwctonchw",
        "batched_transpose",
        "transpose_nchw",
        "transpose_cnhw",
        "nchw2nhwc",
        "nhwc2nchw",
    ])
});
static CONVOLUTION: LazyLock<Patterns> = LazyLock::new(|| {
    Patterns::new(&[
        "conv",
        "scudnn",
        "implicit_convolve",
        "igemm_fwd",
        "igemm_bwd",
        "igemm_wrw",
        "fprop",
        "dgrad",
        "wgrad",
        "winograd",
    ])
});
static ELEMENTWISE: LazyLock<Patterns> =
    LazyLock::new(|| Patterns::new(&["elementwise_kernel", "reduce_kernel"]));
static ATTENTION: LazyLock<Patterns> =
    LazyLock::new(|| Patterns::new(&["flash", "fmha", "attention", "sdpa", "softmax"]));
/// Fused attention kernels: flash, memory-efficient, fmha (CUDA, CK and aiter on ROCm), paged,
/// cuDNN's SDPA (`cudnn_generated_fort_native_sdpa_…`).
static FUSED_ATTENTION: LazyLock<Patterns> = LazyLock::new(|| {
    Patterns::new(&["flash", "fmha", "attention", "sdpa", "attn_fwd", "attn_bwd"])
});
/// GEMM and batched-matmul kernels: cuBLAS/cuBLASLt (`gemm`, `xmma`), cutlass, Triton
/// `mm`/`bmm` templates, rocBLAS/hipBLASLt (`Cijk_`).
static MATMUL: LazyLock<Patterns> = LazyLock::new(|| {
    Patterns::new(&[
        "gemm",
        "cijk_",
        "cutlass",
        "xmma",
        "wgmma",
        "bmm",
        "matmul",
        "triton_mm",
        "gemv",
    ])
});

/// Whether a kernel is an fp32 GEMM/convolution on SIMT cores.
pub(crate) fn is_simt_fp32(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SIMT.any_in(&lower)
        && (lower.contains(FFMA) || !TENSOR_CORES.any_in(&lower))
        && !is_rocm_matrix_core(&lower)
        && (!ROCM_GEMM.any_in(&lower) || ROCM_SIMT.any_in(&lower))
}

/// Tensile kernels that name a matrix-core instruction shape (`_MI16x16x1_`, `_MI32x32x8x1`)
/// run on AMD's matrix cores, fp32 included.
fn is_rocm_matrix_core(lower: &str) -> bool {
    lower.match_indices("_mi").any(|(k, _)| {
        lower[k + 3..]
            .split('x')
            .next()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Layout conversion kernels (NCHW↔NHWC), given the lower-cased name.
pub fn is_layout(lower: &str) -> bool {
    LAYOUT.any_in(lower)
}

/// Convolution kernels, given the lower-cased name.
pub fn is_convolution(lower: &str) -> bool {
    CONVOLUTION.any_in(lower)
}

/// Element-wise (and small reduction) kernels.
pub fn is_elementwise(name: &str) -> bool {
    ELEMENTWISE.any_in(name) || name.starts_with("triton_poi")
}

/// Attention kernels (fused flash / memory-efficient ones and softmax).
pub fn is_attention(lower: &str) -> bool {
    ATTENTION.any_in(lower)
}

/// Fused attention kernels (not a bare softmax), given the lower-cased name.
pub(crate) fn is_fused_attention(lower: &str) -> bool {
    FUSED_ATTENTION.any_in(lower) && !lower.contains("softmax")
}

/// GEMM and batched-matmul kernels (not convolutions), given the lower-cased name.
pub(crate) fn is_matmul(lower: &str) -> bool {
    MATMUL.any_in(lower) && !CONVOLUTION.any_in(lower) && !FUSED_ATTENTION.any_in(lower)
}

/// What Inductor's Triton kernel names say of the kernel: `triton_poi_` (pointwise),
/// `triton_red_` (a reduction looping over its axis), `triton_per_` (a persistent reduction:
/// the axis in one block), `triton_tem_` (a template: GEMM, or a convolution where the fused
/// ops say so).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiled {
    Pointwise,
    Reduction,
    PersistentReduction,
    Template,
}

impl Compiled {
    pub fn label(self) -> &'static str {
        match self {
            Compiled::Pointwise => "element-wise",
            Compiled::Reduction => "reduction",
            Compiled::PersistentReduction => "persistent reduction",
            Compiled::Template => "GEMM template",
        }
    }
}

/// An Inductor kernel's class and the ops its name says it fuses, as written (`add_mean_mul`
/// of `triton_red_fused_add_mean_mul_0`; op names hold `_` too, so they are not split); `""`
/// where the name fuses none (`triton_poi_fused_0`). `None` for any other kernel.
pub fn inductor(name: &str) -> Option<(Compiled, &str)> {
    let rest = name.strip_prefix("triton_")?;
    let (class, rest) = [
        ("poi_", Compiled::Pointwise),
        ("red_", Compiled::Reduction),
        ("per_", Compiled::PersistentReduction),
        ("tem_", Compiled::Template),
    ]
    .into_iter()
    .find_map(|(prefix, class)| rest.strip_prefix(prefix).map(|r| (class, r)))?;
    let ops = rest.strip_prefix("fused").unwrap_or(rest);
    // The trailing `_<n>` numbers kernels of the same fusion.
    let ops = ops
        .rsplit_once('_')
        .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map_or(ops, |(ops, _)| ops);
    Some((class, ops.strip_prefix('_').unwrap_or(ops)))
}

/// "Inductor reduction fusing add_mean_mul" for an Inductor kernel; `None` for any other.
pub fn compiled_label(name: &str) -> Option<String> {
    let (class, ops) = inductor(name)?;
    Some(if ops.is_empty() {
        format!("Inductor {}", class.label())
    } else {
        format!("Inductor {} fusing {ops}", class.label())
    })
}

/// What a kernel's name says, all at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KernelTraits {
    pub(crate) simt_fp32: bool,
    pub layout: bool,
    pub convolution: bool,
    pub attention: bool,
    pub elementwise: bool,
    pub matmul: bool,
    pub softmax: bool,
    pub(crate) fused_attention: bool,
}

impl KernelTraits {
    pub fn of(name: &str) -> KernelTraits {
        let lower = name.to_ascii_lowercase();
        KernelTraits {
            simt_fp32: is_simt_fp32(name),
            layout: is_layout(&lower),
            convolution: is_convolution(&lower),
            attention: is_attention(&lower),
            elementwise: is_elementwise(name),
            matmul: is_matmul(&lower)
                || inductor(name).is_some_and(|(class, ops)| {
                    class == Compiled::Template && !is_convolution(ops)
                }),
            softmax: lower.contains("softmax"),
            fused_attention: is_fused_attention(&lower),
        }
    }

    /// GEMM, batched matmul or convolution.
    pub(crate) fn matmul_conv(self) -> bool {
        self.matmul || (self.convolution && !self.layout)
    }
}

/// [`KernelTraits`] remembered per interned name: a trace repeats a few hundred kernel names
/// millions of times, so each name is read once.
#[derive(Default)]
pub(crate) struct KernelNames(FxHashMap<StrId, KernelTraits>);

impl KernelNames {
    /// The traits of event `i`'s name.
    pub(crate) fn of_event(&mut self, t: &Trace, i: usize) -> KernelTraits {
        let name = t.events.name[i];
        *self
            .0
            .entry(name)
            .or_insert_with(|| KernelTraits::of(t.strings.get(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simt_and_tensor_core_kernels_are_told_apart() {
        for simt in [
            "volta_sgemm_128x64_nn",
            "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",
            "void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>(int)",
            "cutlass_80_simt_sgemm_128x128_8x4_nn_align1",
            "Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0",
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
            "cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_32x32x16_1x1x1_3_nnn_align1_bias_f32_relu",
        ] {
            assert!(is_simt_fp32(simt), "{simt}");
        }
        for tc in [
            "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)",
            "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1",
            "Cijk_Ailk_Bljk_SB_MT64x64x16_MI16x16x1_SN_1LDSB0",
            "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_execute_kernel__5x_cublas",
            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "volta_s884gemm_fp16_128x128_ldg8_f2f_nn",
            "turing_h1688gemm_256x128_ldg8_nn",
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        ] {
            assert!(!is_simt_fp32(tc), "{tc}");
        }
    }

    #[test]
    fn inductor_kernels_are_classed_and_named_by_the_ops_they_fuse() {
        // Names from the shared traces (TraceLens torch_compile_triton, vLLM, HTA) and
        // Inductor's template kernels.
        let cases = [
            (
                "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
                Some((Compiled::Reduction, "_unsafe_view_add_mean_mul_pow_rsqrt")),
            ),
            (
                "triton_poi_fused_constant_pad_nd_moe_forward_0",
                Some((Compiled::Pointwise, "constant_pad_nd_moe_forward")),
            ),
            ("triton_poi_fused_0", Some((Compiled::Pointwise, ""))),
            (
                "triton_per_fused_native_layer_norm_3",
                Some((Compiled::PersistentReduction, "native_layer_norm")),
            ),
            (
                "triton_tem_fused_addmm_relu_5",
                Some((Compiled::Template, "addmm_relu")),
            ),
            ("triton__0d1d2d3d", None),
            ("triton_mm", None),
            ("volta_sgemm_128x64_nn", None),
        ];
        for (name, want) in cases {
            assert_eq!(inductor(name), want, "{name}");
        }
        assert_eq!(
            compiled_label("triton_red_fused_add_mean_mul_pow_rsqrt_0").as_deref(),
            Some("Inductor reduction fusing add_mean_mul_pow_rsqrt")
        );
        assert_eq!(
            compiled_label("triton_poi_fused_0").as_deref(),
            Some("Inductor element-wise")
        );
        // A GEMM template is matrix work; a convolution template is a convolution.
        assert!(KernelTraits::of("triton_tem_fused_addmm_relu_5").matmul);
        let conv = KernelTraits::of("triton_tem_fused_convolution_2");
        assert!(!conv.matmul && conv.convolution && conv.matmul_conv());
        assert!(!KernelTraits::of("triton_red_fused_sum_0").matmul);
    }

    #[test]
    fn layout_and_convolution_kernels_are_recognised() {
        assert!(is_layout(
            &"void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>"
                .to_ascii_lowercase()
        ));
        assert!(is_layout("batched_transpose_32x32_half"));
        assert!(is_layout(
            &"transpose_NCHW2CNHW_V2_2D_WG_off64".to_ascii_lowercase()
        ));
        assert!(!is_layout("volta_sgemm_128x64_nn"));
        assert!(is_convolution(
            "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1"
        ));
        assert!(is_convolution(
            "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32"
        ));
        assert!(!is_convolution(
            "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"
        ));
    }
}
