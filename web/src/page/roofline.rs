//! The Roofline tab: the main GPU's kernels against the device's roofs (the report's
//! `roofline::Roofline`): a log-log chart, the kernels' table, coverage and step MFU; or why the
//! trace allows none.

use std::rc::Rc;

use torchtraceap::roofline::{KernelRoofline, PeaksEntry, Roofline};
use yew::prelude::*;

use super::charts::{legend, Series};
use super::table::{column, count_f, Column, Row, Table};
use crate::format::{ms, pct};
use crate::protocol::Outcome;

#[derive(Properties, PartialEq)]
pub struct RooflineProps {
    pub file: Rc<Outcome>,
}

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 110.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 40.0;

const POINTS: [Series; 2] = [
    Series {
        label: "compute-bound kernel",
        class: "compute",
    },
    Series {
        label: "memory-bound kernel",
        class: "memory",
    },
];

/// A log10 axis over whole decades `lo..=hi`, onto pixels `from..to`.
struct Axis {
    lo: i32,
    hi: i32,
    from: f64,
    to: f64,
}

impl Axis {
    /// The decades holding every positive value, at least one.
    fn over(values: impl Iterator<Item = f64>, from: f64, to: f64) -> Axis {
        let (min, max) = values
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let lo = min.log10().floor() as i32;
        let hi = (max.log10().ceil() as i32).max(lo + 1);
        Axis { lo, hi, from, to }
    }

    fn at(&self, v: f64) -> f64 {
        let f = (v.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo);
        self.from + f * (self.to - self.from)
    }

    fn min(&self) -> f64 {
        10f64.powi(self.lo)
    }
}

/// A decade's label: `0.01`, `1`, `1000`, `1e5`.
fn decade(k: i32) -> String {
    if (-3..=4).contains(&k) {
        format!("{}", 10f64.powi(k))
    } else {
        format!("1e{k}")
    }
}

/// The compute ceilings the device has, TFLOP/s, lowest first.
fn ceilings(p: &PeaksEntry) -> Vec<(&'static str, f64)> {
    [
        ("fp32", Some(p.fp32_tflops)),
        ("TF32", p.tf32_tflops),
        ("fp16/bf16", Some(p.fp16_tflops)),
        ("fp8", p.fp8_tflops),
    ]
    .into_iter()
    .filter_map(|(label, v)| Some((label, v?)))
    .collect()
}

/// Whether a kernel can sit on a log-log chart: it did FLOPs.
fn plotted(k: &KernelRoofline) -> bool {
    k.tflops > 0.0 && k.intensity > 0.0
}

fn tooltip(k: &KernelRoofline) -> String {
    let mut text = format!(
        "{}\n{} ({}), {} calls, {}\n{:.2} TFLOP/s, {:.1} GB/s, {:.1} FLOP/B",
        k.name,
        k.op,
        k.dtype,
        k.calls,
        ms(k.ms),
        k.tflops,
        k.gbps,
        k.intensity
    );
    if let (Some(share), Some(lost), Some(bound)) = (k.share, k.lost_ms, &k.bound) {
        text.push_str(&format!(
            "\n{} of its roofline ({bound}-bound), {} lost",
            pct(100.0 * share),
            ms(lost)
        ));
    }
    text
}

