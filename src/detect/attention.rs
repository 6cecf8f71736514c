//! Unfused attention: a score GEMM, then what real models put before the softmax (scaling,
//! relative-position or ALiBi bias, masks, casts, copies, views), the softmax, then dropout or
//! casts and the GEMM that consumes it. Seen in the CPU ops (through Python frames, whatever
//! the module nesting) or, where no op shows it, in the kernel names of one stream (any vendor's
//! GEMM and softmax spellings), with no fused attention op or kernel anywhere in the trace. A
//! block is bounded by what one attention block holds, not by a count of kernels: at most
//! [`MAX_BEFORE`] ops or kernels between the score GEMM and the softmax and [`MAX_AFTER`] after
//! it, none of which can be outside attention (a convolution, a norm, an activation, a
//! projection, another softmax). A softmax over a 2-D input (a classifier's or a router's) is
//! not attention. On a CPU-only trace the blocks claim the host time of their ops. The finding
//! says attention's share of each block's time (block: from one attention's score GEMM to the
//! next), named by module where the trace records modules. And attention as the step's hot
//! spot (a note).

use rustc_hash::FxHashMap;

use super::contract::{
    finding, judge, About, Detector, Evidence, Fix, Gate, Note, Observer, Rejected, StepCheck,
    Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{Intervals, Ledger};
use crate::model::kernels::{KernelNames, KernelTraits};
use crate::model::{EventKind, Launch, StrId, Trace, NONE};
use roles::{kernel_role, op_role, Role};

mod roles;

pub(crate) struct UnfusedAttention;
pub(crate) struct AttentionHotSpot;

/// Attention's share of the step from which it is noted as the hot spot (an observer's gate: it
/// makes a note, never a finding).
const HOT_GATE: Gate = Gate {
    quantity: "GPU time launched under attention modules or ops, % of the step",
    threshold: 20.0,
};
/// The same, as a share.
const HOT_SHARE: f64 = HOT_GATE.threshold / 100.0;
/// Most ops (or kernels of one stream) between the score GEMM and the softmax in one attention
/// block: a Swin block's relative-position bias (index, view, permute, contiguous, unsqueeze,
/// add) and window mask (view, unsqueeze, add, view) with a scale and casts come to about 15;
/// ALiBi, causal and padding masks to fewer.
const MAX_BEFORE: usize = 24;
/// Most between the softmax and the GEMM that consumes it: dropout (its mask, its scaling),
/// casts, views and copies.
const MAX_AFTER: usize = 8;
/// Blocks listed in the evidence, each with attention's share of it.
const MAX_LISTED: usize = 64;

const GATE: Gate = Gate {
    quantity: "attention blocks per step computed as GEMM → (scale, bias, mask, dropout, casts) → softmax → GEMM, with no fused attention in the trace",
    threshold: 1.0,
};
/// How a finding's time is counted.
const COST: &str = "time of the softmax and of what lies between the attention GEMMs (scale, bias, mask, dropout, casts), plus half that of the two GEMMs, per steady-state step (GPU time; host time on a CPU-only trace): a fused kernel never writes the attention matrix to memory and runs the block at least twice as fast";

/// Ops that mean attention already runs fused.
const FUSED: [&str; 7] = [
    "scaled_dot_product",
    "flash_attention",
    "flash_attn",
    "efficient_attention",
    "memory_efficient_attention",
    "fmha",
    "_native_multi_head_attention",
];

/// The attention block around the softmax at `k` of `roles`: positions of its score GEMM and
/// of the GEMM that consumes the softmax, with only `Between` work in between, within bounds.
fn block_around(roles: &[Role], k: usize) -> Option<(usize, usize)> {
    let before = (k.saturating_sub(MAX_BEFORE + 1)..k)
        .rev()
        .find(|&j| roles[j] != Role::Between)?;
    let after = (k + 1..roles.len().min(k + MAX_AFTER + 2)).find(|&j| roles[j] != Role::Between)?;
    (roles[before] == Role::Gemm && roles[after] == Role::Gemm).then_some((before, after))
}

/// The number of dimensions of the first input in an op's `Input Dims` (`[[8, 12, 197, 197],
/// []]` → 4), if recorded.
fn first_rank(dims: &str) -> Option<usize> {
    let inner = dims
        .trim_start()
        .strip_prefix('[')?
        .trim_start()
        .strip_prefix('[')?;
    let list = &inner[..inner.find(']')?];
    Some(if list.trim().is_empty() {
        0
    } else {
        list.split(',').count()
    })
}

/// Whether CPU op `i` (a softmax) may be attention's: its input has 3 or more dimensions
/// (batch, heads or windows, queries × keys), or its shape was not recorded. A classifier's or
/// a router's softmax is over 2 dimensions.
fn attention_shaped(t: &Trace, i: usize) -> bool {
    let detail = t.events.detail[i];
    if detail == NONE {
        return true;
    }
    t.details
        .op(detail)
        .input_dims
        .and_then(|d| first_rank(t.strings.get(d)))
        .is_none_or(|rank| rank >= 3)
}

/// Per event of the CPU tracks, the nearest enclosing CPU op (`NONE`: none); ops with the same
/// one (across Python frames and `record_function` ranges) are one sequence of siblings.
fn nearest_ops(t: &Trace) -> Vec<u32> {
    let e = &t.events;
    let mut nearest = vec![NONE; e.len()];
    for i in 0..e.len() {
        let p = e.parent[i];
        if p != NONE && (p as usize) < i {
            nearest[i] = if e.kind[p as usize] == EventKind::CpuOp {
                p
            } else {
                nearest[p as usize]
            };
        }
    }
    nearest
}

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

/// Whether attention already runs fused somewhere in the trace (an op or a kernel). PyTorch's
/// math fallback (`_scaled_dot_product_attention_math`) is itself unfused, and so is the
/// `scaled_dot_product_attention` call that dispatched to it (on a CPU, or with inputs the fused
/// backends refuse): the backend nested in the call says which ran.
fn fused_anywhere(t: &Trace) -> bool {
    let e = &t.events;
    let mut names = KernelNames::default();
    let math = of_names(t, |name| {
        name.contains("scaled_dot_product") && name.contains("_math")
    });
    let dispatcher = of_names(t, |name| {
        name.strip_prefix("aten::").unwrap_or(name) == "scaled_dot_product_attention"
    });
    let fused = of_names(t, |name| FUSED.iter().any(|f| name.contains(f)));
    let runs_math = |i: usize| t.nested_in(i).any(|j| math[e.name[j] as usize]);
    t.recorded().any(|i| match e.kind[i] {
        EventKind::CpuOp => {
            let name = e.name[i] as usize;
            fused[name] && !math[name] && !(dispatcher[name] && runs_math(i))
        }
        EventKind::GpuKernel => names.of_event(t, i).fused_attention,
        _ => false,
    })
}

/// Whether any op or kernel of the trace is a softmax (`Role::Softmax`, before its shape is
/// judged): every block holds one, so a trace with none needs no lanes (their lists of every
/// op and kernel are the detector's largest allocation, a third of the model's size).
fn has_softmax(t: &Trace) -> bool {
    let e = &t.events;
    let op = of_names(t, |name| op_role(name) == Role::Softmax);
    let kernel = of_names(t, |name| {
        kernel_role(KernelTraits::of(name), name) == Role::Softmax
    });
    (0..e.len()).any(|i| match e.kind[i] {
        EventKind::CpuOp => op[e.name[i] as usize],
        EventKind::GpuKernel => kernel[e.name[i] as usize],
        _ => false,
    })
}

/// Whether the trace records host work only: no GPU track and no runtime call (a trace whose
/// GPU activity was lost still has its launches).
fn host_only(t: &Trace) -> bool {
    !t.tracks.iter().any(|tr| tr.gpu) && !t.events.kind.contains(&EventKind::RuntimeCall)
}

/// A sequence in which attention blocks are looked for: the sibling ops under one op (or under
/// none) of a thread, or the GPU work of one stream in one step.
struct Lane {
    events: Vec<usize>,
    kernels: bool,
}

/// One unfused attention block: positions in its lane.
struct Block {
    step: usize,
    lane: usize,
    gemm: usize,
    softmax: usize,
    output: usize,
}

/// What the blocks cost: GPU time of kernels, GPU time launched under ops, or (on a host-only
/// trace) the ops' own time.
struct Costs<'t> {
    t: &'t Trace,
    by: Vec<Launch>,
    host: bool,
}

