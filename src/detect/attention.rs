//! Unfused attention: batched matmul → softmax → batched matmul, seen in the CPU ops or, where
//! the trace has none, in the kernel names (NVIDIA and AMD spellings), with no fused attention
//! op or kernel anywhere in the trace. And attention as the step's hot spot (a note).

use super::{
    finding, judge, Analysis, Detector, Evidence, Fix, Gate, Note, Observer, StepCheck, Verdict,
};
use crate::attribution::Ledger;
use crate::model::kernels::KernelNames;
use crate::model::{EventKind, Launch, Trace, NONE};

pub struct UnfusedAttention;
pub struct AttentionHotSpot;

/// Attention's share of the step's GPU time from which it is noted as the hot spot.
const HOT_SHARE: f64 = 0.2;
/// How far (in sibling ops, or kernels on one stream) a matmul may be from the softmax.
const REACH: usize = 3;

const GATE: Gate = Gate {
    quantity:
        "matmul → softmax → matmul attention blocks per step, with no fused attention in the trace",
    threshold: 1.0,
};

const MATMULS: [&str; 5] = [
    "aten::bmm",
    "aten::matmul",
    "aten::baddbmm",
    "aten::einsum",
    "aten::mm",
];
const SOFTMAX: [&str; 2] = ["aten::softmax", "aten::_softmax"];
/// Ops that mean attention already runs fused.
const FUSED: [&str; 4] = [
    "scaled_dot_product",
    "flash_attention",
    "efficient_attention",
    "_native_multi_head_attention",
];

/// Launch links ordered by the launching call (stably: each call's GPU work stays in GPU-event
/// order), so that the GPU work under a CPU range is one contiguous run of it.
fn launched_by(t: &Trace) -> Vec<Launch> {
    let mut by = t.launches.clone();
    by.sort_by_key(|l| l.launch);
    by
}

/// GPU work launched by CPU event `i` and everything nested in it (the events of its track
/// that start before it ends).
fn gpu_under(t: &Trace, by: &[Launch], i: usize) -> Vec<u32> {
    let e = &t.events;
    let last = t.tracks[e.track[i] as usize].events.end as usize;
    let under = i + e.start[i..last].partition_point(|&s| s < e.end(i));
    let first = by.partition_point(|l| (l.launch as usize) < i);
    by[first..]
        .iter()
        .take_while(|l| (l.launch as usize) < under)
        .map(|l| l.gpu)
        .collect()
}

/// Whether attention already runs fused somewhere in the trace (an op or a kernel).
fn fused_anywhere(t: &Trace) -> bool {
    let e = &t.events;
    let mut names = KernelNames::default();
    // PyTorch's math fallback (`_scaled_dot_product_attention_math`) is itself unfused.
    let fused = of_names(t, |name| {
        FUSED.iter().any(|f| name.contains(f)) && !name.contains("_math")
    });
    (0..e.len()).any(|i| match e.kind[i] {
        EventKind::CpuOp => fused[e.name[i] as usize],
        EventKind::GpuKernel => names.of_event(t, i).fused_attention,
        _ => false,
    })
}

const FIX_UNFUSED_ATTENTION: Fix = Fix {
    summary: "Call scaled_dot_product_attention (flash or memory-efficient kernels; nn.MultiheadAttention and timm/HF ViTs use it when enabled).",
    snippet: "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p if self.training else 0.0)",
};

