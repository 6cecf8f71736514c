//! Sortable, searchable tables of kernels and operators: a name, text columns, numeric columns.

use std::rc::Rc;

use torchtraceap::summary::{KernelTime, OperatorTime};
use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::format::{count, ms, pct};

/// A numeric column: its heading and how its values print.
pub struct Column {
    pub label: &'static str,
    pub fmt: fn(f64) -> String,
}

/// Columns are told apart by their headings (function pointers do not compare reliably).
impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        self.label == other.label
    }
}

#[derive(PartialEq)]
pub struct Row {
    pub name: String,
    /// One per [`TableProps::texts`] heading.
    pub texts: Vec<String>,
    pub values: Vec<f64>,
}

#[derive(Properties, PartialEq)]
pub struct TableProps {
    pub caption: &'static str,
    /// Headings of the text columns shown after the name.
    #[prop_or_default]
    pub texts: &'static [&'static str],
    pub columns: &'static [Column],
    pub rows: Rc<Vec<Row>>,
    /// The numeric column the rows arrive sorted by, largest first.
    #[prop_or(1)]
    pub sorted_by: usize,
}

pub fn count_f(v: f64) -> String {
    count(v as u64)
}

fn us(v: f64) -> String {
    ms(v / 1000.0)
}

pub const fn column(label: &'static str, fmt: fn(f64) -> String) -> Column {
    Column { label, fmt }
}

const KERNEL_COLUMNS: [Column; 4] = [
    column("Calls", count_f),
    column("Total", ms),
    column("Mean", us),
    column("Share of kernel time", pct),
];

const OPERATOR_COLUMNS: [Column; 4] = [
    column("Calls", count_f),
    column("Total", ms),
    column("Self", ms),
    column("Mean", us),
];

fn row(name: &str, values: Vec<f64>) -> Row {
    Row {
        name: name.to_string(),
        texts: Vec::new(),
        values,
    }
}

pub fn kernels(kernels: &[KernelTime]) -> Html {
    let rows = kernels
        .iter()
        .map(|k| row(&k.name, vec![k.count as f64, k.total_ms, k.mean_us, k.pct]))
        .collect();
    html! { <Table caption="GPU kernels by total time" columns={&KERNEL_COLUMNS[..]} rows={Rc::new(rows)} /> }
}

pub fn operators(ops: &[OperatorTime]) -> Html {
    let rows = ops
        .iter()
        .map(|o| {
            row(
                &o.name,
                vec![o.count as f64, o.total_ms, o.self_ms, o.mean_us],
            )
        })
        .collect();
    html! { <Table caption="CPU operators by total time" columns={&OPERATOR_COLUMNS[..]} rows={Rc::new(rows)} /> }
}

/// Which column the rows are sorted by (`None`: the name) and in which direction.
#[derive(Clone, Copy, PartialEq)]
struct Sort {
    column: Option<usize>,
    descending: bool,
}

#[function_component(Table)]
pub fn table(props: &TableProps) -> Html {
    let sort = use_state(|| Sort {
        column: Some(props.sorted_by),
        descending: true,
    });
    let query = use_state(String::new);
    let needle = query.to_lowercase();
    let mut rows: Vec<&Row> = props
        .rows
        .iter()
        .filter(|r| needle.is_empty() || r.name.to_lowercase().contains(&needle))
        .collect();
    rows.sort_by(|a, b| {
        let order = match sort.column {
            Some(c) => a.values[c].total_cmp(&b.values[c]),
            None => a.name.cmp(&b.name),
        };
        if sort.descending {
            order.reverse()
        } else {
            order
        }
    });
    let heading = |column: Option<usize>, label: &'static str| {
        let sort_handle = sort.clone();
        let onclick = Callback::from(move |_: MouseEvent| {
            let current = *sort_handle;
            sort_handle.set(Sort {
                column,
                descending: if current.column == column {
                    !current.descending
                } else {
                    column.is_some()
                },
            });
        });
        let aria_sort = if sort.column != column {
            "none"
        } else if sort.descending {
            "descending"
        } else {
            "ascending"
        };
        html! { <th aria-sort={aria_sort}><button class="sort" {onclick}>{label}</button></th> }
    };
    let oninput = {
        let query = query.clone();
        Callback::from(move |e: InputEvent| {
            let input: HtmlInputElement = e.target_unchecked_into();
            query.set(input.value());
        })
    };
    html! {
        <section class="table">
            <div class="table-head">
                <h2>{props.caption}</h2>
                <input type="search" class="search" placeholder="Filter by name" aria-label="Filter by name"
                    value={(*query).clone()} {oninput} />
                <span class="matches">{format!("{} of {}", rows.len(), props.rows.len())}</span>
            </div>
            <table>
                <thead>
                    <tr>
                        { heading(None, "Name") }
                        { for props.texts.iter().map(|t| html! { <th>{*t}</th> }) }
                        { for props.columns.iter().enumerate().map(|(i, c)| heading(Some(i), c.label)) }
                    </tr>
                </thead>
                <tbody>
                    { for rows.iter().map(|r| html! {
                        <tr>
                            <td class="name" title={r.name.clone()}>{&r.name}</td>
                            { for r.texts.iter().map(|t| html! { <td class="text" title={t.clone()}>{t}</td> }) }
                            { for r.values.iter().zip(props.columns.iter()).map(|(v, c)| html! { <td class="num">{(c.fmt)(*v)}</td> }) }
                        </tr>
                    }) }
                </tbody>
            </table>
        </section>
    }
}
