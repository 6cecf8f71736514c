//! The Modules tab: GPU and CPU time per model module (`modules::ModuleTree`, made by the
//! worker), as a tree table whose siblings sort by the chosen column, down to a chosen depth,
//! with the largest second-level modules' GPU time as a chart.

use std::rc::Rc;

use torchtraceap::modules::{preorder, ModuleNode, ModuleTree};
use torchtraceap::pct as share;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

use super::charts::{stacked_bars, Bar, Series};
use crate::format::{count, ms, pct};
use crate::protocol::Outcome;

#[derive(Properties, PartialEq)]
pub struct ModulesProps {
    pub file: Rc<Outcome>,
}

/// What siblings sort by.
#[derive(Clone, Copy, PartialEq)]
enum Key {
    Gpu,
    Cpu,
    Calls,
    Name,
}

const KEYS: [(Key, &str); 4] = [
    (Key::Gpu, "GPU time"),
    (Key::Cpu, "CPU time"),
    (Key::Calls, "calls"),
    (Key::Name, "name"),
];

/// Bars in the chart (more would overlap their labels).
const CHART_BARS: usize = 8;

const SERIES: [Series; 1] = [Series {
    label: "GPU time",
    class: "busy",
}];

/// The nodes in preorder with siblings ordered by `key` (largest first; names A to Z), down to
/// `depth`.
fn ordered(tree: &ModuleTree, key: Key, depth: usize) -> Vec<usize> {
    preorder(&tree.nodes, |a, b| match key {
        Key::Gpu => b.gpu_ns.cmp(&a.gpu_ns),
        Key::Cpu => b.cpu_ns.cmp(&a.cpu_ns),
        Key::Calls => b.calls.cmp(&a.calls),
        Key::Name => a.name.cmp(&b.name),
    })
    .into_iter()
    .filter(|&k| tree.nodes[k].depth <= depth)
    .collect()
}

fn row(tree: &ModuleTree, n: &ModuleNode) -> Html {
    let indent = "\u{a0}\u{a0}".repeat(n.depth);
    html! {
        <tr>
            <td class="module-name" title={n.path.clone()}>
                {indent}{&n.name}
                if !n.module { <span class="label-tag">{" (label)"}</span> }
            </td>
            <td class="num">{ms(n.gpu_ns as f64 / 1e6)}</td>
            <td class="num">{pct(share(n.gpu_ns, tree.gpu_ns))}</td>
            <td class="num">{pct(share(n.backward_gpu_ns, n.gpu_ns))}</td>
            <td class="num">{ms(n.cpu_ns as f64 / 1e6)}</td>
            <td class="num">{count(n.calls)}</td>
            <td class="num">{count(n.kernels)}</td>
        </tr>
    }
}

#[function_component(Modules)]
pub fn modules(props: &ModulesProps) -> Html {
    let key = use_state(|| Key::Gpu);
    let depth = use_state(|| 3usize);
    let Some(tree) = props.file.analyzed().and_then(|a| a.modules.as_ref()) else {
        return Html::default();
    };
    let on_key = {
        let key = key.clone();
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            let k = select.selected_index().max(0) as usize;
            key.set(KEYS[k.min(KEYS.len() - 1)].0);
        })
    };
    let on_depth = {
        let depth = depth.clone();
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            depth.set(select.selected_index().max(0) as usize);
        })
    };
    let max_depth = tree.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    let mut second: Vec<&ModuleNode> = tree
        .nodes
        .iter()
        .filter(|n| n.depth == 1 && n.gpu_ns > 0)
        .collect();
    second.sort_by_key(|n| std::cmp::Reverse(n.gpu_ns));
    let bars: Vec<Bar> = second
        .iter()
        .take(CHART_BARS)
        .map(|n| Bar {
            label: n.name.clone(),
            values: vec![n.gpu_ns as f64 / 1e6],
        })
        .collect();
    html! {
        <section class="modules">
            <p>{format!(
                "GPU work {} in all, {} inside module frames: kernels count for the module whose op \
                 launched them, backward kernels for the module that ran forward.",
                ms(tree.gpu_ns as f64 / 1e6),
                pct(share(tree.gpu_ns - tree.outside_gpu_ns, tree.gpu_ns))
            )}</p>
            if !bars.is_empty() {
                { stacked_bars("GPU time of the largest modules one level down (a model's blocks)", &SERIES, &bars, ms) }
            }
            <div class="compare-pickers">
                <label>{"Sort siblings by: "}
                    <select class="module-sort" onchange={on_key}>
                        { for KEYS.iter().map(|(k, label)| html! {
                            <option selected={*k == *key}>{*label}</option>
                        }) }
                    </select>
                </label>
                <label>{"Depth: "}
                    <select class="module-depth" onchange={on_depth}>
                        { for (0..=max_depth).map(|d| html! {
                            <option selected={d == *depth}>{d.to_string()}</option>
                        }) }
                    </select>
                </label>
            </div>
            <table class="module-tree">
                <thead><tr><th>{"module"}</th><th>{"GPU"}</th><th>{"of GPU work"}</th>
                    <th>{"backward"}</th><th>{"CPU"}</th><th>{"calls"}</th><th>{"kernels"}</th></tr></thead>
                <tbody>
                    { for ordered(tree, *key, *depth).into_iter().map(|k| row(tree, &tree.nodes[k])) }
                </tbody>
            </table>
        </section>
    }
}
