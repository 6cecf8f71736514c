//! The overview: what the trace is (devices, rank, steps, format), where each step's time goes,
//! and a serving capture's iterations by kind.

use std::rc::Rc;

use torchtraceap::memory::{self, MemorySummary};
use torchtraceap::roofline::Roofline;
use torchtraceap::serving::Serving;
use torchtraceap::Spread;
use yew::prelude::*;

use super::charts::{heat_strip, percent_area, stacked_bars, Bar, Cell, Series};
use crate::format::{bytes, count, ms, pct};
use crate::protocol::Outcome;

#[derive(Properties, PartialEq)]
pub struct OverviewProps {
    pub file: Rc<Outcome>,
}

fn fact(label: &str, value: String) -> Html {
    html! { <div class="fact"><dt>{label}</dt><dd>{value}</dd></div> }
}

const STEP_SERIES: [Series; 4] = [
    Series {
        label: "GPU busy",
        class: "busy",
    },
    Series {
        label: "GPU idle: waiting for the host",
        class: "host-wait",
    },
    Series {
        label: "GPU idle: waiting on a kernel",
        class: "kernel-wait",
    },
    Series {
        label: "GPU idle: other",
        class: "other",
    },
];

/// The allocator's memory per device (the report's summary, as the CLI prints it).
fn memory_table(m: &MemorySummary) -> Html {
    if m.devices.is_empty() {
        return html! {
            <p class="memory-summary">{"No memory events (record with profile_memory=True)."}</p>
        };
    }
    html! {
        <div class="memory-summary">
            <h3>{format!("Memory ({} allocator events)", count(m.events))}</h3>
            <table class="table">
                <thead><tr>{ for memory::COLUMNS.iter().map(|c| html! { <th>{*c}</th> }) }</tr></thead>
                <tbody>
                    { for m.devices.iter().map(|d| html! {
                        <tr>{ for d.cells().into_iter().map(|c| html! {
                            <td>{c.unwrap_or_else(|| "-".into())}</td>
                        }) }</tr>
                    }) }
                </tbody>
            </table>
        </div>
    }
}