/// The log-log chart: achieved TFLOP/s over FLOP/B, the roofs where the device is known.
fn chart(r: &Roofline) -> Html {
    let kernels: Vec<&KernelRoofline> = r.kernels.iter().filter(|k| plotted(k)).collect();
    let roofs = r.peaks.as_ref().map(|p| (p.gbps, ceilings(p)));
    // Where each ceiling meets the memory slope, FLOP/B (TFLOP/s over TB/s).
    let ridges: Vec<f64> = roofs
        .iter()
        .flat_map(|(gbps, c)| c.iter().map(move |(_, t)| t * 1e3 / gbps))
        .collect();
    let x = Axis::over(
        kernels
            .iter()
            .map(|k| k.intensity)
            .chain(ridges.iter().copied()),
        LEFT,
        WIDTH - RIGHT,
    );
    let y = Axis::over(
        kernels
            .iter()
            .map(|k| k.tflops)
            .chain(roofs.iter().flat_map(|(_, c)| c.iter().map(|(_, t)| *t))),
        HEIGHT - BOTTOM,
        TOP,
    );
    let grid_x = (x.lo..=x.hi).map(|k| {
        let px = x.at(10f64.powi(k));
        html! {
            <g>
                <line class="grid" x1={px.to_string()} x2={px.to_string()} y1={TOP.to_string()} y2={(HEIGHT - BOTTOM).to_string()} />
                <text class="tick" x={px.to_string()} y={(HEIGHT - BOTTOM + 14.0).to_string()} text-anchor="middle">{decade(k)}</text>
            </g>
        }
    });
    let grid_y = (y.lo..=y.hi).map(|k| {
        let py = y.at(10f64.powi(k));
        html! {
            <g>
                <line class="grid" x1={LEFT.to_string()} x2={(WIDTH - RIGHT).to_string()} y1={py.to_string()} y2={py.to_string()} />
                <text class="tick" x={(LEFT - 4.0).to_string()} y={(py + 4.0).to_string()} text-anchor="end">{decade(k)}</text>
            </g>
        }
    });
    let roof_lines = roofs.iter().map(|(gbps, ceilings)| {
        // The memory slope: TFLOP/s = GB/s × FLOP/B / 1000, from the chart's floor or left edge
        // up to the highest ridge.
        let top = ridges.iter().copied().fold(0.0, f64::max);
        let start = x.min().max(y.min() * 1e3 / gbps);
        let slope = html! {
            <line class="roof memory" x1={x.at(start).to_string()} y1={y.at(start * gbps / 1e3).to_string()}
                  x2={x.at(top).to_string()} y2={y.at(top * gbps / 1e3).to_string()}>
                <title>{format!("memory: {gbps} GB/s")}</title>
            </line>
        };
        let flat = ceilings.iter().map(|(label, tflops)| {
            let (x0, py) = (x.at(tflops * 1e3 / gbps), y.at(*tflops));
            html! {
                <g>
                    <line class="roof compute" x1={x0.to_string()} y1={py.to_string()}
                          x2={(WIDTH - RIGHT).to_string()} y2={py.to_string()}>
                        <title>{format!("{label}: {tflops} TFLOP/s")}</title>
                    </line>
                    <text class="tick roof-label" x={(WIDTH - RIGHT + 4.0).to_string()} y={(py + 4.0).to_string()}>
                        {format!("{label} {tflops}")}
                    </text>
                </g>
            }
        });
        html! { <g>{slope}{ for flat }</g> }
    });
    let largest = kernels.iter().map(|k| k.ms).fold(0.0, f64::max).max(1e-12);
    let mut by_size = kernels.clone();
    by_size.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    let points = by_size.iter().map(|k| {
        let radius = 3.0 + 11.0 * (k.ms / largest).sqrt();
        let class = classes!("point", k.bound.clone().unwrap_or_else(|| "achieved".to_string()));
        html! {
            <circle {class} cx={x.at(k.intensity).to_string()} cy={y.at(k.tflops).to_string()} r={radius.to_string()}>
                <title>{tooltip(k)}</title>
            </circle>
        }
    });
    let title = "Kernels against the roofline (log-log; a point's area is its time)";
    html! {
        <figure class="chart roofline-chart">
            <figcaption>{title}</figcaption>
            <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img" aria-label={title}>
                { for grid_x }
                { for grid_y }
                { for roof_lines }
                { for points }
                <text class="tick axis-label" x={((LEFT + WIDTH - RIGHT) / 2.0).to_string()} y={(HEIGHT - 6.0).to_string()}
                      text-anchor="middle">{"arithmetic intensity (FLOP/B)"}</text>
                <text class="tick axis-label" x="12" y={(TOP + 4.0).to_string()}
                      transform={format!("rotate(-90 12 {})", TOP + 4.0)} text-anchor="end">{"achieved TFLOP/s"}</text>
            </svg>
            if r.peaks.is_some() { { legend(&POINTS) } }
        </figure>
    }
}

