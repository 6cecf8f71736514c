//! The GPUs the generator can imitate: their properties and the kernel names each generation
//! shows (learnt from the shared real traces), and how fast they run the same work.

/// A GPU model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpu {
    V100,
    T4,
    A100,
    Rtx4090,
    H100,
    Mi300x,
    /// Blackwell: cuDNN 9's `sm100` convolutions, cuBLASLt's `nvjet` GEMMs, cuDNN's fused
    /// attention: names no other generation here shows (the held-out GPU of the window model).
    B200,
}

/// Kernel names for one GPU in its usual precision.
pub struct Kernels {
    pub conv: &'static str,
    pub conv_dgrad: &'static str,
    pub conv_wgrad: &'static str,
    pub gemm: &'static str,
    pub attention: &'static str,
    pub batch_norm: &'static str,
    pub layer_norm: &'static str,
}

/// fp32 GEMM/convolution on SIMT cores: what a model without autocast runs (every generation but
/// the B200, which has its own, [`Gpu::simt`]).
const SIMT_CONV: &str = "void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)";
const SIMT_GEMM: &str = "volta_sgemm_128x64_tn";
pub const ELEMENTWISE: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
pub const ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3>)";
pub const GELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)";
/// PyTorch's own depthwise convolution kernels (cuDNN does not run them in these traces).
pub const DEPTHWISE: &str = "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, c10::Half, int>(at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half const, 1ul, at::DefaultPtrTraits, int>, bool, int, int, int, int, int, int, int, int, int, int, int, int, int)";
pub const DEPTHWISE_DGRAD: &str = "void at::native::(anonymous namespace)::conv_depthwise2d_backward_kernel<1, 1, c10::Half, int>(at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, int, int, int, int, int, int, int, int, int, int, int, int, int)";
pub const DEPTHWISE_WGRAD: &str = "void at::native::(anonymous namespace)::conv_depthwise2d_grad_weight_kernel<c10::Half, int>(at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half const, 4ul, at::DefaultPtrTraits, int>, at::GenericPackedTensorAccessor<c10::Half, 4ul, at::DefaultPtrTraits, int>, int, int, int, int, int, int, int, int, int, int, int)";
pub const SILU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)";
pub const UPSAMPLE: &str = "void at::native::(anonymous namespace)::upsample_nearest2d_out_frame<c10::Half, &at::native::nearest_idx>(c10::Half const*, c10::Half*, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, float, float)";
pub const CONCAT: &str = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)";
/// A dtype-converting copy (autocast's weight casts).
pub const CAST: &str = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)";
pub const OPTIMIZER: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3>, float*, double, double, double, bool, bool, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 3>, float*, double, double, double, bool, bool, bool, float*, float*)";