/// A serving capture's figures per kind of iteration (the report's, as the CLI prints them; a
/// link carries these, not each iteration).
fn serving_table(s: &Serving) -> Html {
    const COLUMNS: [&str; 7] = [
        "kind",
        "iterations",
        "time per iteration",
        "GPU busy",
        "host time between iterations",
        "graph replays per iteration",
        "tokens/s",
    ];
    html! {
        <div class="serving">
            <h3>{format!("Serving iterations ({})", count(s.count() as u64))}</h3>
            <table class="table">
                <thead><tr>{ for COLUMNS.iter().map(|c| html! { <th>{*c}</th> }) }</tr></thead>
                <tbody>
                    { for s.kinds.iter().map(|k| html! {
                        <tr>
                            <td>{k.kind.map_or("untyped", |k| k.label())}</td>
                            <td>{k.time.n}</td>
                            <td>{k.time.line()}</td>
                            <td>{pct(k.gpu_busy_pct)}</td>
                            <td>{k.host_gap.as_ref().map_or("-".into(), Spread::line)}</td>
                            <td>{format!("{:.1}", k.graph_replays_per_iteration)}</td>
                            <td>{k.tokens_per_s.map_or("-".into(), |t| format!("{t:.0}"))}</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </div>
    }
}

#[function_component(Overview)]
pub fn overview(props: &OverviewProps) -> Html {
    let Some(a) = props.file.analyzed() else {
        return Html::default();
    };
    let r = &a.report;
    // A saved or shared report has no summary: its facts come from the report alone.
    let s = a.summary.as_ref();
    let devices = match s {
        _ if r.trace.cpu_only => {
            "no GPU work: a CPU-only trace (findings weigh host time)".to_string()
        }
        Some(s) if !s.devices.is_empty() => s
            .devices
            .iter()
            .map(|d| match d.memory_gib {
                Some(m) => format!("{} ({m:.0} GiB)", d.name),
                None => d.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        None if !r.trace.devices.is_empty() => r.trace.devices.join(", "),
        _ => "not recorded".to_string(),
    };
    let rank = match (r.trace.rank, r.trace.world_size) {
        (Some(r), Some(w)) => format!("{r} of {w}"),
        (Some(r), None) => r.to_string(),
        _ => "single process".into(),
    };
    let steps = match r.trace.step_source.as_str() {
        "whole_trace" => "no ProfilerStep ranges: the trace is one step".to_string(),
        source => format!(
            "{} ({} steady, {} warm-up){}",
            r.steps.len(),
            r.trace.steady_steps,
            r.trace.warmup_steps.len(),
            match source {
                "repeated_annotations" =>
                    ", no ProfilerStep: iterations of a repeating record_function range",
                "repeated_ops" => ", no ProfilerStep: iterations of a repeating sequence of ops",
                "serving_iterations" =>
                    ", no ProfilerStep: a serving engine's iterations (its model runner's ranges)",
                _ => "",
            }
        ),
    };
    let trace_facts = s.map(|s| {
        let events: u64 = s.events_by_kind.values().sum();
        let format = format!(
            "{}{}, {}",
            s.format.era_label,
            if s.format.gzip { ", gzip" } else { "" },
            bytes(s.format.input_bytes)
        );
        html! {
            <>
                { fact("Trace span", ms(s.span_ms)) }
                { fact("Events", count(events)) }
                { fact("Format", format) }
                { fact("GPU work linked to its launch", format!("{} of {}", count(s.linked_gpu_events), count(s.gpu_events))) }
                { fact("Memory used to analyze it", bytes(props.file.worker_memory_bytes)) }
            </>
        }
    });
    let bars: Vec<Bar> = r
        .steps
        .iter()
        .map(|st| {
            let busy = st.gpu_busy_pct.unwrap_or(0.0) / 100.0 * st.duration_ms;
            let host = st.idle_host_wait_ms.unwrap_or(0.0);
            let kernel = st.idle_kernel_wait_ms.unwrap_or(0.0);
            let other = (st.duration_ms - busy - host - kernel).max(0.0);
            Bar {
                label: format!("{}{}", st.number, if st.warmup { "*" } else { "" }),
                values: vec![busy, host, kernel, other],
            }
        })
        .collect();
    let cells: Vec<Cell> = r
        .windows
        .iter()
        .filter_map(|w| {
            let p = w.anomaly_probability?;
            Some(Cell {
                start_ms: w.start_ms,
                duration_ms: w.duration_ms,
                value: f64::from(p),
                tooltip: format!(
                    "step {} {}: {:.0}% anomalous{}",
                    w.step,
                    w.phase,
                    p * 100.0,
                    w.predicted_type
                        .as_deref()
                        .map(|t| format!(", most like {t}"))
                        .unwrap_or_default()
                ),
            })
        })
        .collect();
    let step_marks: Vec<(f64, String)> = r
        .windows
        .iter()
        .scan(None, |last, w| {
            let first = *last != Some(w.step);
            *last = Some(w.step);
            Some(first.then(|| (w.start_ms, format!("step {}", w.step))))
        })
        .flatten()
        .collect();
    html! {
        <div class="overview">
            <dl class="facts">
                { fact("Devices", devices) }
                { fact("Rank", rank) }
                { fact("Steps", steps) }
                { fact("Mean step", ms(r.trace.mean_step_ms)) }
                { for r.roofline.as_ref().and_then(Roofline::mfu_text).map(|m| fact("Step MFU", m)) }
                { for r.graphs.as_ref().map(|g| fact("CUDA/HIP graphs", g.line())) }
                { for trace_facts }
            </dl>
            { for r.serving.as_ref().map(serving_table) }
            { for r.memory.as_ref().map(memory_table) }
            if let Some(s) = s.filter(|s| !s.warnings.is_empty()) {
                <ul class="warnings">
                    { for s.warnings.iter().map(|w| html! { <li>{w}</li> }) }
                </ul>
            }
            if !bars.is_empty() {
                { stacked_bars("Step time (warm-up steps marked *)", &STEP_SERIES, &bars, ms) }
            }
            { heat_strip("Window anomaly scores (the window detector; darker is more likely an anti-pattern)", &cells, &step_marks) }
            { for s.iter().flat_map(|s| s.gpu_busy.iter().map(move |g| (s, g))).map(|(s, g)| {
                let device = g.device.map_or_else(|| "GPU".to_string(), |d| format!("GPU {d}"));
                percent_area(
                    &format!("{device} busy over the trace ({} of its active time)", pct(g.busy_pct_of_active)),
                    &g.timeline_pct,
                    s.span_ms,
                    ms,
                )
            }) }
        </div>
    }
}