fn tflops(v: f64) -> String {
    format!("{v:.2}")
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

/// A share of the roofline (0–1); `-` without the device's peaks.
fn share(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else {
        pct(100.0 * v)
    }
}

/// Time lost against the roofline; `-` without the device's peaks.
fn lost(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else {
        ms(v)
    }
}

const TEXTS: [&str; 3] = ["Op", "Dtype", "Bound"];

const COLUMNS: [Column; 7] = [
    column("Calls", count_f),
    column("Time", ms),
    column("TFLOP/s", tflops),
    column("GB/s", one_decimal),
    column("FLOP/B", one_decimal),
    column("Share of roofline", share),
    column("Lost", lost),
];

fn table(r: &Roofline) -> Html {
    let rows: Vec<Row> = r
        .kernels
        .iter()
        .map(|k| Row {
            name: k.name.clone(),
            texts: vec![
                k.op.clone(),
                k.dtype.clone(),
                k.bound.clone().unwrap_or_else(|| "-".to_string()),
            ],
            values: vec![
                k.calls as f64,
                k.ms,
                k.tflops,
                k.gbps,
                k.intensity,
                k.share.unwrap_or(f64::NAN),
                k.lost_ms.unwrap_or(f64::NAN),
            ],
        })
        .collect();
    // The report ranks by time lost; by time where the device is unknown.
    let (caption, sorted_by) = match r.peaks {
        Some(_) => ("Kernels furthest from their roofline", 6),
        None => ("Kernels with counted work, by time", 1),
    };
    html! {
        <Table {caption} texts={&TEXTS[..]} columns={&COLUMNS[..]} rows={Rc::new(rows)} {sorted_by} />
    }
}

/// What the trace allowed: shapes, counted work, memory events.
fn coverage(r: &Roofline) -> String {
    let c = &r.coverage;
    let of = |v: f64| pct(100.0 * v / c.kernel_ms.max(1e-9));
    format!(
        "Shapes recorded for {} of GPU kernel time ({} of kernels on the main GPU); FLOPs and bytes \
         counted for {}. {}",
        of(c.shapes_ms),
        ms(c.kernel_ms),
        of(c.counted_ms),
        if c.memory_events == 0 {
            "No memory events (record with profile_memory=True).".to_string()
        } else {
            format!("{} memory events.", c.memory_events)
        }
    )
}

/// The device's line: its peaks and their source, or that it is unknown.
fn device(r: &Roofline) -> String {
    let named = if r.device.is_empty() {
        "The trace names no device".to_string()
    } else {
        r.device.clone()
    };
    let Some(p) = &r.peaks else {
        let which = match &r.matched_by {
            Some(by) if !r.ambiguous.is_empty() => format!(
                "{named}: its properties ({by}) fit {}, ambiguous",
                r.ambiguous.join(", ")
            ),
            _ if r.device.is_empty() => named,
            _ => format!("{} is not in the peaks table", r.device),
        };
        return format!("{which}: achieved rates only, without roofs, roofline shares or MFU.");
    };
    format!(
        "{named}: peaks of the {}{} from the {}: {}; memory {} GB/s.",
        p.device,
        r.matched_by
            .as_ref()
            .map_or(String::new(), |by| format!(" (matched by {by})")),
        p.source,
        ceilings(p)
            .iter()
            .map(|(label, t)| format!("{label} {t} TFLOP/s"))
            .collect::<Vec<_>>()
            .join(", "),
        p.gbps
    )
}

/// Why there is no chart, where there is none.
fn missing(r: &Roofline) -> Option<String> {
    let c = &r.coverage;
    if c.kernel_ms == 0.0 {
        Some("No roofline: no kernels ran on the main GPU.".to_string())
    } else if c.shapes_ms == 0.0 {
        Some(
            "No roofline: the trace records no operator shapes, so no kernel's FLOPs or bytes can \
             be counted. Record with torch.profiler.profile(record_shapes=True)."
                .to_string(),
        )
    } else if r.kernels.is_empty() {
        Some(
            "No roofline: none of the operators with shapes has a FLOP or byte formula (matrix, \
             convolution, attention, normalization, element-wise)."
                .to_string(),
        )
    } else {
        None
    }
}

#[function_component(RooflineView)]
pub fn roofline_view(props: &RooflineProps) -> Html {
    let Some(a) = props.file.analyzed() else {
        return Html::default();
    };
    let Some(r) = &a.report.roofline else {
        return html! {
            <section class="roofline">
                <p class="roofline-none">{"No roofline: the trace holds no GPU kernels (a CPU-only trace), so there is nothing to place against a device's roofs."}</p>
            </section>
        };
    };
    let mfu = r.mfu_text().map(|mfu| {
        let (step, roof) = r.mean_step_ms();
        format!(
            "Step MFU {mfu} (steady-state mean of {} step{}): the steps' kernels would take {} at \
             the roofline; the step takes {}.{}",
            r.steps.len(),
            if r.steps.len() == 1 { "" } else { "s" },
            ms(roof),
            ms(step),
            r.mfu_bound().map_or(String::new(), |b| format!(" {b}"))
        )
    });
    let off_chart = r.kernels.iter().filter(|k| !plotted(k)).count();
    html! {
        <section class="roofline">
            <p class="roofline-device">{device(r)}</p>
            <p class="roofline-coverage">{coverage(r)}</p>
            if let Some(why) = missing(r) {
                <p class="roofline-none">{why}</p>
            } else {
                if let Some(mfu) = mfu {
                    <p class="roofline-mfu">{mfu}</p>
                }
                if off_chart < r.kernels.len() {
                    { chart(r) }
                }
                if off_chart > 0 {
                    <p class="roofline-off">{format!(
                        "{off_chart} of the {} kernels do no FLOPs (memory work only): in the table, not on the chart.",
                        r.kernels.len()
                    )}</p>
                }
                { table(r) }
            }
        </section>
    }
}