impl Detector for UnfusedAttention {
    fn id(&self) -> &'static str {
        "unfused-attention"
    }

    fn title(&self) -> &'static str {
        "Attention computed as matmul → softmax → matmul"
    }

    fn threshold(&self) -> &'static str {
        "a softmax between two matmuls (sibling aten::bmm/matmul/baddbmm/einsum ops, or, from kernel names alone, a GEMM kernel, a softmax kernel and a GEMM kernel within 3 kernels on one stream) in at least half of the steady steps, and no scaled_dot_product_attention / flash / memory-efficient attention op or kernel anywhere in the trace"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_UNFUSED_ATTENTION)
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        if fused_anywhere(t) {
            return Verdict::Nothing;
        }
        let by = launched_by(t);
        // Per step: blocks seen from the ops, blocks seen from the kernels, softmax GPU work.
        let n = a.steps.steps.len();
        let (mut from_ops, mut from_kernels) = (vec![0u64; n], vec![0u64; n]);
        let mut softmax: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut matmuls: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut shown: Vec<usize> = Vec::new();
        let mut sources: Vec<usize> = Vec::new();
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            let children: Vec<usize> = track
                .events
                .clone()
                .map(|i| i as usize)
                .filter(|&i| e.kind[i] == EventKind::CpuOp && e.parent[i] != NONE)
                .collect();
            for (k, &i) in children.iter().enumerate() {
                if !SOFTMAX.contains(&t.name_of(i)) {
                    continue;
                }
                let Some(step) = a.steady_step_at(e.start[i]) else {
                    continue;
                };
                let sibling = |j: &&usize| e.parent[**j] == e.parent[i];
                let is_matmul = |j: &&usize| MATMULS.contains(&t.name_of(**j));
                let before = children[..k]
                    .iter()
                    .rev()
                    .filter(sibling)
                    .take(REACH)
                    .find(is_matmul);
                let after = children[k + 1..]
                    .iter()
                    .filter(sibling)
                    .take(REACH)
                    .find(is_matmul);
                if let (Some(&x), Some(&y)) = (before, after) {
                    from_ops[step] += 1;
                    let work = |op: usize| {
                        gpu_under(t, &by, op)
                            .into_iter()
                            .map(|g| (e.start[g as usize], e.end(g as usize)))
                    };
                    softmax[step].extend(work(i));
                    matmuls[step].extend(work(x).chain(work(y)));
                    sources.push(i);
                    if shown.len() < 3 {
                        shown.push(i);
                    }
                }
            }
        }
        let mut names = KernelNames::default();
        for &step in &a.steady {
            let kernels: Vec<usize> = a
                .gpu_work(step)
                .into_iter()
                .filter(|&i| e.kind[i] == EventKind::GpuKernel)
                .collect();
            for (k, &i) in kernels.iter().enumerate() {
                if !names.of_event(t, i).softmax {
                    continue;
                }
                let same_stream = |j: &&usize| e.track[**j] == e.track[i];
                let mut matmul = |j: &&usize| names.of_event(t, **j).matmul;
                let before = kernels[..k]
                    .iter()
                    .rev()
                    .filter(same_stream)
                    .take(REACH)
                    .find(&mut matmul);
                let after = kernels[k + 1..]
                    .iter()
                    .filter(same_stream)
                    .take(REACH)
                    .find(&mut matmul);
                if let (Some(&x), Some(&y)) = (before, after) {
                    from_kernels[step] += 1;
                    softmax[step].push((e.start[i], e.end(i)));
                    matmuls[step].extend([(e.start[x], e.end(x)), (e.start[y], e.end(y))]);
                    sources.push(i);
                    if shown.len() < 3 {
                        shown.push(i);
                    }
                }
            }
        }
        let total: u64 = a
            .steady
            .iter()
            .map(|&k| from_ops[k].max(from_kernels[k]))
            .sum();
        let seen_in_kernels = a.steady.iter().any(|&k| from_kernels[k] > 0);
        let checks = a
            .steady
            .iter()
            .map(|&k| StepCheck {
                step: k,
                value: from_ops[k].max(from_kernels[k]) as f64,
                claims: vec![
                    (std::mem::take(&mut softmax[k]), 1.0),
                    (std::mem::take(&mut matmuls[k]), 0.5),
                ],
            })
            .collect();
        let o = match judge(
            self,
            a,
            ledger,
            GATE,
            checks,
            "GPU time of the softmax kernels between the attention matmuls plus half that of the two matmuls, per steady-state step: a fused kernel never writes the attention matrix to memory and runs the block at least twice as fast",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
        let summary = format!(
            "{:.0} attention blocks per step run as separate matmul, softmax and matmul{}, writing the full attention matrix to memory; fusing them saves about {:.3} ms per step",
            total as f64 / a.steady.len().max(1) as f64,
            if seen_in_kernels { " (seen in the kernel sequence)" } else { "" },
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "softmax ops or kernels between two matmuls".into(),
            steps: o.held.clone(),
            events: shown.iter().map(|&i| a.event_ref(i)).collect(),
            count: Some(total),
            sources,
        }];
        finding(self, o, summary, evidence, FIX_UNFUSED_ATTENTION)
    }
}

/// Whether `test` holds for each interned name, by `StrId`: one test per distinct name rather
/// than one per event.
fn of_names(t: &Trace, test: impl Fn(&str) -> bool) -> Vec<bool> {
    t.strings.iter().map(test).collect()
}

fn is_attention(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("attention") || lower.contains("attn")
}

impl Observer for AttentionHotSpot {
    fn id(&self) -> &'static str {
        "attention-hot-spot"
    }

    fn title(&self) -> &'static str {
        "Attention is the hot spot of the step"
    }

    fn threshold(&self) -> &'static str {
        "GPU time launched under attention modules or ops (names with attention/attn) above 20% of the steady-state step"
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let e = &t.events;
        let by = launched_by(t);
        let attention = of_names(t, is_attention);
        let mut total = 0i64;
        let mut blocks = 0usize;
        for i in 0..e.len() {
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
                || !attention[e.name[i] as usize]
                || a.steady_step_at(e.start[i]).is_none()
            {
                continue;
            }
            let p = e.parent[i];
            if p != NONE && attention[e.name[p as usize] as usize] {
                continue;
            }
            blocks += 1;
            total += gpu_under(t, &by, i)
                .iter()
                .map(|&g| e.dur[g as usize])
                .sum::<i64>();
        }
        let per_step = total as f64 / a.steady.len().max(1) as f64;
        let share = per_step / a.step_ns().max(1.0);
        (share >= HOT_SHARE).then(|| Note {
            id: self.id(),
            text: format!(
                "{}: attention runs {:.2} ms of GPU time per step, {:.0}% of the step, in {blocks} blocks; where attention dominates, gains come from a faster kernel (flash or memory-efficient SDPA), fewer tokens or windowed attention",
                self.title(),
                per_step / 1e6,
                100.0 * share
            ),
        })
    }
}

#[cfg(test)]
mod tests {
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
    fn the_gpu_work_under_each_cpu_event_is_what_it_and_its_callees_launched() {
        let t = generated_trace(2);
        let by = launched_by(&t);
        let mut launching = 0;
        for i in (0..t.events.len()).filter(|&i| !t.tracks[t.events.track[i] as usize].gpu) {
            let expected = by_definition(&t, i);
            launching += usize::from(!expected.is_empty());
            assert_eq!(gpu_under(&t, &by, i), expected, "event {i}");
        }
        assert!(launching > 100, "{launching} CPU events launch GPU work");
    }
}
