//! A [`Comparison`] as a verdict line, plain text for a terminal and Markdown for a ticket.
//! Names from the traces go through `report::md_code_cell` / `md_text` in Markdown, so none can add
//! markup.

use std::fmt::Write;

use super::{Comparison, FindingChange, NameChange, NameChanges};
use crate::report::{md_code_cell, md_text, visible};

/// Longest name shown in a table; longer ones are cut with `…`.
const NAME_CHARS: usize = 96;

pub fn signed(v: f64, decimals: usize) -> String {
    let text = format!("{:+.*}", decimals, v);
    text.replacen('-', "\u{2212}", 1)
}

/// A name from a trace for display: hidden characters (control, bidirectional, invisible)
/// made visible, cut to `NAME_CHARS` with `…`.
fn cut(name: &str) -> String {
    let mut shown = String::with_capacity(name.len());
    for c in name.chars().take(NAME_CHARS) {
        visible(c, &mut shown);
    }
    if name.chars().count() > NAME_CHARS {
        shown.push('…');
    }
    shown
}

fn ids(list: &[FindingChange]) -> String {
    if list.is_empty() {
        "none".to_string()
    } else {
        list.iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The line a ticket quotes, e.g. `step time −23.4 % (41.2 → 31.6 ms), samples/s +30.5 %;
/// fixed: pageable-memcpy; new: none`.
pub fn verdict(c: &Comparison) -> String {
    let s = &c.step_ms;
    let (rate, unit) = c.throughput();
    let head = match s.significant {
        Some(false) => format!(
            "no significant change in step time ({:.1} → {:.1} ms, {} %, spread ±{:.1} ms)",
            s.before.mean_ms,
            s.after.mean_ms,
            signed(s.delta_pct, 1),
            super::SIGNIFICANCE_SE * s.se_ms
        ),
        significant => format!(
            "step time {} % ({:.1} → {:.1} ms{}), {unit} {} %",
            signed(s.delta_pct, 1),
            s.before.mean_ms,
            s.after.mean_ms,
            if significant.is_none() {
                "; too few steady steps to judge the spread"
            } else {
                ""
            },
            signed(rate.delta_pct, 1)
        ),
    };
    format!(
        "{head}; fixed: {}; new: {}",
        ids(&c.findings.fixed),
        ids(&c.findings.new)
    )
}

/// Device names with their counts (`NVIDIA A100 ×8`).
pub fn devices(list: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for d in list {
        match out.iter_mut().find(|(n, _)| n == d) {
            Some(e) => e.1 += 1,
            None => out.push((d.clone(), 1)),
        }
    }
    if out.is_empty() {
        return "no GPU named".to_string();
    }
    out.iter()
        .map(|(n, k)| {
            if *k > 1 {
                format!("{n} ×{k}")
            } else {
                n.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn batch(b: &Option<crate::profile::Batch>) -> String {
    b.as_ref().map_or("unknown".to_string(), |b| {
        format!("{} ({})", b.size, b.source)
    })
}

pub fn significance(c: &Comparison) -> String {
    let s = &c.step_ms;
    match s.significant {
        Some(true) => format!(
            "significant (beyond {}× its standard error, {:.2} ms)",
            super::SIGNIFICANCE_SE,
            s.se_ms
        ),
        Some(false) => format!(
            "not significant (within {}× its standard error, {:.2} ms, or under {} % of the step)",
            super::SIGNIFICANCE_SE,
            s.se_ms,
            super::MIN_CHANGE_PCT
        ),
        None => "spread unknown (fewer than two steady steps on a side)".to_string(),
    }
}

/// The headline figures as rows: what, before, after, change (the CLI's and the web page's).
pub fn headline(c: &Comparison) -> Vec<[String; 4]> {
    let s = &c.step_ms;
    let mut rows = vec![
        [
            "steady steps".into(),
            s.before.n.to_string(),
            s.after.n.to_string(),
            String::new(),
        ],
        [
            "step time, ms (mean ± sd)".into(),
            format!("{:.2} ± {:.2}", s.before.mean_ms, s.before.sd_ms),
            format!("{:.2} ± {:.2}", s.after.mean_ms, s.after.sd_ms),
            format!("{} %", signed(s.delta_pct, 1)),
        ],
        [
            "step time range, ms".into(),
            format!("{:.2}–{:.2}", s.before.min_ms, s.before.max_ms),
            format!("{:.2}–{:.2}", s.after.min_ms, s.after.max_ms),
            String::new(),
        ],
        [
            "steps/s".into(),
            format!("{:.2}", c.steps_per_s.before),
            format!("{:.2}", c.steps_per_s.after),
            format!("{} %", signed(c.steps_per_s.delta_pct, 1)),
        ],
    ];
    if let Some(r) = &c.samples_per_s {
        rows.push([
            "samples/s".into(),
            format!("{:.1}", r.before),
            format!("{:.1}", r.after),
            format!("{} %", signed(r.delta_pct, 1)),
        ]);
    }
    if let Some((b, a)) = c.gpu_busy_pct {
        rows.push([
            "GPU busy, % of step".into(),
            format!("{b:.1}"),
            format!("{a:.1}"),
            format!("{} pts", signed(a - b, 1)),
        ]);
    }
    rows
}

fn split_rows(c: &Comparison) -> Vec<[String; 4]> {
    c.split
        .iter()
        .map(|p| {
            [
                p.label.clone(),
                format!("{:.3}", p.before_ms),
                format!("{:.3}", p.after_ms),
                signed(p.after_ms - p.before_ms, 3),
            ]
        })
        .collect()
}

fn name_row(n: &NameChange, name: String) -> [String; 5] {
    [
        signed(n.delta_ms_per_step(), 3),
        format!("{:.3}", n.before_ms_per_step),
        format!("{:.3}", n.after_ms_per_step),
        format!("{} → {}", n.before_count, n.after_count),
        name,
    ]
}

fn finding_row(f: &FindingChange) -> String {
    format!(
        "{} ({:.3} → {:.3} ms/step)",
        f.id, f.before_ms_per_step, f.after_ms_per_step
    )
}

/// Plain text for a terminal, with at most `top` names per list.
pub fn text(c: &Comparison, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Verdict: {}\n", c.verdict);
    for (what, s) in [("before", &c.before), ("after", &c.after)] {
        let _ = writeln!(
            o,
            "{what:<7} {} — {}; {} steps (warm-up: {:?}); batch size {}",
            cut(&s.label),
            cut(&devices(&s.devices)),
            s.steps,
            s.warmup_steps,
            cut(&batch(&s.batch))
        );
    }
    let _ = writeln!(o);
    let table = |o: &mut String, head: [&str; 4], rows: &[[String; 4]]| {
        let _ = writeln!(
            o,
            "  {:<34} {:>16} {:>16} {:>12}",
            head[0], head[1], head[2], head[3]
        );
        for r in rows {
            let _ = writeln!(o, "  {:<34} {:>16} {:>16} {:>12}", r[0], r[1], r[2], r[3]);
        }
    };
    table(&mut o, ["", "before", "after", "change"], &headline(c));
    let _ = writeln!(o, "  step-time change: {}\n", significance(c));
    if !c.split.is_empty() {
        let _ = writeln!(o, "Where the mean steady step goes (main GPU, ms):");
        table(
            &mut o,
            ["part", "before", "after", "change"],
            &split_rows(c),
        );
        let _ = writeln!(o);
    }
    if !c.pairs.is_empty() {
        let _ = writeln!(o, "Steady steps paired by position (ms):");
        for p in &c.pairs {
            let _ = writeln!(
                o,
                "  #{:<6} {:>10.3}   #{:<6} {:>10.3}   {:>8} %",
                p.before_step,
                p.before_ms,
                p.after_step,
                p.after_ms,
                signed(super::pct_change(p.before_ms, p.after_ms), 1)
            );
        }
        let _ = writeln!(o);
    }
    names_text(&mut o, "GPU work", &c.gpu_work, top);
    names_text(&mut o, "CPU operators (self time)", &c.cpu_ops, top);
    let f = &c.findings;
    let _ = writeln!(o, "Findings:");
    for (what, list) in [
        ("fixed", &f.fixed),
        ("new", &f.new),
        ("unchanged", &f.unchanged),
    ] {
        let rows: Vec<String> = list.iter().map(finding_row).collect();
        let _ = writeln!(
            o,
            "  {what:<9} {}",
            if rows.is_empty() {
                "none".to_string()
            } else {
                rows.join("; ")
            }
        );
    }
    o
}

fn names_text(o: &mut String, what: &str, n: &NameChanges, top: usize) {
    let _ = writeln!(
        o,
        "{what} by normalized name, ms per step (whole trace ÷ its steps): {} on both sides, \
         {} added, {} removed",
        n.changed.len(),
        n.added.len(),
        n.removed.len()
    );
    for (title, list) in [
        ("changed most", &n.changed),
        ("added (only after)", &n.added),
        ("removed (only before)", &n.removed),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(o, "  {title}:");
        let _ = writeln!(
            o,
            "    {:>10} {:>10} {:>10} {:>15}  name",
            "change", "before", "after", "count"
        );
        for row in list.iter().take(top).map(|x| name_row(x, cut(&x.name))) {
            let _ = writeln!(
                o,
                "    {:>10} {:>10} {:>10} {:>15}  {}",
                row[0], row[1], row[2], row[3], row[4]
            );
        }
        if list.len() > top {
            let _ = writeln!(o, "    … and {} more", list.len() - top);
        }
    }
    let _ = writeln!(o);
}

fn md_table(o: &mut String, head: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(
        o,
        "|{}|",
        head.iter()
            .enumerate()
            .map(|(k, _)| if k == 0 { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let _ = writeln!(o, "| {} |", r.join(" | "));
    }
    let _ = writeln!(o);
}

/// Markdown for a ticket, with at most `top` names per list.
pub fn markdown(c: &Comparison, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Before/after comparison\n");
    let _ = writeln!(o, "**Verdict:** {}\n", md_text(&c.verdict));
    md_table(
        &mut o,
        &["", "trace", "devices", "steps", "warm-up", "batch size"],
        [("before", &c.before), ("after", &c.after)]
            .into_iter()
            .map(|(what, s)| {
                vec![
                    what.to_string(),
                    md_code_cell(&s.label),
                    md_text(&devices(&s.devices)),
                    s.steps.to_string(),
                    md_text(&format!("{:?}", s.warmup_steps)),
                    md_text(&batch(&s.batch)),
                ]
            }),
    );
    md_table(
        &mut o,
        &["", "before", "after", "change"],
        headline(c)
            .into_iter()
            .map(|r| r.map(|x| md_text(&x)).to_vec()),
    );
    let _ = writeln!(o, "Step-time change: {}.\n", md_text(&significance(c)));
    if !c.split.is_empty() {
        let _ = writeln!(o, "## Where the mean steady step goes (main GPU, ms)\n");
        md_table(
            &mut o,
            &["part", "before", "after", "change"],
            split_rows(c)
                .into_iter()
                .map(|r| r.map(|x| md_text(&x)).to_vec()),
        );
    }
    for (what, n) in [
        ("GPU work", &c.gpu_work),
        ("CPU operators (self time)", &c.cpu_ops),
    ] {
        let _ = writeln!(
            o,
            "## {what}, ms per step\n\nBy normalized name (whole trace ÷ its steps): {} on both \
             sides, {} added, {} removed.\n",
            n.changed.len(),
            n.added.len(),
            n.removed.len()
        );
        for (title, list) in [
            ("Changed most", &n.changed),
            ("Added (only after)", &n.added),
            ("Removed (only before)", &n.removed),
        ] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(o, "{title}:\n");
            md_table(
                &mut o,
                &["change", "before", "after", "count", "name"],
                list.iter().take(top).map(|x| {
                    let mut row = name_row(x, md_code_cell(&cut(&x.name))).to_vec();
                    for cell in row.iter_mut().take(4) {
                        *cell = md_text(cell);
                    }
                    row
                }),
            );
            if list.len() > top {
                let _ = writeln!(o, "… and {} more.\n", list.len() - top);
            }
        }
    }
    let _ = writeln!(o, "## Findings\n");
    let f = &c.findings;
    md_table(
        &mut o,
        &["status", "finding", "before, ms/step", "after, ms/step"],
        [
            ("fixed", &f.fixed),
            ("new", &f.new),
            ("unchanged", &f.unchanged),
        ]
        .into_iter()
        .flat_map(|(what, list)| {
            list.iter().map(move |x| {
                vec![
                    what.to_string(),
                    md_code_cell(&x.id),
                    format!("{:.3}", x.before_ms_per_step),
                    format!("{:.3}", x.after_ms_per_step),
                ]
            })
        }),
    );
    o
}
