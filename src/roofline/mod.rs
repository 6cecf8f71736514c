//! How far the GPU work is from what the device can do: per kernel achieved TFLOP/s and GB/s,
//! arithmetic intensity and the roofline's time; per step MFU.
//!
//! A kernel is charged to the innermost CPU op above its launch that has a formula
//! ([`flops::cost`]); an op's bytes are shared among its kernels by duration, its FLOPs among
//! those whose names say matrix work (not a convolution's layout transposes) when any do. The
//! roofline time of a kernel is `max(FLOPs / compute peak, bytes / bandwidth)` ([`peaks`]):
//! matrix, convolution and attention ops meet the tensor-core peak of their dtype (fp32 the
//! TF32 one, unless the kernel's name says SIMT); other ops the fp32 SIMT peak. A step's MFU
//! is the time its matrix work would take at peak over the step's time; its roofline time
//! counts the kernels without a formula at their measured time.

pub mod flops;
pub mod peaks;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::model::{kernels, EventKind, StrId, Trace, NONE};
use flops::{Cost, Dtype};
use peaks::Peaks;

/// Kernels kept in [`Roofline::kernels`].
pub(crate) const TOP_KERNELS: usize = 10;
/// From this share of kernel time in matrix, convolution or attention kernels without FLOPs
/// counted, the MFU is stated as a lower bound.
pub const MFU_LOWER_BOUND_FROM: f64 = 0.01;

/// The roofline of a trace's main GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// The device's name as the trace gives it (`""` when it gives none).
    pub device: String,
    /// Its row of the peaks table; `None` when the table lacks it (achieved rates only).
    pub peaks: Option<PeaksEntry>,
    /// Where the name is missing or generic, the properties that found its row
    /// ("304 CUs, 192 GiB, gfx942") or that several rows fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<String>,
    /// The devices those properties fit, where several do: no peaks, no MFU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ambiguous: Vec<String>,
    pub coverage: Coverage,
    /// The steps asked for (the steady ones), in order.
    pub steps: Vec<StepRoofline>,
    /// The steps' mean MFU, with known peaks and FLOPs counted.
    pub mfu: Option<f64>,
    /// Where matrix, convolution or attention kernels without FLOPs counted run at least
    /// [`MFU_LOWER_BOUND_FROM`] of kernel time, that share: the MFU is then a lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu_uncounted: Option<f64>,
    /// Kernels by name and op, most time lost against the roofline first (most time first
    /// without peaks); the first [`TOP_KERNELS`].
    pub kernels: Vec<KernelRoofline>,
}

impl Roofline {
    /// What a link or a reopened report carries of a roofline: the step MFU alone, and
    /// whether it is a lower bound.
    pub fn carried(mfu: f64, mfu_uncounted: Option<f64>) -> Roofline {
        Roofline {
            mfu: Some(mfu),
            mfu_uncounted,
            ..Roofline::default()
        }
    }

    /// Whether this is [`Roofline::carried`]'s: no steps, no coverage, at most the MFU.
    pub(crate) fn is_carried(&self) -> bool {
        self.steps.is_empty() && self.coverage == Coverage::default()
    }

    /// The MFU where it means something: FLOPs were counted (or a link carried it).
    pub fn measured_mfu(&self) -> Option<f64> {
        self.mfu
            .filter(|_| self.is_carried() || self.coverage.counted_ms > 0.0)
    }

    /// The step MFU as every front end states it: "41.3%", or, where matrix, convolution or
    /// attention kernels ran without FLOPs counted (no shapes, no formula, a graph replay not
    /// tied to its operator) for at least [`MFU_LOWER_BOUND_FROM`] of kernel time, "at least
    /// 0.1%" ([`Roofline::mfu_bound`] says why). `None` without a measured MFU.
    pub fn mfu_text(&self) -> Option<String> {
        let mfu = 100.0 * self.measured_mfu()?;
        // Under 0.05% one decimal would say "0.0%": one significant digit instead.
        let digits = if mfu > 0.0 && mfu < 0.05 {
            -mfu.log10().floor() as usize
        } else {
            1
        };
        Some(match self.mfu_uncounted {
            Some(_) => format!("at least {mfu:.digits$}%"),
            None => format!("{mfu:.digits$}%"),
        })
    }

