//! Unit tests of `attention`.

use super::*;
use crate::window::generated_trace;

/// The GPU work under CPU event `i` as its definition reads: each event of its track that
/// starts before `i` ends, from `i` on, looked up one by one.
fn by_definition(t: &Trace, i: usize) -> Vec<u32> {
    let e = &t.events;
    let last = t.tracks[e.track[i] as usize].events.end as usize;
    (i..last)
        .take_while(|&j| e.start[j] < e.end(i))
        .flat_map(|j| t.launches.iter().filter(move |l| l.launch as usize == j))
        .map(|l| l.gpu)
        .collect()
}

#[test]
fn what_kernels_and_ops_are_to_an_attention_block() {
    let role = |name: &str| kernel_role(KernelTraits::of(name), name);
    assert_eq!(
        role("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1"),
        Role::Gemm
    );
    assert_eq!(
        role("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"),
        Role::Gemm
    );
    assert_eq!(
        role("void cunn_SoftMaxForward<8, float, float, float, Epilogue>(float*)"),
        Role::Softmax
    );
    assert_eq!(
        role("void (anonymous namespace)::softmax_warp_backward<float, float>(float*)"),
        Role::Outside
    );
    assert_eq!(
        role("cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_kernel0_0"),
        Role::Outside
    );
    assert_eq!(
        role("void at::native::vectorized_layer_norm_kernel<float, float>(int)"),
        Role::Outside
    );
    assert_eq!(role("void at::native::distribution_elementwise_grid_stride_kernel<float, 4, normal_kernel>(int)"), Role::Between);
    assert_eq!(op_role("aten::_safe_softmax"), Role::Softmax);
    assert_eq!(op_role("aten::log_softmax"), Role::Outside);
    assert_eq!(op_role("aten::_softmax_backward_data"), Role::Outside);
    assert_eq!(op_role("aten::masked_fill"), Role::Between);
    assert_eq!(op_role("aten::linear"), Role::Outside);
    assert_eq!(first_rank("[[8, 12, 197, 197], []]"), Some(4));
    assert_eq!(first_rank("[[], [3]]"), Some(0));
    assert_eq!(first_rank("[]"), None);
}

#[test]
fn the_gpu_work_under_each_cpu_event_is_what_it_and_its_callees_launched() {
    let t = generated_trace();
    let by = launched_by(&t);
    let mut launching = 0;
    for i in (0..t.events.len()).filter(|&i| !t.tracks[t.events.track[i] as usize].gpu) {
        let expected = by_definition(&t, i);
        launching += usize::from(!expected.is_empty());
        assert_eq!(gpu_under(&t, &by, i), expected, "event {i}");
    }
    assert!(launching > 100, "{launching} CPU events launch GPU work");
}
