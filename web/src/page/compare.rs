//! The Compare view: two loaded traces as before and after (`compare::Comparison` of their
//! profiles, made here: kilobytes of figures, never a trace): the verdict, the headline figures,
//! the mean step's split as a chart and a table, the steps paired by position, the GPU work and
//! CPU operators that changed, were added or removed, and the findings fixed, new and unchanged.

use std::rc::Rc;

use torchtraceap::compare::render::{devices, headline, markdown, signed, significance};
use torchtraceap::compare::{Comparison, FindingChange, NameChange, PartChange};
use torchtraceap::profile::Profile;
use torchtraceap::Part;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

use super::charts::{stacked_bars, Bar, Series};
use super::compare_steps::AlignedSteps;
use super::export::download;
use super::share::ViewShare;
use super::table::{column, count_f, Column, Row, Table};
use crate::format::ms;
use crate::protocol::Outcome;

/// Names listed per table in the saved Markdown.
const MARKDOWN_ROWS: usize = 20;

#[derive(Properties, PartialEq)]
pub struct CompareProps {
    /// The loaded files (those without a profile cannot be picked).
    pub files: Vec<Rc<Outcome>>,
    pub before: usize,
    pub after: usize,
    pub on_pick: Callback<(usize, usize)>,
}

fn signed_ms(v: f64) -> String {
    signed(v, 3)
}

/// The second column (the table's initial sort) is the size of the change.
const CHANGE_COLUMNS: [Column; 6] = [
    column("Change, ms/step", signed_ms),
    column("Size of change", ms),
    column("Before, ms/step", ms),
    column("After, ms/step", ms),
    column("Calls before", count_f),
    column("Calls after", count_f),
];

fn rows(list: &[NameChange]) -> Rc<Vec<Row>> {
    Rc::new(
        list.iter()
            .map(|n| Row {
                name: n.name.clone(),
                texts: Vec::new(),
                values: vec![
                    n.delta_ms_per_step(),
                    n.delta_ms_per_step().abs(),
                    n.before_ms_per_step,
                    n.after_ms_per_step,
                    n.before_count as f64,
                    n.after_count as f64,
                ],
            })
            .collect(),
    )
}

fn findings(what: &'static str, list: &[FindingChange]) -> Html {
    html! {
        <tr>
            <th scope="row">{what}</th>
            <td>
                if list.is_empty() { {"none"} }
                { for list.iter().map(|f| html! {
                    <span class="finding-change"><code>{&f.id}</code>
                        {format!(" {} → {}", ms(f.before_ms_per_step), ms(f.after_ms_per_step))}</span>
                }) }
            </td>
        </tr>
    }
}

fn picker(props: &CompareProps, which: &'static str, chosen: usize) -> Html {
    let (before, after, on_pick) = (props.before, props.after, props.on_pick.clone());
    let onchange = Callback::from(move |e: Event| {
        let select: HtmlSelectElement = e.target_unchecked_into();
        let k = select.value().parse().unwrap_or(0);
        on_pick.emit(if which == "Before" {
            (k, after)
        } else {
            (before, k)
        });
    });
    html! {
        <label>{format!("{which}: ")}
            <select class={classes!("compare-pick", which.to_lowercase())} {onchange}>
                { for props.files.iter().enumerate()
                    .filter(|(_, f)| f.analyzed().is_some_and(|a| a.profile.is_some()))
                    .map(|(k, f)| html! {
                        <option value={k.to_string()} selected={k == chosen}>{&f.name}</option>
                    }) }
            </select>
        </label>
    }
}

