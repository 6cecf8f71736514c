//! The Run view: the loaded traces as the ranks of one run (`run::RunView` of their profiles,
//! made here: kilobytes of figures): stragglers and load imbalance, a chart of each rank's own
//! work and collective wait, the ranks' table and each step's own work per rank with its
//! critical rank.

use std::rc::Rc;

use torchtraceap::profile::Profile;
use torchtraceap::run::render::markdown;
use torchtraceap::run::{is_run, is_slow, steps_text, RunView};
use yew::prelude::*;

use super::charts::{stacked_bars, Bar, Series};
use super::export::download;
use super::share::ViewShare;
use crate::format::{ms, pct};
use crate::protocol::Outcome;

#[derive(Properties, PartialEq)]
pub struct RunProps {
    pub files: Vec<Rc<Outcome>>,
}

const SERIES: [Series; 2] = [
    Series {
        label: "own work",
        class: "busy",
    },
    Series {
        label: "collective wait",
        class: "host-wait",
    },
];

/// The profiles of the loaded traces, when they are the ranks of one run (`run::is_run`).
pub fn profiles(files: &[Rc<Outcome>]) -> Option<Vec<Profile>> {
    let profiles: Vec<Profile> = files
        .iter()
        .filter_map(|f| f.analyzed()?.profile.clone())
        .collect();
    is_run(&profiles).then_some(profiles)
}

#[function_component(Run)]
pub fn run(props: &RunProps) -> Html {
    let Some(profiles) = profiles(&props.files) else {
        return html! { <p class="notice">{"Load the traces of two or more ranks of one run."}</p> };
    };
    html! { <RunPanel profiles={Rc::new(profiles)} shared=false /> }
}

#[derive(Properties, PartialEq)]
pub struct RunPanelProps {
    /// The ranks' profiles (`run::is_run`).
    pub profiles: Rc<Vec<Profile>>,
    /// Opened from a link: no Share button.
    pub shared: bool,
}

/// The run view of the ranks' profiles: the loaded traces', or a link's.
#[function_component(RunPanel)]
pub fn run_panel(props: &RunPanelProps) -> Html {
    let v = Rc::new(RunView::new(&props.profiles));
    let save = {
        let v = Rc::clone(&v);
        Callback::from(move |_: MouseEvent| {
            // A refused download changes nothing on the page; the browser says why.
            let _ = download("run.md", "text/markdown", &markdown(&v));
        })
    };
    let bars: Vec<Bar> = v
        .ranks
        .iter()
        .map(|r| Bar {
            label: format!("rank {}", r.rank),
            values: vec![r.step_ms - r.collective_wait_ms, r.collective_wait_ms],
        })
        .collect();
    html! {
        <section class="run">
            <h2>{format!("Run: {} ranks", v.ranks.len())}</h2>
            <p class="export"><button class="save-run" onclick={save}>{"Save as Markdown"}</button>
                if !props.shared { <ViewShare profiles={Rc::clone(&props.profiles)} comparison=false /> }</p>
            if v.findings.is_empty() {
                <p class="notice">{format!(
                    "No straggler: in every steady step each rank's own work is within {} % (or {} ms) of the median rank's.",
                    torchtraceap::run::STRAGGLER_MARGIN_PCT, torchtraceap::run::STRAGGLER_MIN_MS)}</p>
            }
            { for v.findings.iter().map(|f| html! {
                <div class={classes!("finding", "run-finding", f.severity.clone())}>
                    <h3><code>{&f.id}</code>{format!(" rank {} ({})", f.rank, f.severity)}</h3>
                    <p>{&f.summary}</p>
                    <p class="worst-steps">{format!("Steps: {}", f.steps.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))}</p>
                </div>
            }) }
            { stacked_bars("Mean steady step per rank: own work and collective wait", &SERIES, &bars, ms) }
            <table class="run-ranks">
                <thead><tr><th>{"rank"}</th><th>{"trace"}</th><th>{"step"}</th><th>{"GPU busy"}</th>
                    <th>{"exposed comm"}</th><th>{"collectives"}</th><th>{"collective wait"}</th><th>{"critical in"}</th></tr></thead>
                <tbody>
                    { for v.ranks.iter().map(|r| html! {
                        <tr><td class="num">{r.rank}</td><td class="name" title={r.label.clone()}>{&r.label}</td>
                            <td class="num">{ms(r.step_ms)}</td>
                            <td class="num">{r.gpu_busy_pct.map_or("—".to_string(), pct)}</td>
                            <td class="num">{ms(r.exposed_comm_ms)}</td><td class="num">{ms(r.collective_ms)}</td>
                            <td class="num">{ms(r.collective_wait_ms)}</td>
                            <td class="num">{steps_text(r.critical_steps)}</td></tr>
                    }) }
                </tbody>
            </table>
            <table class="run-steps">
                <thead><tr><th>{"step"}</th>
                    { for v.ranks.iter().map(|r| html! { <th>{format!("rank {}", r.rank)}</th> }) }
                    <th>{"median"}</th><th>{"critical rank"}</th></tr></thead>
                <tbody>
                    { for v.steps.iter().map(|s| html! {
                        <tr><td class="num">{s.step}</td>
                            { for s.own_ms.iter().map(|o| html! {
                                <td class={classes!("num", o.is_some_and(|o| is_slow(o, s.median_own_ms)).then_some("slow"))}>{o.map_or("—".to_string(), ms)}</td>
                            }) }
                            <td class="num">{ms(s.median_own_ms)}</td>
                            <td class="num">{s.critical_rank.map_or("—".to_string(), |r| r.to_string())}</td></tr>
                    }) }
                </tbody>
            </table>
        </section>
    }
}
