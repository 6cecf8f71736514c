//! Inductor's Triton kernels as PyTorch (2.1 on) records each launch: an op named the kernel
//! (`triton_poi_…`, `triton_red_…`, `triton_per_…`; `kernel_backend: triton`) whose
//! `Input Dims` are the kernel's buffers, then its element counts (`xnumel`, `rnumel`) as
//! scalars. Bytes: each buffer read or written once (an in-place `in_out_ptr` counted once: a
//! lower bound). FLOPs: one per element of the largest buffer (the iteration space), as for the
//! element-wise ops. A template (`triton_tem_…`) has none: its GEMM's operands are not told
//! apart from its epilogue's buffers.

use super::{Args, Cost, Dtype, Family};
use crate::model::kernels::{inductor, Compiled};

/// The cost of Inductor kernel `name` from its op's `Input Dims` and `Input type` text; `None`
/// for any other name, a template, or buffers of no known dtype.
pub(super) fn cost(name: &str, dims: &str, types: Option<&str>) -> Option<Cost> {
    let (class, _) = inductor(name)?;
    (class != Compiled::Template).then_some(())?;
    let a = Args::parse(dims, types, None)?;
    let elements = (0..a.dims.len())
        .filter(|&i| a.bytes(i) > 0.0)
        .filter_map(|i| a.shape(i).map(super::numel))
        .fold(0.0, f64::max);
    let bytes = a.all_bytes();
    let dtype = serde_json::from_str::<Vec<String>>(types?)
        .ok()?
        .iter()
        .find_map(|t| Dtype::of(t))?;
    (bytes > 0.0 && bytes.is_finite()).then_some(Cost {
        flops: elements,
        bytes,
        family: Family::ElementWise,
        dtype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointwise_kernel_moves_its_buffers_once() {
        // TraceLens's compiled trace: SiLU-and-multiply in place over [8, 4096, 8192], reading
        // the GEMM's [32768, 8192] output; then xnumel.
        let c = cost(
            "triton_poi_fused__unsafe_view_mul_silu_2",
            "[[8, 4096, 8192], [32768, 8192], []]",
            Some(r#"["c10::BFloat16", "c10::BFloat16", "Scalar"]"#),
        )
        .expect("a cost");
        let elements = 8.0 * 4096.0 * 8192.0;
        assert_eq!((c.flops, c.bytes), (elements, 2.0 * elements * 2.0));
        assert_eq!((c.family, c.dtype), (Family::ElementWise, Dtype::Bf16));
        assert_eq!(
            cost(
                "triton_poi_fused_0",
                "[[], []]",
                Some(r#"["Scalar", "Scalar"]"#)
            ),
            None
        );
        assert_eq!(
            cost("aten::add", "[[4], [4]]", Some(r#"["float", "float"]"#)),
            None
        );
    }
}
