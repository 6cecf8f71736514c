//! `torch.compile` graph breaks and recompilations, where the trace shows them, and the time it
//! spent compiling and autotuning, left out of the steady state (`window::Compiling`): notes.

use super::contract::{About, Gate, Note, Observer};
use crate::analysis::Analysis;
use crate::model::EventKind;
use crate::window::{Compiling, FIRST_CALL_SLOWDOWN};

pub(crate) struct GraphBreaks;

const GRAPH_BREAKS_ABOUT: About = About {
    id: "compile-graph-breaks",
    title: "torch.compile splits the model into several graphs or recompiles",
    rule: "more than one \"Torch-Compiled Region\" per steady-state step (graph breaks), or a region whose id shows a recompilation (\"0/1\" and later)",
    gates: &[],
    fixes: &[],
};

impl Observer for GraphBreaks {
    fn about(&self) -> &'static About {
        &GRAPH_BREAKS_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let e = &t.events;
        let (mut regions, mut recompiled) = (0u64, Vec::new());
        for i in t.recorded() {
            // The name first: a step lookup per event costs more than the whole scan.
            if !matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation) {
                continue;
            }
            let name = t.name_of(i);
            let Some(id) = name.strip_prefix("Torch-Compiled Region") else {
                continue;
            };
            if a.steady_step_at(e.start[i]).is_none() {
                continue;
            }
            regions += 1;
            // "Torch-Compiled Region: 0/1": frame 0, compiled for the second time.
            let again = id
                .rsplit('/')
                .next()
                .and_then(|n| n.trim().parse::<u32>().ok())
                .is_some_and(|n| n > 0);
            if again && !recompiled.iter().any(|r: &String| r == name) {
                recompiled.push(name.to_string());
            }
        }
        let per_step = a.per_step(regions as f64);
        (per_step > 1.0 || !recompiled.is_empty()).then(|| self.about().note(format!(
                "{per_step:.0} compiled regions per step{}; find the breaks with TORCH_LOGS=\"graph_breaks,recompiles\"",
                if recompiled.is_empty() {
                    String::new()
                } else {
                    format!("; recompiled: {}", recompiled.join(", "))
                }
            )))
    }
}

pub(crate) struct CompileTime;

/// A compiled region's first call this many times slower than its later calls compiled.
const FIRST_CALL: Gate = Gate {
    quantity: "a compiled region's first call over the median of its later calls, times",
    threshold: FIRST_CALL_SLOWDOWN,
};

const COMPILE_TIME_ABOUT: About = About {
    id: "compile-time",
    title: "torch.compile's compilation and autotuning, left out",
    rule: "host ranges that compile or autotune (Dynamo's and Inductor's \"(dynamo_timed)\" ranges, \"autotune\"), or a compiled region's first call more than {0} times slower than the median of its later ones (at least 2): a step holding any is warm-up, a first step's lead of them its cold start; the kernels launched in them are autotuning benchmarks",
    gates: &[FIRST_CALL],
    fixes: &[],
};

impl Observer for CompileTime {
    fn about(&self) -> &'static About {
        &COMPILE_TIME_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let compiling = &a.steps.compiling;
        let longest = compiling.iter().max_by_key(|c| c.end - c.start)?;
        let e = &a.trace.events;
        let total: i64 = compiling.iter().map(|c| c.end - c.start).sum();
        let (mut benchmarks, mut benchmark_ns) = (0u64, 0i64);
        for c in compiling {
            for g in a.steps.launched_during(c.start, c.end) {
                if e.kind[g as usize] == EventKind::GpuKernel {
                    benchmarks += 1;
                    benchmark_ns += e.dur[g as usize];
                }
            }
        }
        let (mut held, mut outside) = (Vec::new(), total);
        for s in &a.steps.steps {
            let cold = s
                .cold_start
                .map_or(0, |c| in_span(compiling, c.start, c.end));
            if cold > 0 {
                held.push(format!(
                    "{:.1} ms in step {}'s cold start",
                    cold as f64 / 1e6,
                    s.number
                ));
            }
            let rest = in_span(compiling, s.start, s.end);
            if rest > 0 {
                let how = if s.warmup {
                    "warm-up step"
                } else {
                    "steady step"
                };
                held.push(format!("{:.1} ms in {how} {}", rest as f64 / 1e6, s.number));
            }
            outside -= cold + rest;
        }
        if outside > 0 {
            held.push(format!("{:.1} ms outside the steps", outside as f64 / 1e6));
        }
        Some(self.about().note(format!(
            "{:.1} ms of compilation and autotuning in {} (the longest: {}), launching {benchmarks} kernels ({:.3} ms of GPU time: autotuning benchmarks, first calls); {}; the findings read only the steady steps",
            total as f64 / 1e6,
            match compiling.len() {
                1 => "1 range".to_string(),
                n => format!("{n} ranges"),
            },
            a.event_ref(longest.event as usize),
            benchmark_ns as f64 / 1e6,
            held.join(", "),
        )))
    }
}

/// Nanoseconds of `compiling` in `[start, end)`.
fn in_span(compiling: &[Compiling], start: i64, end: i64) -> i64 {
    compiling
        .iter()
        .map(|c| (c.end.min(end) - c.start.max(start)).max(0))
        .sum()
}