impl Costs<'_> {
    /// The time item `i` of a lane stands for.
    fn intervals(&self, i: usize, kernels: bool) -> Intervals {
        let e = &self.t.events;
        if kernels || self.host {
            vec![(e.start[i], e.end(i))]
        } else {
            gpu_under(self.t, &self.by, i)
                .into_iter()
                .map(|g| (e.start[g as usize], e.end(g as usize)))
                .collect()
        }
    }

    fn ns(&self, i: usize, kernels: bool) -> i64 {
        self.intervals(i, kernels).iter().map(|(s, e)| e - s).sum()
    }
}

/// Attention's time and its block's time (attention's score GEMM to the next attention's), per
/// block in step order, summed over the steps where the gate holds.
struct Shares {
    attention: Vec<i64>,
    block: Vec<i64>,
    /// The events of each block's attention in the first step that has it (to name modules).
    events: Vec<Vec<usize>>,
}

fn shares(a: &Analysis<'_>, lanes: &[Lane], blocks: &[&Block], costs: &Costs<'_>) -> Shares {
    let e = &a.trace.events;
    let mut out = Shares {
        attention: Vec::new(),
        block: Vec::new(),
        events: Vec::new(),
    };
    let mut by_step: FxHashMap<usize, Vec<&Block>> = FxHashMap::default();
    for b in blocks {
        by_step.entry(b.step).or_default().push(b);
    }
    for (step, mut list) in by_step {
        let end_ts = a.range(step).1;
        list.sort_by_key(|b| e.start[lanes[b.lane].events[b.gemm]]);
        // Each block runs to the next attention of its lane; the last, as far as the longest
        // of the others (within the step).
        let next: Vec<Option<usize>> = list
            .iter()
            .map(|b| {
                list.iter()
                    .filter(|o| o.lane == b.lane && o.gemm > b.gemm)
                    .map(|o| o.gemm)
                    .min()
            })
            .collect();
        let longest = list
            .iter()
            .zip(&next)
            .filter_map(|(b, n)| n.map(|n| n - b.gemm))
            .max();
        for (k, (b, n)) in list.iter().zip(&next).enumerate() {
            let lane = &lanes[b.lane];
            let from = b.gemm;
            let to = n.unwrap_or_else(|| {
                let in_step = from + lane.events[from..].partition_point(|&i| e.start[i] < end_ts);
                longest.map_or(in_step, |l| in_step.min(from + l))
            });
            if out.attention.len() <= k {
                out.attention.push(0);
                out.block.push(0);
                out.events.push(lane.events[b.gemm..=b.output].to_vec());
            }
            let cost = |r: std::ops::Range<usize>| -> i64 {
                lane.events[r]
                    .iter()
                    .map(|&i| costs.ns(i, lane.kernels))
                    .sum()
            };
            out.attention[k] += cost(b.gemm..b.output + 1);
            out.block[k] += cost(from..to.max(b.output + 1));
        }
    }
    out
}

