//! Before and after as two timelines aligned by step: the steady steps the comparison pairs
//! (`compare::paired_steps`), before above after, step `k` of each starting at the same x, each
//! bar as long as its step on one millisecond scale and cut into its split's parts (the step's
//! time by cause, `attribution::Part`), so a shorter or differently made-up step shows where the
//! time went. An SVG drawn from the two profiles (kilobytes), not from the traces.

use std::rc::Rc;

use torchtraceap::compare::paired_steps;
use torchtraceap::profile::{Profile, StepFacts};
use torchtraceap::Part;
use yew::prelude::*;

use super::charts::{legend, Series};
use crate::format::ms;

/// Pairs drawn at most; the rest are counted below the chart.
pub const MAX_PAIRS: usize = 60;
const WIDTH: f64 = 960.0;
/// Room for the lane names on the left.
const LEFT: f64 = 56.0;
const LANE: f64 = 30.0;
/// The lanes' tops: before, then after.
const LANES: [f64; 2] = [18.0, 58.0];
const HEIGHT: f64 = 112.0;
/// The gap after each pair of steps, as a share of the longest step.
const GAP: f64 = 0.04;

#[derive(Properties, PartialEq)]
pub struct StepsProps {
    pub before: Rc<Profile>,
    pub after: Rc<Profile>,
}

fn ms_of(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// One step's bar: its parts (or the whole step without a GPU split), from `x`, at lane `y`.
fn bar(side: &str, s: &StepFacts, x: f64, y: f64, scale: f64) -> Html {
    let mut at = x;
    let title = |what: &str, v: f64| format!("{side} step {}: {what} {}", s.number, ms(v));
    let parts: Vec<(&'static str, String, f64)> = if s.parts_ns.is_empty() {
        vec![(
            "step-whole",
            title("the whole step", ms_of(s.dur_ns)),
            ms_of(s.dur_ns),
        )]
    } else {
        Part::ALL
            .iter()
            .map(|&p| (p, ms_of(s.part(p))))
            .filter(|&(_, v)| v > 0.0)
            .map(|(p, v)| (p.id(), title(p.label(), v), v))
            .collect()
    };
    html! {
        <g class={classes!("aligned-step", side.to_string())} data-step={s.number.to_string()}
            data-ms={format!("{:.6}", ms_of(s.dur_ns))}>
            <rect class="step-frame" x={x.to_string()} y={y.to_string()}
                width={(ms_of(s.dur_ns) * scale).to_string()} height={LANE.to_string()}>
                <title>{title("the step", ms_of(s.dur_ns))}</title>
            </rect>
            { for parts.into_iter().map(|(class, title, v)| {
                let w = v * scale;
                let rect = html! {
                    <rect {class} x={at.to_string()} y={y.to_string()} width={w.to_string()}
                        height={LANE.to_string()}><title>{title}</title></rect>
                };
                at += w;
                rect
            }) }
        </g>
    }
}

#[function_component(AlignedSteps)]
pub fn aligned_steps(props: &StepsProps) -> Html {
    let (before, after) = paired_steps(&props.before, &props.after);
    let pairs: Vec<(&StepFacts, &StepFacts)> = before.into_iter().zip(after).collect();
    if pairs.is_empty() {
        return Html::default();
    }
    let shown = &pairs[..pairs.len().min(MAX_PAIRS)];
    let longest = shown
        .iter()
        .map(|(b, a)| b.dur_ns.max(a.dur_ns))
        .max()
        .unwrap_or(0)
        .max(1);
    let gap = ms_of(longest) * GAP;
    let total: f64 = shown
        .iter()
        .map(|(b, a)| ms_of(b.dur_ns.max(a.dur_ns)) + gap)
        .sum();
    let scale = (WIDTH - LEFT - 4.0) / total.max(f64::MIN_POSITIVE);
    let mut x = LEFT;
    let marks = shown.iter().enumerate().map(|(k, (b, a))| {
        let start = x;
        x += (ms_of(b.dur_ns.max(a.dur_ns)) + gap) * scale;
        html! {
            <g class="aligned-pair" data-pair={k.to_string()}>
                <line class="pair-start" x1={start.to_string()} x2={start.to_string()}
                    y1={(LANES[0] - 4.0).to_string()} y2={(LANES[1] + LANE + 4.0).to_string()} />
                { bar("before", b, start, LANES[0], scale) }
                { bar("after", a, start, LANES[1], scale) }
                if shown.len() <= 30 || k % (shown.len() / 15).max(1) == 0 {
                    <text class="pair-label" x={(start + 2.0).to_string()} y={(LANES[0] - 6.0).to_string()}>
                        {format!("{}", k + 1)}</text>
                }
            </g>
        }
    });
    // A scale bar of a round number of milliseconds, about a tenth of the width.
    let tenth = total / 10.0;
    let unit = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
    ]
    .into_iter()
    .rev()
    .find(|&u| u <= tenth)
    .unwrap_or(0.1);
    let bar_y = LANES[1] + LANE + 14.0;
    let mut series: Vec<Series> = Part::ALL
        .iter()
        .filter(|&&p| shown.iter().any(|(b, a)| b.part(p) > 0 || a.part(p) > 0))
        .map(|p| Series {
            label: p.label(),
            class: p.id(),
        })
        .collect();
    if series.is_empty() {
        series.push(Series {
            label: "the whole step (no GPU split)",
            class: "step-whole",
        });
    }
    html! {
        <figure class="chart aligned-steps">
            <figcaption>{"Before and after aligned by step: steady step k of each starts at the \
                same place; bars share one millisecond scale and show each step's split"}</figcaption>
            <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img"
                aria-label="Before and after, step by step">
                <text class="lane-name" x="2" y={(LANES[0] + 19.0).to_string()}>{"before"}</text>
                <text class="lane-name" x="2" y={(LANES[1] + 19.0).to_string()}>{"after"}</text>
                { for marks }
                <line class="scale-bar" x1={LEFT.to_string()} x2={(LEFT + unit * scale).to_string()}
                    y1={bar_y.to_string()} y2={bar_y.to_string()} />
                <text class="scale-label" x={(LEFT + unit * scale + 4.0).to_string()} y={(bar_y + 4.0).to_string()}>
                    {ms(unit)}</text>
            </svg>
            { legend(&series) }
            if pairs.len() > shown.len() {
                <p class="notice">{format!("The first {} of {} paired steps are drawn.", shown.len(), pairs.len())}</p>
            }
        </figure>
    }
}