#[function_component(Compare)]
pub fn compare(props: &CompareProps) -> Html {
    let profile = |k: usize| {
        props
            .files
            .get(k)
            .and_then(|f| f.analyzed())
            .and_then(|a| a.profile.as_ref())
    };
    let swap = {
        let (before, after, on_pick) = (props.before, props.after, props.on_pick.clone());
        Callback::from(move |_: MouseEvent| on_pick.emit((after, before)))
    };
    let pickers = html! {
        <div class="compare-pickers">
            { picker(props, "Before", props.before) }
            <button class="swap" onclick={swap}>{"Swap"}</button>
            { picker(props, "After", props.after) }
        </div>
    };
    let (Some(before), Some(after)) = (profile(props.before), profile(props.after)) else {
        return html! { <section class="compare">{pickers}
        <p class="notice">{"Pick two analyzed traces."}</p></section> };
    };
    html! {
        <section class="compare">
            { pickers }
            if props.before == props.after {
                <p class="notice">{"The same trace on both sides: pick another one as after."}</p>
            }
            <ComparisonView before={Rc::new(before.clone())} after={Rc::new(after.clone())} shared=false />
        </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct ComparisonProps {
    pub before: Rc<Profile>,
    pub after: Rc<Profile>,
    /// Opened from a link: no Share button (the link is the page's address).
    pub shared: bool,
}

/// A comparison of two profiles: the loaded traces', or a link's.
#[function_component(ComparisonView)]
pub fn comparison_view(props: &ComparisonProps) -> Html {
    let c = Rc::new(Comparison::new(&props.before, &props.after));
    let save = {
        let c = Rc::clone(&c);
        Callback::from(move |_: MouseEvent| {
            // A refused download changes nothing on the page; the browser says why.
            let _ = download(
                "comparison.md",
                "text/markdown",
                &markdown(&c, MARKDOWN_ROWS),
            );
        })
    };
    let series: Vec<Series> = c
        .split
        .iter()
        .filter_map(|p| Part::ALL.iter().find(|q| q.id() == p.part))
        .map(|p| Series {
            label: p.label(),
            class: p.id(),
        })
        .collect();
    let bar = |label: &str, side: fn(&PartChange) -> f64| Bar {
        label: label.to_string(),
        values: c.split.iter().map(side).collect(),
    };
    let bars = [bar("before", |p| p.before_ms), bar("after", |p| p.after_ms)];
    let profiles = Rc::new(vec![(*props.before).clone(), (*props.after).clone()]);
    html! {
        <>
            <p class="verdict"><strong>{"Verdict: "}</strong>{&c.verdict}</p>
            <p class="export"><button class="save-compare" onclick={save}>{"Save as Markdown"}</button>
                if !props.shared { <ViewShare {profiles} comparison=true /> }</p>
            <table class="compare-headline">
                <thead><tr><th></th><th>{"before"}</th><th>{"after"}</th><th>{"change"}</th></tr></thead>
                <tbody>
                    <tr><th scope="row">{"trace"}</th><td>{&c.before.label}</td><td>{&c.after.label}</td><td></td></tr>
                    <tr><th scope="row">{"devices"}</th><td>{devices(&c.before.devices)}</td>
                        <td>{devices(&c.after.devices)}</td><td></td></tr>
                    { for headline(&c).into_iter().map(|r| html! {
                        <tr><th scope="row">{&r[0]}</th><td class="num">{&r[1]}</td>
                            <td class="num">{&r[2]}</td><td class="num">{&r[3]}</td></tr>
                    }) }
                </tbody>
            </table>
            <p class="significance">{format!("Step-time change: {}.", significance(&c))}</p>
            if !c.split.is_empty() {
                { stacked_bars("Where the mean steady step goes (main GPU)", &series, &bars, ms) }
            }
            <AlignedSteps before={Rc::clone(&props.before)} after={Rc::clone(&props.after)} />
            <section class="split">
                <h3>{"Steady steps paired by position"}</h3>
                <table>
                    <thead><tr><th>{"before step"}</th><th>{"ms"}</th><th>{"after step"}</th><th>{"ms"}</th></tr></thead>
                    <tbody>
                        { for c.pairs.iter().map(|p| html! {
                            <tr><td class="num">{p.before_step}</td><td class="num">{format!("{:.3}", p.before_ms)}</td>
                                <td class="num">{p.after_step}</td><td class="num">{format!("{:.3}", p.after_ms)}</td></tr>
                        }) }
                    </tbody>
                </table>
            </section>
            <section class="split findings-changes">
                <h3>{"Findings"}</h3>
                <table><tbody>
                    { findings("fixed", &c.findings.fixed) }
                    { findings("new", &c.findings.new) }
                    { findings("unchanged", &c.findings.unchanged) }
                </tbody></table>
            </section>
            <Table caption="GPU work on both sides, by normalized name (whole trace ÷ its steps)"
                columns={&CHANGE_COLUMNS[..]} rows={rows(&c.gpu_work.changed)} />
            <Table caption="GPU work added (only after)" columns={&CHANGE_COLUMNS[..]} rows={rows(&c.gpu_work.added)} />
            <Table caption="GPU work removed (only before)" columns={&CHANGE_COLUMNS[..]} rows={rows(&c.gpu_work.removed)} />
            <Table caption="CPU operators on both sides, by self time" columns={&CHANGE_COLUMNS[..]} rows={rows(&c.cpu_ops.changed)} />
            <Table caption="CPU operators added (only after)" columns={&CHANGE_COLUMNS[..]} rows={rows(&c.cpu_ops.added)} />
            <Table caption="CPU operators removed (only before)" columns={&CHANGE_COLUMNS[..]} rows={rows(&c.cpu_ops.removed)} />
        </>
    }
}
