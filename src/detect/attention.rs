//! Unfused attention: matmul → softmax → matmul at op level, with no fused SDPA kernel.

use rustc_hash::FxHashMap;

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::{EventKind, NONE};

pub struct UnfusedAttention;

const MATMULS: [&str; 4] = ["aten::bmm", "aten::matmul", "aten::baddbmm", "aten::einsum"];
const SOFTMAX: [&str; 2] = ["aten::softmax", "aten::_softmax"];
/// Ops that mean attention already runs fused.
const FUSED: [&str; 4] = [
    "scaled_dot_product",
    "flash_attention",
    "efficient_attention",
    "_native_multi_head_attention",
];

impl Detector for UnfusedAttention {
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
        if (0..e.len()).any(|i| ops(i) && FUSED.iter().any(|f| t.name_of(i).contains(f))) {
            return None;
        }
        // GPU time launched by each runtime call.
        let mut gpu_ns: FxHashMap<u32, i64> = FxHashMap::default();
        for l in &t.launches {
            *gpu_ns.entry(l.launch).or_default() += e.dur[l.gpu as usize];
        }
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
                    let end = e.end(i);
                    softmax_gpu += (i..track.events.end as usize)
                        .take_while(|&j| e.start[j] < end)
                        .filter_map(|j| gpu_ns.get(&(j as u32)))
                        .sum::<i64>();
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
            Fix {
                summary: "Call scaled_dot_product_attention (flash or memory-efficient kernels; nn.MultiheadAttention and timm/HF ViTs use it when enabled).",
                snippet: "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p if self.training else 0.0)",
            },
        ))
    }
}
