//! What an op or a kernel is to an attention block (its role), by its name alone: the score
//! and output GEMMs, the softmax, what may sit between them, and what cannot be inside one block.

use crate::model::kernels::KernelTraits;

/// Score and output GEMM ops (after `aten::`).
const GEMM_OPS: [&str; 5] = ["bmm", "matmul", "baddbmm", "einsum", "mm"];
/// Softmax ops (after `aten::`); any other op named softmax (log-softmax, a backward) is not one.
const SOFTMAX_OPS: [&str; 4] = ["softmax", "_softmax", "_safe_softmax", "_masked_softmax"];
/// Ops that cannot be inside one attention block, by a part of their name: convolutions,
/// norms, projections, activations, embeddings, pooling, recurrent layers, routing.
const OUTSIDE_OPS: [&str; 17] = [
    "conv",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "rms_norm",
    "linear",
    "addmm",
    "gelu",
    "relu",
    "silu",
    "embedding",
    "pool",
    "lstm",
    "gru",
    "topk",
    "attention",
];
/// What an op or a piece of GPU work is to an attention block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Gemm,
    /// A softmax over an input of 3 or more dimensions (or of unknown shape).
    Softmax,
    /// What cannot be inside one attention block.
    Outside,
    /// What may sit between its GEMMs and its softmax.
    Between,
}

/// The role of an op by its name (with or without `aten::`).
pub(super) fn op_role(name: &str) -> Role {
    let lower = name.to_ascii_lowercase();
    let bare = lower.strip_prefix("aten::").unwrap_or(&lower);
    if GEMM_OPS.contains(&bare) {
        Role::Gemm
    } else if SOFTMAX_OPS.contains(&bare) {
        Role::Softmax
    } else if bare.contains("softmax") || OUTSIDE_OPS.iter().any(|o| bare.contains(o)) {
        Role::Outside
    } else {
        Role::Between
    }
}

/// The role of a kernel by what its name says.
pub(super) fn kernel_role(k: KernelTraits, name: &str) -> Role {
    let lower = name.to_ascii_lowercase();
    let backward = lower.contains("backward") || lower.contains("bwd");
    if k.matmul {
        Role::Gemm
    } else if k.softmax && !backward {
        Role::Softmax
    } else if k.softmax
        || k.fused_attention
        || (k.convolution && !k.layout)
        || is_norm(&lower)
        || ["gelu", "silu"].iter().any(|a| lower.contains(a))
    {
        Role::Outside
    } else {
        Role::Between
    }
}

/// Normalization kernels (layer, batch, group, RMS), not random `normal` fills.
fn is_norm(lower: &str) -> bool {
    lower
        .match_indices("norm")
        .any(|(k, _)| !lower[k..].starts_with("normal"))
}
