//! Unfused attention: matmul → softmax → matmul at op level, with no fused SDPA kernel.

use rustc_hash::FxHashMap;

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::{EventKind, NONE};

pub struct UnfusedAttention;
pub struct AttentionHotSpot;

/// Attention's share of the step's GPU time from which it is reported as the hot spot.
const HOT_SHARE: f64 = 0.2;

/// GPU time launched by each runtime call.
fn gpu_time_by_launch(t: &crate::model::Trace) -> FxHashMap<u32, i64> {
    let mut gpu_ns: FxHashMap<u32, i64> = FxHashMap::default();
    for l in &t.launches {
        *gpu_ns.entry(l.launch).or_default() += t.events.dur[l.gpu as usize];
    }
    gpu_ns
}

/// GPU time launched by CPU event `i` and everything nested in it.
fn gpu_time_under(t: &crate::model::Trace, gpu_ns: &FxHashMap<u32, i64>, i: usize) -> i64 {
    let e = &t.events;
    let end = e.end(i);
    let last = t.tracks[e.track[i] as usize].events.end as usize;
    (i..last)
        .take_while(|&j| e.start[j] < end)
        .filter_map(|j| gpu_ns.get(&(j as u32)))
        .sum()
}

const MATMULS: [&str; 4] = ["aten::bmm", "aten::matmul", "aten::baddbmm", "aten::einsum"];
const SOFTMAX: [&str; 2] = ["aten::softmax", "aten::_softmax"];
/// Ops that mean attention already runs fused.
const FUSED: [&str; 4] = [
    "scaled_dot_product",
    "flash_attention",
    "efficient_attention",
    "_native_multi_head_attention",
];

const UNFUSED_ATTENTION_FIX: Fix = Fix {
    summary: "Call scaled_dot_product_attention (flash or memory-efficient kernels; nn.MultiheadAttention and timm/HF ViTs use it when enabled).",
    snippet: "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p if self.training else 0.0)",
};

impl Detector for UnfusedAttention {
    fn fixes(&self) -> &'static [Fix] {
        &[UNFUSED_ATTENTION_FIX]
    }

    fn id(&self) -> &'static str {
        "unfused-attention"
    }

    fn title(&self) -> &'static str {
        "Attention computed as matmul → softmax → matmul"
    }

    fn threshold(&self) -> &'static str {
        "a softmax op between two matmul/bmm ops under the same parent in steady-state steps, and no scaled_dot_product_attention / flash / memory-efficient attention op in the trace"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let ops = |i: usize| matches!(e.kind[i], EventKind::CpuOp);
        // PyTorch's math fallback (`_scaled_dot_product_attention_math`) is itself unfused.
        let fused = |name: &str| FUSED.iter().any(|f| name.contains(f)) && !name.contains("_math");
        if (0..e.len()).any(|i| ops(i) && fused(t.name_of(i))) {
            return None;
        }
        let gpu_ns = gpu_time_by_launch(t);
        let mut patterns = 0u64;
        let mut softmax_gpu = 0i64;
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            // Children in order, per parent: look at each softmax's neighbours.
            let children: Vec<usize> = track
                .events
                .clone()
                .map(|i| i as usize)
                .filter(|&i| ops(i) && e.parent[i] != NONE)
                .collect();
            for (k, &i) in children.iter().enumerate() {
                if !SOFTMAX.contains(&t.name_of(i)) || a.steady_step_at(e.start[i]).is_none() {
                    continue;
                }
                let sibling = |j: &&usize| e.parent[**j] == e.parent[i];
                let before = children[..k]
                    .iter()
                    .rev()
                    .filter(sibling)
                    .take(3)
                    .any(|&j| MATMULS.contains(&t.name_of(j)));
                let after = children[k + 1..]
                    .iter()
                    .filter(sibling)
                    .take(3)
                    .any(|&j| MATMULS.contains(&t.name_of(j)));
                if before && after {
                    patterns += 1;
                    softmax_gpu += gpu_time_under(t, &gpu_ns, i);
                }
            }
        }
        if patterns == 0 {
            return None;
        }
        let steps = a.steady.len().max(1) as f64;
        let impact = a.impact(
            softmax_gpu as f64 / steps,
            "GPU time of the softmax kernels between the attention matmuls per steady-state step: a fused kernel never writes the attention matrix; the matmul time it also saves is not counted",
        );
        Some(finding(
            self,
            format!("{:.0} attention blocks per step run as separate matmul, softmax and matmul, writing the full attention matrix to memory", patterns as f64 / steps),
            impact,
            0.6,
            vec![Evidence { what: "matmul → softmax → matmul op sequences".into(), steps: a.steady_numbers(), events: vec!["aten::bmm".into(), "aten::softmax".into(), "aten::bmm".into()], count: Some(patterns) }],
            UNFUSED_ATTENTION_FIX,
        ))
    }
}

fn is_attention(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("attention") || lower.contains("attn")
}

const ATTENTION_HOT_SPOT_FIX: Fix = Fix {
    summary: "Make sure attention runs the fused SDPA kernels, and consider fewer tokens or windowed attention for high resolutions.",
    snippet: "with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):\n    out = model(x)",
};

impl Detector for AttentionHotSpot {
    fn fixes(&self) -> &'static [Fix] {
        &[ATTENTION_HOT_SPOT_FIX]
    }

    fn id(&self) -> &'static str {
        "attention-hot-spot"
    }

    fn title(&self) -> &'static str {
        "Attention is the hot spot of the step"
    }

    fn threshold(&self) -> &'static str {
        "GPU time launched under attention modules or ops (names with attention/attn) above 20% of the steady-state step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let gpu_ns = gpu_time_by_launch(t);
        let mut blocks: Vec<(String, i64)> = Vec::new();
        let mut total = 0i64;
        for i in 0..e.len() {
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                || !is_attention(t.name_of(i))
                || a.steady_step_at(e.start[i]).is_none()
            {
                continue;
            }
            let p = e.parent[i];
            if p != NONE && is_attention(t.name_of(p as usize)) {
                continue;
            }
            let ns = gpu_time_under(t, &gpu_ns, i);
            total += ns;
            let label = if p != NONE {
                format!("{} › {}", t.name_of(p as usize), t.name_of(i))
            } else {
                t.name_of(i).to_string()
            };
            match blocks.iter_mut().find(|(n, _)| *n == label) {
                Some(b) => b.1 += ns,
                None => blocks.push((label, ns)),
            }
        }
        let steps = a.steady.len().max(1) as f64;
        let per_step = total as f64 / steps;
        let share = per_step / a.step_ns().max(1.0);
        if share < HOT_SHARE {
            return None;
        }
        blocks.sort_by_key(|b| std::cmp::Reverse(b.1));
        let mut f = finding(
            self,
            format!("attention runs {:.2} ms of GPU time per step, {:.0}% of the step, in {} blocks", per_step / 1e6, 100.0 * share, blocks.len()),
            a.impact(0.0, "no time estimate: where attention dominates, gains come from a faster kernel (flash or memory-efficient SDPA), fewer tokens (larger patches, token merging) or windowed attention"),
            0.5,
            vec![Evidence {
                what: "GPU time per attention block, largest first".into(),
                steps: a.steady_numbers(),
                events: blocks.iter().take(5).map(|(n, ns)| format!("{n}: {:.3} ms", *ns as f64 / steps / 1e6)).collect(),
                count: Some(blocks.len() as u64),
            }],
            ATTENTION_HOT_SPOT_FIX,
        );
        if share >= 0.4 {
            f.severity = super::Severity::Medium;
        }
        Some(f)
    }
}
