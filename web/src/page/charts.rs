//! Small SVG charts: stacked bars and a filled area. Each draws into a fixed viewBox that the
//! page stretches to its width; every mark has a `<title>` tooltip with its exact value.

use yew::prelude::*;

/// One series of a stacked bar chart: its legend label and CSS class (for its colour).
pub struct Series {
    pub label: &'static str,
    pub class: &'static str,
}

/// One bar: its axis label and one value per series, stacked bottom-up.
pub struct Bar {
    pub label: String,
    pub values: Vec<f64>,
}

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 220.0;
const AXIS: f64 = 60.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 20.0;

pub fn legend(series: &[Series]) -> Html {
    html! {
        <ul class="legend">
            { for series.iter().map(|s| html! {
                <li><span class={classes!("swatch", s.class)}></span>{s.label}</li>
            }) }
        </ul>
    }
}

/// Stacked bars with a y axis in `unit`, formatted by `fmt`.
pub fn stacked_bars(title: &str, series: &[Series], bars: &[Bar], fmt: fn(f64) -> String) -> Html {
    let max = bars
        .iter()
        .map(|b| b.values.iter().sum::<f64>())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let plot_w = WIDTH - AXIS;
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = plot_w / bars.len().max(1) as f64;
    let bar_w = (slot * 0.8).max(1.0);
    let label_every = (bars.len() / 20).max(1);
    let rects =
        bars.iter().enumerate().map(|(i, bar)| {
            let x = AXIS + i as f64 * slot + (slot - bar_w) / 2.0;
            let mut y = TOP + plot_h;
            let parts = bar.values.iter().zip(series).map(|(&v, s)| {
            let h = v / max * plot_h;
            y -= h;
            html! {
                <rect class={s.class} x={x.to_string()} y={y.to_string()} width={bar_w.to_string()}
                      height={h.max(0.0).to_string()}>
                    <title>{format!("{}: {} {}", bar.label, s.label, fmt(v))}</title>
                </rect>
            }
        });
            let label = (i % label_every == 0).then(|| html! {
            <text class="tick" x={(x + bar_w / 2.0).to_string()} y={(HEIGHT - 6.0).to_string()}
                  text-anchor="middle">{&bar.label}</text>
        });
            html! { <g>{ for parts }{ for label }</g> }
        });
    let ticks = [0.0, 0.5, 1.0].map(|f| {
        let y = TOP + plot_h - f * plot_h;
        let value = if f == 0.0 { "0".to_string() } else { fmt(f * max) };
        html! {
            <g>
                <line class="grid" x1={AXIS.to_string()} x2={WIDTH.to_string()} y1={y.to_string()} y2={y.to_string()} />
                <text class="tick" x={(AXIS - 4.0).to_string()} y={(y + 4.0).to_string()} text-anchor="end">{value}</text>
            </g>
        }
    });
    html! {
        <figure class="chart">
            <figcaption>{title}</figcaption>
            <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img" aria-label={title.to_string()}>
                { for ticks }
                { for rects }
            </svg>
            { legend(series) }
        </figure>
    }
}

/// A filled area of percentages (0–100) over equal slices of `span_ms`.
pub fn percent_area(title: &str, values: &[f32], span_ms: f64, fmt: fn(f64) -> String) -> Html {
    let plot_w = WIDTH - AXIS;
    let plot_h = HEIGHT - BOTTOM - TOP;
    let step = plot_w / values.len().max(1) as f64;
    let base = TOP + plot_h;
    let mut points = format!("{AXIS},{base}");
    for (i, v) in values.iter().enumerate() {
        let y = base - f64::from(*v) / 100.0 * plot_h;
        let x0 = AXIS + i as f64 * step;
        points.push_str(&format!(" {x0:.2},{y:.2} {:.2},{y:.2}", x0 + step));
    }
    points.push_str(&format!(" {WIDTH},{base}"));
    let mean = values.iter().map(|v| f64::from(*v)).sum::<f64>() / values.len().max(1) as f64;
    let ticks = [0.0, 50.0, 100.0].map(|p| {
        let y = base - p / 100.0 * plot_h;
        html! {
            <g>
                <line class="grid" x1={AXIS.to_string()} x2={WIDTH.to_string()} y1={y.to_string()} y2={y.to_string()} />
                <text class="tick" x={(AXIS - 4.0).to_string()} y={(y + 4.0).to_string()} text-anchor="end">{format!("{p:.0}%")}</text>
            </g>
        }
    });
    html! {
        <figure class="chart">
            <figcaption>{title}</figcaption>
            <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img"
                 aria-label={format!("{title}: {mean:.1}% on average")}>
                { for ticks }
                <polygon class="busy" points={points}>
                    <title>{format!("{mean:.1}% busy on average")}</title>
                </polygon>
                <text class="tick" x={AXIS.to_string()} y={(HEIGHT - 6.0).to_string()}>{"0"}</text>
                <text class="tick" x={WIDTH.to_string()} y={(HEIGHT - 6.0).to_string()} text-anchor="end">{fmt(span_ms)}</text>
            </svg>
        </figure>
    }
}

/// One cell of a heat strip: a time range and a value in 0–1.
pub struct Cell {
    pub start_ms: f64,
    pub duration_ms: f64,
    pub value: f64,
    pub tooltip: String,
}

const STRIP_HEIGHT: f64 = 36.0;

/// Cells placed by time along the strip, coloured by value (transparent at 0, full at 1);
/// `marks` label points of the time axis (e.g. where each step starts).
pub fn heat_strip(title: &str, cells: &[Cell], marks: &[(f64, String)]) -> Html {
    let start = cells
        .iter()
        .map(|c| c.start_ms)
        .fold(f64::INFINITY, f64::min);
    let end = cells
        .iter()
        .map(|c| c.start_ms + c.duration_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    if end <= start {
        return Html::default();
    }
    let plot_w = WIDTH - AXIS;
    let x = |t: f64| AXIS + (t - start) / (end - start) * plot_w;
    let rects = cells.iter().map(|c| {
        let (x0, x1) = (x(c.start_ms), x(c.start_ms + c.duration_ms));
        html! {
            <rect class="heat" x={x0.to_string()} y="0" width={(x1 - x0).max(0.5).to_string()}
                  height={STRIP_HEIGHT.to_string()} fill-opacity={c.value.clamp(0.0, 1.0).to_string()}>
                <title>{&c.tooltip}</title>
            </rect>
        }
    });
    let ticks = marks.iter().map(|(t, label)| {
        let tx = x(*t);
        html! {
            <g>
                <line class="grid" x1={tx.to_string()} x2={tx.to_string()} y1="0" y2={(STRIP_HEIGHT + 4.0).to_string()} />
                <text class="tick" x={(tx + 2.0).to_string()} y={(STRIP_HEIGHT + 14.0).to_string()}>{label}</text>
            </g>
        }
    });
    html! {
        <figure class="chart strip">
            <figcaption>{title}</figcaption>
            <svg viewBox={format!("0 0 {WIDTH} {}", STRIP_HEIGHT + 18.0)} role="img" aria-label={title.to_string()}>
                <rect class="strip-bg" x={AXIS.to_string()} y="0" width={plot_w.to_string()} height={STRIP_HEIGHT.to_string()} />
                { for rects }
                { for ticks }
            </svg>
        </figure>
    }
}
