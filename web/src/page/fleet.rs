//! The Fleet view: a fleet report (`fleet::Fleet`, from `scripts/fleet/fleet.py`) opened like a
//! saved report. Which anti-patterns cost the most time across the fleet (with a chart), the
//! worst jobs and traces, the mean step split, the traces that could not be read.
//!
//! The report was checked when read (`Fleet::from_json`): its anti-pattern and part ids are this
//! version's, so their titles come from this page's catalogue. Trace and job names and error
//! messages are the file's own text, shown in text nodes as data.

use std::rc::Rc;

use torchtraceap::fleet::title_of;
use yew::prelude::*;

use super::charts::{stacked_bars, Bar, Series};
use crate::format::{count, ms, pct};
use crate::protocol::Outcome;

/// Rows shown per table; the rest are counted below it.
const ROWS: usize = 25;
/// Bars in the chart of time lost.
const BARS: usize = 10;

const LOST: [Series; 1] = [Series {
    label: "ms lost over every profiled step",
    class: "busy",
}];

#[derive(Properties, PartialEq)]
pub struct FleetProps {
    /// A file that held a fleet report.
    pub file: Rc<Outcome>,
}

fn rank(r: Option<u32>) -> String {
    r.map_or("—".into(), |r| r.to_string())
}

fn ranks(rs: &[u32]) -> String {
    rs.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// "N more not shown", under a table cut at [`ROWS`].
fn more(n: usize) -> Html {
    if n <= ROWS {
        return Html::default();
    }
    html! { <p class="more">{format!("{} more not shown (all of them are in the file).", count((n - ROWS) as u64))}</p> }
}

#[function_component(FleetView)]
pub fn fleet_view(props: &FleetProps) -> Html {
    let Some(f) = props.file.fleet() else {
        return Html::default();
    };
    let bars: Vec<Bar> = f
        .anti_patterns
        .iter()
        .take(BARS)
        .map(|p| Bar {
            label: p.id.clone(),
            values: vec![p.ms_total],
        })
        .collect();
    html! {
        <section class="fleet">
            <div class="notice report-only shared-banner" role="status">
                <p><strong>{"Fleet report, read-only: made by the fleet job (scripts/fleet/fleet.py), not from a trace in this browser."}</strong>
                    {format!(" {}: {} of {} traces analyzed. Trace and job names are shown as the file wrote them; \
                               the anti-patterns' words are this page's own.", props.file.name, count(f.analyzed), count(f.traces))}</p>
            </div>
            <h2>{"Anti-patterns by time lost across the fleet"}</h2>
            if f.anti_patterns.is_empty() {
                <p class="notice">{"No finding in any analyzed trace."}</p>
            } else {
                { stacked_bars("Time lost per anti-pattern, over every profiled step", &LOST, &bars, ms) }
            }
            <table class="fleet-patterns">
                <thead><tr><th>{"anti-pattern"}</th><th>{"traces"}</th><th>{"jobs"}</th>
                    <th>{"ms lost (all steps)"}</th><th>{"ms per step, summed"}</th><th>{"severity"}</th></tr></thead>
                <tbody>
                    { for f.anti_patterns.iter().take(ROWS).map(|p| html! {
                        <tr><td class="pattern">{title_of(&p.id)}{" "}<code>{&p.id}</code></td>
                            <td class="num">{p.traces}</td><td class="num">{p.jobs}</td>
                            <td class="num">{ms(p.ms_total)}</td><td class="num">{ms(p.ms_per_step_sum)}</td>
                            <td>{p.severity.iter().map(|(s, n)| format!("{n} {s}")).collect::<Vec<_>>().join(", ")}</td></tr>
                    }) }
                </tbody>
            </table>
            { more(f.anti_patterns.len()) }
            <h2>{"Worst jobs"}</h2>
            <table class="fleet-jobs">
                <thead><tr><th>{"job"}</th><th>{"traces"}</th><th>{"recoverable ms per step"}</th>
                    <th>{"worst rank"}</th><th>{"slowest rank"}</th><th>{"outlier ranks"}</th><th>{"mean step"}</th></tr></thead>
                <tbody>
                    { for f.jobs.iter().take(ROWS).map(|j| html! {
                        <tr><td class="name" title={j.job.clone()}><code>{&j.job}</code></td>
                            <td class="num">{j.traces}</td><td class="num">{ms(j.recoverable_ms_per_step)}</td>
                            <td class="num">{rank(j.worst_rank)}</td><td class="num">{rank(j.slowest_rank)}</td>
                            <td>{ranks(&j.outlier_ranks)}</td><td class="num">{ms(j.mean_step_ms)}</td></tr>
                    }) }
                </tbody>
            </table>
            { more(f.jobs.len()) }
            <h2>{"Worst traces"}</h2>
            <table class="fleet-traces">
                <thead><tr><th>{"trace"}</th><th>{"rank"}</th><th>{"recoverable"}</th>
                    <th>{"ms per step"}</th><th>{"mean step"}</th><th>{"top finding"}</th></tr></thead>
                <tbody>
                    { for f.worst_traces.iter().take(ROWS).map(|t| html! {
                        <tr><td class="name" title={t.trace.clone()}><code>{&t.trace}</code></td>
                            <td class="num">{rank(t.rank)}</td><td class="num">{pct(t.recoverable_pct)}</td>
                            <td class="num">{ms(t.recoverable_ms_per_step)}</td>
                            <td class="num">{t.mean_step_ms.map_or("—".into(), ms)}</td>
                            <td>{t.top_finding.as_deref().map_or("", title_of)}</td></tr>
                    }) }
                </tbody>
            </table>
            { more(f.worst_traces.len()) }
            <h2>{"Mean step split"}</h2>
            <table class="fleet-split">
                <thead><tr><th>{"part"}</th><th>{"ms per step"}</th></tr></thead>
                <tbody>
                    { for f.split().into_iter().map(|(part, v)| html! {
                        <tr><td>{part.label()}</td><td class="num">{ms(v)}</td></tr>
                    }) }
                </tbody>
            </table>
            if !f.failed.is_empty() {
                <h2>{format!("Not read ({})", f.failed.len())}</h2>
                <ul class="fleet-failed">
                    { for f.failed.iter().take(ROWS).map(|x| html! {
                        <li><code>{&x.trace}</code>{": "}<span class="error-message">{&x.error}</span></li>
                    }) }
                </ul>
                { more(f.failed.len()) }
            }
        </section>
    }
}