impl Gpu {
    pub const ALL: [Gpu; 7] = [
        Gpu::V100,
        Gpu::T4,
        Gpu::A100,
        Gpu::Rtx4090,
        Gpu::H100,
        Gpu::Mi300x,
        Gpu::B200,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Gpu::V100 => "v100",
            Gpu::T4 => "t4",
            Gpu::A100 => "a100",
            Gpu::Rtx4090 => "rtx4090",
            Gpu::H100 => "h100",
            Gpu::Mi300x => "mi300x",
            Gpu::B200 => "b200",
        }
    }

    /// `deviceProperties` name, compute capability (major, minor), memory in GiB, SMs.
    pub fn properties(self) -> (&'static str, i64, i64, u64, i64) {
        match self {
            Gpu::V100 => ("Tesla V100-SXM2-32GB", 7, 0, 32, 80),
            Gpu::T4 => ("Tesla T4", 7, 5, 16, 40),
            Gpu::A100 => ("NVIDIA A100-SXM4-80GB", 8, 0, 80, 108),
            Gpu::Rtx4090 => ("NVIDIA GeForce RTX 4090", 8, 9, 24, 128),
            Gpu::H100 => ("NVIDIA H100 80GB HBM3", 9, 0, 80, 132),
            Gpu::Mi300x => ("AMD Instinct MI300X", 9, 4, 192, 304),
            Gpu::B200 => ("NVIDIA B200", 10, 0, 180, 148),
        }
    }

    /// Time of the same mixed-precision work relative to an A100.
    pub fn slowdown(self) -> f64 {
        match self {
            Gpu::V100 => 2.2,
            Gpu::T4 => 4.5,
            Gpu::A100 => 1.0,
            Gpu::Rtx4090 => 1.1,
            Gpu::H100 => 0.55,
            Gpu::Mi300x => 0.8,
            Gpu::B200 => 0.35,
        }
    }

    /// The launch call's name on this vendor's runtime.
    pub fn launch(self) -> &'static str {
        match self {
            Gpu::Mi300x => "hipLaunchKernel",
            _ => "cudaLaunchKernel",
        }
    }

    pub fn runtime_prefix(self) -> &'static str {
        match self {
            Gpu::Mi300x => "hip",
            _ => "cuda",
        }
    }

    /// Tensor-core kernel names of this generation, as the shared traces show them.
    pub fn kernels(self) -> Kernels {
        match self {
            Gpu::V100 => Kernels {
                conv: "volta_fp16_s884cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                conv_dgrad: "volta_fp16_s884cudnn_fp16_128x128_ldg8_dgrad_f2f_exp_small_nhwc_tt_v1",
                conv_wgrad: "volta_fp16_s884cudnn_fp16_128x128_ldg8_wgrad_idx_exp_interior_nhwc_nt_v1",
                gemm: "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_tn",
                attention: "fmha_cutlassF_f16_aligned_64x64_rf_sm70(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm70, true, 64, 64, 64, true, true>::Params)",
                batch_norm: "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, int, 512, true, 1, true>(cudnnTensorStruct, __half const*, cudnnTensorStruct, __half*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
            },
            Gpu::T4 => Kernels {
                conv: "turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                conv_dgrad: "turing_fp16_s1688cudnn_fp16_128x128_ldg8_dgrad_f2f_exp_small_nhwc_tt_v1",
                conv_wgrad: "turing_fp16_s1688cudnn_fp16_128x128_ldg8_wgrad_idx_exp_interior_nhwc_nt_v1",
                gemm: "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
                attention: "fmha_cutlassF_f16_aligned_64x64_rf_sm75(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm75, true, 64, 64, 64, true, true>::Params)",
                batch_norm: "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, int, 512, true, 1, true>(cudnnTensorStruct, __half const*, cudnnTensorStruct, __half*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
            },
            Gpu::A100 | Gpu::Rtx4090 => Kernels {
                conv: "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
                conv_dgrad: "sm80_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
                conv_wgrad: "sm80_xmma_wgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
                gemm: "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn",
                attention: "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
                batch_norm: "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, int, 512, true, 1, true>(cudnnTensorStruct, __half const*, cudnnTensorStruct, __half*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
            },
            Gpu::H100 => Kernels {
                conv: "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
                conv_dgrad: "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
                conv_wgrad: "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
                gemm: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                attention: "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
                batch_norm: "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, int, 512, true, 1, true>(cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
            },
            Gpu::B200 => Kernels {
                conv: "sm100_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x64_cluster2x1x1_execute_kernel__5x_cudnn",
                conv_dgrad: "sm100_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x64_cluster2x1x1_execute_kernel__5x_cudnn",
                conv_wgrad: "sm100_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x64_cluster2x1x1_execute_kernel__5x_cudnn",
                gemm: "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT",
                attention: "cudnn_generated_fort_native_sdpa_sm100_flash_fprop_f16_knob_7_128x128x128_4x1x1_kernel0_0",
                batch_norm: "void cudnn::ops::nhwc_batch_norm_fwd_kernel<__nv_bfloat16, float, 256, true>(cudnn::ops::NhwcBatchNormFwdParams)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
            },
            Gpu::Mi300x => Kernels {
                conv: "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64",
                conv_dgrad: "igemm_bwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x256x32_wt32x32x8_ws1x2_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x1x4_1x4x1x64",
                conv_wgrad: "igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt256x128x32_wt32x32x8_ws2x1_wr2x2_ta1x4x1x8_1x8x1x32_tb1x4x1x4_1x8x1x32",
                gemm: "Cijk_Alik_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3",
                attention: "void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t> > > >(...)",
                batch_norm: "void at::native::batch_norm_collect_statistics_channels_last_kernel<c10::BFloat16, float, float, 4>(c10::BFloat16 const*, float*, float*, float volatile*, int*, int, int, float)",
                layer_norm: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
            },
        }
    }

    /// The gradient all-reduce kernel of data-parallel training, as the shared traces show it:
    /// NCCL 2.1x's per-collective names on Volta and Turing, 2.19+'s `ncclDevKernel_` ones
    /// later, RCCL's generic kernel on ROCm.
    pub fn all_reduce_kernel(self) -> &'static str {
        match self {
            Gpu::V100 | Gpu::T4 => "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            Gpu::A100 | Gpu::Rtx4090 | Gpu::H100 | Gpu::B200 => {
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
            }
            Gpu::Mi300x => "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
        }
    }

    /// Ring all-reduce bus bandwidth among eight of these GPUs in one node, GB/s (NVLink or
    /// Infinity Fabric; PCIe for the T4 and the RTX 4090).
    pub fn bus_gbps(self) -> f64 {
        match self {
            Gpu::V100 => 130.0,
            Gpu::T4 => 10.0,
            Gpu::A100 => 230.0,
            Gpu::Rtx4090 => 12.0,
            Gpu::H100 => 360.0,
            Gpu::Mi300x => 300.0,
            Gpu::B200 => 720.0,
        }
    }

    /// The fp32 SIMT convolution and GEMM kernels of this generation: cuDNN 9's precompiled
    /// engine and cutlass on the B200, cuDNN's and cuBLAS's older ones elsewhere.
    pub fn simt(self) -> (&'static str, &'static str) {
        match self {
            Gpu::B200 => (
                "void cudnn::engines_precompiled::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
                "cutlass_80_simt_sgemm_256x128_8x4_nn_align1",
            ),
            _ => (SIMT_CONV, SIMT_GEMM),
        }
    }

    pub fn parse(id: &str) -> Option<Gpu> {
        Gpu::ALL.into_iter().find(|g| g.id() == id)
    }
}