/// Each block's name: `block N`, with the module frame where the blocks' modules differ and the
/// attention's own (`BertLayer_7/…/BertSelfAttention_0` in
/// `BertModel_0/…/BertLayer_7/BertAttention_0/BertSelfAttention_0`) where the trace has them.
fn block_names(t: &Trace, events: &[Vec<usize>]) -> Vec<String> {
    let holders: Vec<Option<String>> = match crate::modules::Frames::of(t) {
        Some(frames) => events.iter().map(|ev| frames.holder(t, ev)).collect(),
        None => vec![None; events.len()],
    };
    let paths: Vec<Vec<&str>> = holders
        .iter()
        .map(|h| h.as_deref().map_or(Vec::new(), |p| p.split('/').collect()))
        .collect();
    let named: Vec<&Vec<&str>> = paths.iter().filter(|p| !p.is_empty()).collect();
    let common = named.first().map_or(0, |first| {
        (0..first.len())
            .take_while(|&c| named.iter().all(|p| p.get(c) == first.get(c)))
            .count()
    });
    paths
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let from = common.min(p.len().saturating_sub(1));
            match p.len() - from {
                0 => format!("block {k}"),
                1 => format!("block {k} ({})", p[from]),
                2 => format!("block {k} ({}/{})", p[from], p[from + 1]),
                _ => format!("block {k} ({}/…/{})", p[from], p[p.len() - 1]),
            }
        })
        .collect()
}

const FIX_UNFUSED_ATTENTION: Fix = Fix {
    summary: "Call scaled_dot_product_attention (flash or memory-efficient kernels; nn.MultiheadAttention and timm/HF ViTs use it when enabled); pass the bias and mask as attn_mask.",
    snippet: "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias_plus_mask, dropout_p=p if self.training else 0.0)",
    terms: &["scaled_dot_product_attention", "flash", "memory-efficient"],
};

const UNFUSED_ATTENTION_ABOUT: About = About {
    id: "unfused-attention",
    title: "Attention computed as matmul → softmax → matmul",
    rule: "at least {0} softmax over 3 or more dimensions between two GEMMs (aten::bmm/matmul/baddbmm/einsum/mm ops under the same op, through Python frames, or GEMM and softmax kernels of one stream), with at most 24 ops or kernels before it and 8 after it and none that cannot be inside attention (a convolution, a norm, a projection, an activation, another softmax), in at least half of the steady steps; no scaled_dot_product_attention / flash / memory-efficient attention op or kernel anywhere in the trace",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_UNFUSED_ATTENTION),
};

