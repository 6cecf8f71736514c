//! A [`RunView`] as Markdown (the CLI prints it before the ranks' own reports). Labels from the
//! inputs go through `report::md_code_cell`.

use std::fmt::Write;

use super::{steps_text, RunView};
use crate::report::{md_code_cell, md_text};

fn ms(v: Option<f64>) -> String {
    v.map_or("—".to_string(), |v| format!("{v:.1}"))
}

/// The run view in Markdown.
pub fn markdown(v: &RunView) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Run: {} ranks\n", v.ranks.len());
    if v.findings.is_empty() {
        let _ = writeln!(
            o,
            "No straggler: in every steady step each rank's own work is within {} % (or {} ms) \
             of the median rank's.\n",
            super::STRAGGLER_MARGIN_PCT,
            super::STRAGGLER_MIN_MS
        );
    }
    for f in &v.findings {
        let _ = writeln!(
            o,
            "- **{}** ({}): {}; steps {}.",
            f.id,
            f.severity,
            md_text(&f.summary),
            f.steps
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(o, "\n## Ranks (steady-state means)\n");
    let _ = writeln!(
        o,
        "| rank | trace | steps | step, ms | GPU busy | exposed comm, ms | collectives, ms | \
         collective wait, ms | critical in | findings |"
    );
    let _ = writeln!(o, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &v.ranks {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {} | {:.2} | {:.2} | {:.2} | {} | {} |",
            r.rank,
            md_code_cell(&r.label),
            r.steady_steps,
            r.step_ms,
            r.gpu_busy_pct
                .map_or("—".to_string(), |b| format!("{b:.1} %")),
            r.exposed_comm_ms,
            r.collective_ms,
            r.collective_wait_ms,
            steps_text(r.critical_steps),
            if r.findings.is_empty() {
                "none".to_string()
            } else {
                r.findings
                    .iter()
                    .map(|f| md_code_cell(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
    let _ = writeln!(
        o,
        "\n## Steps: own work per rank, ms (step time minus collective wait)\n"
    );
    let head: Vec<String> = v.ranks.iter().map(|r| format!("rank {}", r.rank)).collect();
    let _ = writeln!(
        o,
        "| step | {} | median | critical rank |",
        head.join(" | ")
    );
    let _ = writeln!(o, "|---:|{}---:|---:|", "---:|".repeat(head.len()));
    for s in &v.steps {
        let cells: Vec<String> = s.own_ms.iter().map(|&x| ms(x)).collect();
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} | {} |",
            s.step,
            cells.join(" | "),
            s.median_own_ms,
            s.critical_rank.map_or("—".to_string(), |r| r.to_string())
        );
    }
    o
}