    /// Why the MFU is a lower bound, where it is: a sentence.
    pub fn mfu_bound(&self) -> Option<String> {
        self.measured_mfu()?;
        self.mfu_uncounted.map(|uncounted| {
            format!(
                "Matrix, convolution or attention kernels without FLOPs counted run {:.0}% of kernel time: the MFU counts only the FLOPs it knows.",
                100.0 * uncounted
            )
        })
    }

    /// The steps' mean time and their kernels' mean time at the roofline, in milliseconds.
    pub fn mean_step_ms(&self) -> (f64, f64) {
        let n = self.steps.len().max(1) as f64;
        (
            self.steps.iter().map(|s| s.ms).sum::<f64>() / n,
            self.steps.iter().filter_map(|s| s.roofline_ms).sum::<f64>() / n,
        )
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PeaksEntry {
    pub device: String,
    pub fp32_tflops: f64,
    pub tf32_tflops: Option<f64>,
    pub fp16_tflops: f64,
    pub fp8_tflops: Option<f64>,
    pub gbps: f64,
    pub source: String,
}

/// What the trace allowed: kernel time on the device, and how much of it has shapes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub kernel_ms: f64,
    /// Kernel time launched under an op that recorded `Input Dims`.
    pub shapes_ms: f64,
    /// Kernel time charged to an op with a formula.
    pub counted_ms: f64,
    /// `[memory]` events (`profile_memory=True`).
    pub memory_events: u64,
    /// Kernel time a CUDA/HIP graph replayed…
    #[serde(default, skip_serializing_if = "is_zero")]
    pub graph_ms: f64,
    /// …of which not tied to the operator that launched the same kernel
    /// (`Trace::replayed_from`): no shapes, FLOPs or module below the graph launch.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub graph_unattributed_ms: f64,
    /// Matrix, convolution and attention kernel time (by kernel name) without FLOPs counted:
    /// the work the MFU misses.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub matrix_uncounted_ms: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRoofline {
    pub step: i64,
    pub ms: f64,
    pub kernel_ms: f64,
    /// Matrix, convolution and attention TFLOPs.
    pub(crate) tflop: f64,
    pub mfu: Option<f64>,
    /// The step's kernels at the roofline (those without a formula as measured).
    pub roofline_ms: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelRoofline {
    pub name: String,
    /// The op charged (`aten::addmm`).
    pub op: String,
    pub dtype: String,
    pub calls: u64,
    pub ms: f64,
    pub gflop: f64,
    pub gbytes: f64,
    pub tflops: f64,
    pub gbps: f64,
    /// FLOPs per byte.
    pub intensity: f64,
    /// `compute` or `memory`: which roof is lower at its intensity.
    pub bound: Option<String>,
    pub roofline_ms: Option<f64>,
    /// Roofline time over measured time.
    pub share: Option<f64>,
    pub lost_ms: Option<f64>,
}

/// One kernel charged to an op.
struct Charged {
    start: i64,
    dur: i64,
    name: StrId,
    op: StrId,
    cost: Cost,
    /// The op's kernel time, over which its bytes are shared, and that of its kernels whose
    /// names say matrix work (GEMM, convolution, fused attention), over which its FLOPs are
    /// (all its kernels' when none does).
    op_ns: i64,
    op_matrix_ns: i64,
    matrix: bool,
    simt: bool,
    /// Its place in the order charged (by track, then time): the tie-break of the sort by
    /// start, which then needs no scratch list.
    seq: u32,
}

impl Charged {
    /// `(flops, bytes)` of this kernel.
    fn work(&self) -> (f64, f64) {
        let dur = self.dur as f64;
        let flops = if self.op_matrix_ns == 0 {
            dur / self.op_ns.max(1) as f64
        } else if self.matrix {
            dur / self.op_matrix_ns as f64
        } else {
            0.0
        };
        (
            self.cost.flops * flops,
            self.cost.bytes * dur / self.op_ns.max(1) as f64,
        )
    }

    /// The compute peak it meets, FLOP/s.
    fn peak(&self, p: &Peaks) -> f64 {
        let tflops = if !self.cost.family.tensor_cores() {
            p.fp32
        } else {
            match self.cost.dtype {
                Dtype::F16 | Dtype::Bf16 => p.fp16,
                Dtype::F8 => p.fp8.unwrap_or(p.fp16),
                Dtype::F32 if !self.simt => p.tf32.unwrap_or(p.fp32),
                Dtype::F32 | Dtype::F64 | Dtype::Int => p.fp32,
            }
        };
        tflops * 1e12
    }

    /// Nanoseconds its FLOPs take at the compute peak, and its bytes at the bandwidth.
    fn roofs_ns(&self, p: &Peaks) -> (f64, f64) {
        let (flops, bytes) = self.work();
        (flops / self.peak(p) * 1e9, bytes / p.gbps)
    }

    /// Nanoseconds at the roofline.
    fn roofline_ns(&self, p: &Peaks) -> f64 {
        let (compute, memory) = self.roofs_ns(p);
        compute.max(memory)
    }

    /// Nanoseconds its matrix FLOPs take at peak (0 for other ops).
    fn peak_ns(&self, p: &Peaks) -> f64 {
        if self.cost.family.tensor_cores() {
            self.work().0 / self.peak(p) * 1e9
        } else {
            0.0
        }
    }
}

/// The roofline of `device`'s kernels (`attribution::main_device`'s answer), with the MFU of
/// `steps` (`(number, start, end)`); `None` without a GPU.
pub fn analyze(
    t: &Trace,
    device: Option<Option<i64>>,
    steps: &[(i64, i64, i64)],
) -> Option<Roofline> {
    let device = device?;
    let e = &t.events;
    let described = t
        .meta
        .devices
        .iter()
        .find(|d| d.id == device)
        .or_else(|| t.meta.devices.first().filter(|_| t.meta.devices.len() == 1));
    let name = described.and_then(|d| d.name.clone()).unwrap_or_default();
    let found = peaks::find(
        &name,
        &described.map_or_else(peaks::Properties::default, |d| peaks::Properties {
            warp_size: d.warp_size,
            arch: d.compute_major.zip(d.compute_minor),
            units: d.num_sms,
            memory: d.total_global_mem,
        }),
    );
    let peaks = found.peaks();
    let mut costs: FxHashMap<[StrId; 4], Option<Cost>> = FxHashMap::default();
    let mut traits = kernels::KernelNames::default();
    let mut coverage = Coverage {
        memory_events: e.kind.iter().filter(|&&k| k == EventKind::Memory).count() as u64,
        ..Coverage::default()
    };
    // Sized for every event of the device's tracks (a kernel each, at most): one allocation,
    // never grown (doubling would hold the old and the new at once; on a 1 GiB trace these
    // lists are the largest thing the report makes).
    let tracks = || t.tracks.iter().filter(|tr| tr.gpu && tr.device == device);
    let most = tracks().map(|tr| tr.events.len()).sum();
    let mut charged: Vec<Charged> = Vec::with_capacity(most);
    // Each charged kernel's op and replay, the key of `op_ns`.
    let mut keys: Vec<(u32, u32)> = Vec::with_capacity(most);
    let mut op_ns: FxHashMap<(u32, u32), (i64, i64)> = FxHashMap::default();
    let mut kernel_starts: Vec<(i64, i64)> = Vec::with_capacity(most);
    for track in tracks() {
        for g in track.events.clone() {
            let gi = g as usize;
            if e.kind[gi] != EventKind::GpuKernel {
                continue;
            }
            let dur = e.dur[gi];
            coverage.kernel_ms += dur as f64 / 1e6;
            if t.launch_of(g)
                .is_some_and(|l| t.is_graph_launch(l as usize))
            {
                coverage.graph_ms += dur as f64 / 1e6;
                if t.origin_of(g) == t.launch_of(g) {
                    coverage.graph_unattributed_ms += dur as f64 / 1e6;
                }
            }
            kernel_starts.push((e.start[gi], dur));
            let (shapes, op) = t
                .origin_of(g)
                .map_or((false, None), |l| charged_op(t, l, &mut costs));
            if shapes {
                coverage.shapes_ms += dur as f64 / 1e6;
            }
            let kernel = traits.of_event(t, gi);
            let Some((op, cost)) = op else {
                if kernel.matmul_conv() || kernel.fused_attention {
                    coverage.matrix_uncounted_ms += dur as f64 / 1e6;
                }
                continue;
            };
            coverage.counted_ms += dur as f64 / 1e6;
            let matrix =
                cost.family.tensor_cores() && (kernel.matmul_conv() || kernel.fused_attention);
            // Each replay of a graph runs its operators' work again: a replayed kernel shares
            // its op's work with the kernels of the same replay only.
            let run = if t.origin_of(g) == t.launch_of(g) {
                NONE
            } else {
                t.launch_of(g).unwrap_or(NONE)
            };
            let ns = op_ns.entry((op, run)).or_default();
            ns.0 += dur;
            ns.1 += if matrix { dur } else { 0 };
            charged.push(Charged {
                start: e.start[gi],
                dur,
                name: e.name[gi],
                op: e.name[op as usize],
                cost,
                op_ns: 0,
                op_matrix_ns: 0,
                matrix,
                simt: kernel.simt_fp32,
                seq: charged.len() as u32,
            });
            keys.push((op, run));
        }
    }
    for (c, key) in charged.iter_mut().zip(keys) {
        (c.op_ns, c.op_matrix_ns) = op_ns[&key];
    }
    charged.sort_unstable_by_key(|c| (c.start, c.seq));
    kernel_starts.sort_unstable();
    let steps: Vec<StepRoofline> = steps
        .iter()
        .map(|&(number, start, end)| step(&charged, &kernel_starts, peaks, number, start, end))
        .collect();
    let uncounted = coverage.matrix_uncounted_ms / coverage.kernel_ms.max(1e-9);
    let mfu_uncounted = (uncounted >= MFU_LOWER_BOUND_FROM).then_some(uncounted);
    // Without FLOPs counted there is no MFU, not one of 0.
    let mfus: Vec<f64> = if coverage.counted_ms > 0.0 {
        steps.iter().filter_map(|s| s.mfu).collect()
    } else {
        Vec::new()
    };
    Some(Roofline {
        device: name,
        peaks: peaks.map(|p| PeaksEntry {
            device: p.device.to_string(),
            fp32_tflops: p.fp32,
            tf32_tflops: p.tf32,
            fp16_tflops: p.fp16,
            fp8_tflops: p.fp8,
            gbps: p.gbps,
            source: p.source.to_string(),
        }),
        matched_by: match &found {
            peaks::Found::Properties { by, .. } | peaks::Found::Ambiguous { by, .. } => {
                Some(by.clone())
            }
            peaks::Found::Name(_) | peaks::Found::None => None,
        },
        ambiguous: match found {
            peaks::Found::Ambiguous { devices, .. } => {
                devices.into_iter().map(str::to_string).collect()
            }
            _ => Vec::new(),
        },
        coverage,
        mfu: (!mfus.is_empty()).then(|| mfus.iter().sum::<f64>() / mfus.len() as f64),
        mfu_uncounted: mfu_uncounted.filter(|_| !mfus.is_empty()),
        steps,
        kernels: ranked(t, &charged, peaks),
    })
}

/// Whether an op above launch `l` recorded shapes, and the innermost one with a formula.
fn charged_op(
    t: &Trace,
    l: u32,
    costs: &mut FxHashMap<[StrId; 4], Option<Cost>>,
) -> (bool, Option<(u32, Cost)>) {
    let e = &t.events;
    let mut shapes = false;
    let mut p = e.parent[l as usize];
    while p != NONE {
        let pi = p as usize;
        if e.kind[pi] == EventKind::CpuOp && e.detail[pi] != NONE {
            let d = t.details.op(e.detail[pi]);
            if let Some(dims) = d.input_dims {
                shapes = true;
                let key = [
                    e.name[pi],
                    dims,
                    d.input_types.unwrap_or(NONE),
                    d.concrete_inputs.unwrap_or(NONE),
                ];
                let text = |s: Option<StrId>| s.map(|s| t.strings.get(s));
                let cost = *costs.entry(key).or_insert_with(|| {
                    flops::cost(
                        t.name_of(pi),
                        t.strings.get(dims),
                        text(d.input_types),
                        text(d.concrete_inputs),
                    )
                });
                if let Some(cost) = cost {
                    return (true, Some((p, cost)));
                }
            }
        }
        p = e.parent[pi];
    }
    (shapes, None)
}

fn step(
    charged: &[Charged],
    kernels: &[(i64, i64)],
    peaks: Option<&Peaks>,
    number: i64,
    start: i64,
    end: i64,
) -> StepRoofline {
    let kernel_ns: i64 = kernels
        [kernels.partition_point(|k| k.0 < start)..kernels.partition_point(|k| k.0 < end)]
        .iter()
        .map(|k| k.1)
        .sum();
    let mine = &charged
        [charged.partition_point(|c| c.start < start)..charged.partition_point(|c| c.start < end)];
    let tflop = mine
        .iter()
        .filter(|c| c.cost.family.tensor_cores())
        .map(|c| c.work().0)
        .sum::<f64>()
        / 1e12;
    let ns = (end - start).max(1) as f64;
    let (mfu, roofline_ms) = match peaks {
        Some(p) => {
            let at_peak: f64 = mine.iter().map(|c| c.peak_ns(p)).sum();
            let charged_ns: i64 = mine.iter().map(|c| c.dur).sum();
            let roof: f64 = mine.iter().map(|c| c.roofline_ns(p)).sum();
            (
                Some(at_peak / ns),
                Some((roof + (kernel_ns - charged_ns) as f64) / 1e6),
            )
        }
        None => (None, None),
    };
    StepRoofline {
        step: number,
        ms: ns / 1e6,
        kernel_ms: kernel_ns as f64 / 1e6,
        tflop,
        mfu,
        roofline_ms,
    }
}

/// Kernels grouped by name and op, most time lost first.
fn ranked(t: &Trace, charged: &[Charged], peaks: Option<&Peaks>) -> Vec<KernelRoofline> {
    #[derive(Default)]
    struct Sum {
        calls: u64,
        ns: i64,
        flops: f64,
        bytes: f64,
        roofline_ns: f64,
        compute_ns: f64,
        memory_ns: f64,
        dtype: Option<Dtype>,
    }
    let mut groups: FxHashMap<(StrId, StrId), Sum> = FxHashMap::default();
    for c in charged {
        let s = groups.entry((c.name, c.op)).or_default();
        let (flops, bytes) = c.work();
        s.calls += 1;
        s.ns += c.dur;
        s.flops += flops;
        s.bytes += bytes;
        if let Some(p) = peaks {
            let (compute, memory) = c.roofs_ns(p);
            s.roofline_ns += compute.max(memory);
            s.compute_ns += compute;
            s.memory_ns += memory;
        }
        s.dtype.get_or_insert(c.cost.dtype);
    }
    let mut rows: Vec<KernelRoofline> = groups
        .into_iter()
        .map(|((name, op), s)| {
            let secs = (s.ns.max(1)) as f64 / 1e9;
            let intensity = s.flops / s.bytes.max(1.0);
            let ms = s.ns as f64 / 1e6;
            let roofline_ms = peaks.map(|_| s.roofline_ns / 1e6);
            KernelRoofline {
                name: t.strings.get(name).to_string(),
                op: t.strings.get(op).to_string(),
                dtype: s.dtype.map_or("", Dtype::label).to_string(),
                calls: s.calls,
                ms,
                gflop: s.flops / 1e9,
                gbytes: s.bytes / 1e9,
                tflops: s.flops / secs / 1e12,
                gbps: s.bytes / secs / 1e9,
                intensity,
                // Compute-bound where its FLOPs take longer at peak than its bytes.
                bound: roofline_ms.map(|_| {
                    if s.compute_ns > s.memory_ns {
                        "compute"
                    } else {
                        "memory"
                    }
                    .to_string()
                }),
                roofline_ms,
                share: roofline_ms.map(|r| r / ms.max(1e-9)),
                lost_ms: roofline_ms.map(|r| (ms - r).max(0.0)),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        let key = |r: &KernelRoofline| r.lost_ms.unwrap_or(r.ms);
        key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
    });
    rows.truncate(TOP_KERNELS);
    rows
}