impl Detector for UnfusedAttention {
    fn about(&self) -> &'static About {
        &UNFUSED_ATTENTION_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        if fused_anywhere(t) || !has_softmax(t) {
            return Err(Rejected::NOTHING);
        }
        let mut lanes: Vec<Lane> = Vec::new();
        // Sibling ops: under the same op of the same thread, Python frames crossed.
        let nearest = nearest_ops(t);
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            let mut groups: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
            for i in track.events.clone().map(|i| i as usize) {
                if e.kind[i] == EventKind::CpuOp {
                    groups.entry(nearest[i]).or_default().push(i);
                }
            }
            let mut groups: Vec<Vec<usize>> = groups.into_values().collect();
            groups.sort_by_key(|g| g[0]);
            lanes.extend(groups.into_iter().map(|events| Lane {
                events,
                kernels: false,
            }));
        }
        let ops_lanes = lanes.len();
        let mut kernel_names = KernelNames::default();
        let mut kernel_steps = Vec::new();
        for &step in &a.steady {
            let work = a.gpu_work(step);
            let mut by_track: Vec<Vec<usize>> = Vec::new();
            for i in work {
                match by_track.last_mut() {
                    Some(l) if e.track[l[0]] == e.track[i] => l.push(i),
                    _ => by_track.push(vec![i]),
                }
            }
            for events in by_track {
                kernel_steps.push(step);
                lanes.push(Lane {
                    events,
                    kernels: true,
                });
            }
        }
        let mut op_roles: FxHashMap<StrId, Role> = FxHashMap::default();
        let mut blocks: Vec<Block> = Vec::new();
        for (l, lane) in lanes.iter().enumerate() {
            let roles: Vec<Role> = lane
                .events
                .iter()
                .map(|&i| {
                    let role = if lane.kernels {
                        match e.kind[i] {
                            EventKind::GpuKernel => {
                                kernel_role(kernel_names.of_event(t, i), t.name_of(i))
                            }
                            _ => Role::Outside,
                        }
                    } else {
                        *op_roles
                            .entry(e.name[i])
                            .or_insert_with(|| op_role(t.name_of(i)))
                    };
                    let shaped_at = if lane.kernels {
                        t.launch_of(i as u32)
                            .map(|r| nearest[r as usize])
                            .filter(|&op| op != NONE)
                            .map(|op| op as usize)
                    } else {
                        Some(i)
                    };
                    // A softmax kernel under a softmax op is the ops' to judge.
                    let mut judged_by_ops = |op: usize| {
                        lane.kernels
                            && *op_roles
                                .entry(e.name[op])
                                .or_insert_with(|| op_role(t.name_of(op)))
                                == Role::Softmax
                    };
                    match (role, shaped_at) {
                        (Role::Softmax, Some(op))
                            if !attention_shaped(t, op) || judged_by_ops(op) =>
                        {
                            Role::Outside
                        }
                        _ => role,
                    }
                })
                .collect();
            for k in (0..roles.len()).filter(|&k| roles[k] == Role::Softmax) {
                let step = if lane.kernels {
                    Some(kernel_steps[l - ops_lanes])
                } else {
                    a.steady_step_at(e.start[lane.events[k]])
                };
                if let (Some(step), Some((gemm, output))) = (step, block_around(&roles, k)) {
                    blocks.push(Block {
                        step,
                        lane: l,
                        gemm,
                        softmax: k,
                        output,
                    });
                }
            }
        }
        // Per step, the blocks of the ops or those of the kernels, whichever sees more.
        let n = a.steps.steps.len();
        let (mut from_ops, mut from_kernels) = (vec![0u64; n], vec![0u64; n]);
        for b in &blocks {
            if lanes[b.lane].kernels {
                from_kernels[b.step] += 1;
            } else {
                from_ops[b.step] += 1;
            }
        }
        let chosen: Vec<&Block> = blocks
            .iter()
            .filter(|b| lanes[b.lane].kernels == (from_kernels[b.step] > from_ops[b.step]))
            .collect();
        let costs = Costs {
            t,
            by: launched_by(t),
            host: host_only(t),
        };
        // A fused kernel never writes the scores: what lies between the GEMMs goes; the GEMMs
        // stay, faster.
        let mut whole: Vec<Intervals> = vec![Vec::new(); n];
        let mut half: Vec<Intervals> = vec![Vec::new(); n];
        for b in &chosen {
            let lane = &lanes[b.lane];
            for p in b.gemm..=b.output {
                let iv = costs.intervals(lane.events[p], lane.kernels);
                if p == b.gemm || p == b.output {
                    half[b.step].extend(iv);
                } else {
                    whole[b.step].extend(iv);
                }
            }
        }
        let count = |k: usize| from_ops[k].max(from_kernels[k]);
        let checks = a
            .steady
            .iter()
            .map(|&k| StepCheck {
                step: k,
                value: count(k) as f64,
                claims: vec![
                    (std::mem::take(&mut whole[k]), 1.0),
                    (std::mem::take(&mut half[k]), 0.5),
                ],
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let held: Vec<&Block> = chosen
            .into_iter()
            .filter(|b| o.held.contains(&a.steps.steps[b.step].number))
            .collect();
        let total: u64 = a.steady.iter().map(|&k| count(k)).sum();
        let seen_in_kernels = held.iter().any(|b| lanes[b.lane].kernels);
        let sh = shares(a, &lanes, &held, &costs);
        let names = block_names(t, &sh.events);
        let pcts: Vec<f64> = (0..sh.block.len())
            .map(|k| super::contract::pct(sh.attention[k] as f64, sh.block[k] as f64))
            .collect();
        let time = if costs.host { "host" } else { "GPU" };
        let worst = (0..pcts.len()).max_by(|&x, &y| pcts[x].total_cmp(&pcts[y]));
        let share = worst.map_or(String::new(), |w| {
            let least = pcts.iter().copied().fold(f64::INFINITY, f64::min);
            let across = if pcts.len() > 1 {
                format!(
                    ", {least:.0}–{:.0}% across the {} blocks",
                    pcts[w],
                    pcts.len()
                )
            } else {
                String::new()
            };
            format!(
                "; attention is {:.0}% of the {time} time of {}{across}",
                pcts[w], names[w]
            )
        });
        let summary = format!(
            "{:.0} attention blocks per step run as a GEMM, a softmax and a GEMM with what lies between them{}, writing the full attention matrix to memory{share}; fusing them saves about {:.3} ms per step",
            a.per_step(total as f64),
            if seen_in_kernels { " (seen in the kernel sequence)" } else { "" },
            o.impact.ms_per_step
        );
        let softmaxes: Vec<usize> = held
            .iter()
            .map(|b| lanes[b.lane].events[b.softmax])
            .collect();
        let per_step = o.held.len().max(1) as f64;
        let evidence = vec![
            Evidence {
                what: "softmax ops or kernels between two GEMMs".into(),
                steps: o.held.clone(),
                events: softmaxes.iter().take(3).map(|&i| a.event_ref(i)).collect(),
                count: Some(total),
                sources: softmaxes,
            },
            Evidence {
                what: format!("attention's share of each block's {time} time (a block: from one attention's score GEMM to the next), per step"),
                steps: o.held.clone(),
                events: (0..pcts.len())
                    .take(MAX_LISTED)
                    .map(|k| {
                        format!(
                            "{}: attention {:.0}% of {:.3} ms",
                            names[k],
                            pcts[k],
                            sh.block[k] as f64 / per_step / 1e6
                        )
                    })
                    .collect(),
                count: Some(pcts.len() as u64),
                sources: Vec::new(),
            },
        ];
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

const ATTENTION_HOT_SPOT_ABOUT: About = About {
    id: "attention-hot-spot",
    title: "Attention is the hot spot of the step",
    rule: "GPU time launched under attention modules or ops (names with attention/attn) above {0}% of the steady-state step",
    gates: &[HOT_GATE],
    fixes: &[],
};

impl Observer for AttentionHotSpot {
    fn about(&self) -> &'static About {
        &ATTENTION_HOT_SPOT_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let e = &t.events;
        let by = launched_by(t);
        let attention = of_names(t, is_attention);
        let mut total = 0i64;
        let mut blocks = 0usize;
        for i in t.recorded() {
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
        let per_step = a.per_step(total as f64);
        let share = per_step / a.step_ns().max(1.0);
        (share >= HOT_SHARE).then(|| self.about().note(format!(
                "attention runs {:.2} ms of GPU time per step, {:.0}% of the step, in {blocks} blocks; where attention dominates, gains come from a faster kernel (flash or memory-efficient SDPA), fewer tokens or windowed attention",
                per_step / 1e6,
                100.0 * share
            )))
    }
}

#[cfg(test)]
mod tests;
