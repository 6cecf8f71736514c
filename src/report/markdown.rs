//! The report's Markdown, to paste into a ticket, and the escaping it and the views rely on:
//! every string that can come from a trace, a link or a file goes through [`md_text`],
//! [`md_code`] or [`md_fence`], so none can add markup, leave its table cell or close its code;
//! [`is_hidden`] characters are made [`visible`].

use super::{Report, WindowEntry};
use crate::memory;
use crate::metrics::Spread;

/// Windows listed in the Markdown's window-detector table.
const TOP_WINDOWS: usize = 5;

impl Report {
    /// A Markdown rendering to paste into a ticket. Every string that can come from a trace, a
    /// link or a file is escaped ([`md_text`], [`md_code`], [`md_fence`]): none can add markup,
    /// leave its table cell or break out of its code.
    pub fn to_markdown(&self, title: &str) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let t = &self.trace;
        let step = self.step_word();
        let _ = writeln!(o, "# TorchTraceAP report: {}\n", md_text(title));
        let _ = writeln!(
            o,
            "{} · {} · rank {} of {} · {} steady-state {step}{}, mean {:.3} ms{}\n",
            md_text(&t.era),
            if t.cpu_only {
                "CPU-only trace (no GPU activity recorded: findings are host time)".to_string()
            } else if t.devices.is_empty() {
                "no GPU listed".to_string()
            } else {
                md_code(&t.devices[0])
            },
            t.rank.map_or("-".into(), |r| r.to_string()),
            t.world_size.map_or("-".into(), |w| w.to_string()),
            t.steady_steps,
            if t.steady_steps == 1 { "" } else { "s" },
            t.mean_step_ms,
            if t.warmup_steps.is_empty() {
                String::new()
            } else {
                format!(" (warm-up {step}s left out: {:?})", t.warmup_steps)
            }
        );
        if let Some(g) = &self.graphs {
            // The capture trace's name is the user's: shown as typed.
            let g = crate::graphs::GraphSummary {
                capture: g.capture.as_deref().map(md_text),
                ..g.clone()
            };
            let _ = writeln!(o, "CUDA/HIP graphs: {}.{}\n", g.line(), g.per_step());
        }
        self.serving_markdown(&mut o);
        if self.findings.is_empty() {
            let _ = writeln!(o, "No anti-pattern found.");
        } else {
            let _ = writeln!(o, "| # | finding | severity | time recoverable per {step} | confidence |\n|---|---|---|---|---|");
            for (k, f) in self.findings.iter().enumerate() {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {:.2} ms ({:.1}%) | {:.0}% |",
                    k + 1,
                    md_text(&f.title),
                    md_text(&f.severity),
                    f.impact_ms_per_step,
                    f.impact_pct_of_step,
                    100.0 * f.confidence
                );
            }
            for (k, f) in self.findings.iter().enumerate() {
                let _ = writeln!(
                    o,
                    "\n## {}. {} ({})\n\n{}.\n",
                    k + 1,
                    md_text(&f.title),
                    md_code(&f.id),
                    md_text(&f.summary)
                );
                for e in &f.evidence {
                    let _ = write!(o, "- Evidence: {}", md_text(&e.what));
                    if let Some(n) = e.count {
                        let _ = write!(o, " ({n})");
                    }
                    if !e.events.is_empty() {
                        let events: Vec<String> = e.events.iter().map(|n| md_code(n)).collect();
                        let _ = write!(o, ": {}", events.join(", "));
                    }
                    let _ = writeln!(o);
                }
                let _ = writeln!(
                    o,
                    "- Estimated impact: {:.2} ms per {step} ({:.1}%); {}.",
                    f.impact_ms_per_step,
                    f.impact_pct_of_step,
                    md_text(&f.impact_method)
                );
                if let Some(g) = &f.gate {
                    let _ = writeln!(
                        o,
                        "- Gate: {} ≥ {}, held in {} of {} steady {step}s, median {:.2} ({:.1}× the threshold).",
                        md_text(&g.quantity),
                        g.figures.threshold,
                        g.figures.held_steps,
                        g.figures.steady_steps,
                        g.figures.median,
                        g.figures.margin
                    );
                }
                if let Some(module) = &f.module {
                    let _ = writeln!(o, "- Module: {}.", md_code(module));
                }
                if !f.worst_steps.is_empty() {
                    let worst: Vec<String> = f
                        .worst_steps
                        .iter()
                        .map(|c| format!("{} ({:.3} ms)", c.step, c.ms))
                        .collect();
                    let _ = writeln!(o, "- Worst {step}s: {}.", worst.join(", "));
                }
                let _ = writeln!(
                    o,
                    "- Fix: {}\n\n{}",
                    md_text(&f.fix),
                    md_fence(&f.fix_snippet, "python")
                );
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\n## Notes\n");
            for n in &self.notes {
                let _ = writeln!(o, "- {}: {}", md_code(&n.id), md_text(&n.text));
            }
        }
        let total: f64 = self.split.iter().map(|p| p.ms).sum();
        if total > 0.0 {
            let _ = writeln!(
                o,
                "\n## {} (steady-state mean, main GPU)\n\n| part | ms | share |\n|---|---|---|",
                self.split_heading()
            );
            for p in self.split.iter().filter(|p| p.ms > 0.0) {
                let _ = writeln!(
                    o,
                    "| {} | {:.3} | {:.1}% |",
                    md_text(&p.part),
                    p.ms,
                    100.0 * p.ms / total
                );
            }
        }
        self.roofline_markdown(&mut o);
        self.memory_markdown(&mut o);
        self.window_detector_markdown(&mut o);
        o
    }

    /// The allocator's memory per device: peaks, the op at the peak, allocations per step.
    /// A serving capture's iterations: the figures of each kind, in a table.
    fn serving_markdown(&self, o: &mut String) {
        use std::fmt::Write as _;
        let Some(s) = &self.serving else {
            return;
        };
        let _ = writeln!(
            o,
            "## Serving iterations\n\n{} of the engine's model runner (its ranges); \
             the host time is from an iteration's model run to the next iteration.\n\n\
             | kind | iterations | time per iteration | GPU busy | host time between iterations | graph replays per iteration | tokens/s |\n\
             |---|---|---|---|---|---|---|",
            match s.count() {
                1 => "1 iteration".to_string(),
                n => format!("{n} iterations"),
            }
        );
        for k in &s.kinds {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {:.1}% | {} | {:.1} | {} |",
                k.kind.map_or("untyped", |k| k.label()),
                k.time.n,
                k.time.line(),
                k.gpu_busy_pct,
                k.host_gap.as_ref().map_or("-".into(), Spread::line),
                k.graph_replays_per_iteration,
                k.tokens_per_s.map_or("-".into(), |t| format!("{t:.0}")),
            );
        }
        let _ = writeln!(o);
    }

    fn memory_markdown(&self, o: &mut String) {
        use std::fmt::Write as _;
        let Some(m) = &self.memory else { return };
        if m.devices.is_empty() {
            let _ = writeln!(
                o,
                "\n## Memory\n\nNo memory events (record with `profile_memory=True`)."
            );
            return;
        }
        let _ = writeln!(
            o,
            "\n## Memory\n\n{} memory events.\n\n| {} |\n|{}",
            m.events,
            memory::COLUMNS.join(" | "),
            "---|".repeat(memory::COLUMNS.len())
        );
        for d in &m.devices {
            let cells: Vec<String> = (d.cells().into_iter().enumerate())
                .map(|(k, c)| match c {
                    // The operator and module are the trace's text.
                    Some(c) if k == 4 || k == 5 => md_code_cell(&c),
                    Some(c) => md_text(&c),
                    None => "-".into(),
                })
                .collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
    }

    /// The main GPU's roofline: coverage, MFU, the kernels furthest from their roofline.
    fn roofline_markdown(&self, o: &mut String) {
        use std::fmt::Write as _;
        let Some(r) = &self.roofline else { return };
        if r.is_carried() {
            if let Some(mfu) = r.mfu_text() {
                let _ = writeln!(
                    o,
                    "\n## Roofline (main GPU)\n\nStep MFU {mfu} (steady-state mean, as shared; the trace has the rest).{}",
                    r.mfu_bound().map_or(String::new(), |b| format!(" {b}"))
                );
            }
            return;
        }
        let c = &r.coverage;
        let pct = |ms: f64| 100.0 * ms / c.kernel_ms.max(1e-9);
        let _ = writeln!(
            o,
            "\n## Roofline (main GPU)\n\nShapes recorded for {:.0}% of GPU kernel time; FLOPs and bytes counted for {:.0}%.{} {}",
            pct(c.shapes_ms),
            pct(c.counted_ms),
            if c.graph_ms > 0.0 {
                format!(
                    " Graph replays run {:.0}% of it, {:.0}% in kernels not tied to the operator that launched them ({:.3} ms).",
                    pct(c.graph_ms),
                    pct(c.graph_unattributed_ms),
                    c.graph_unattributed_ms
                )
            } else {
                String::new()
            },
            if c.memory_events == 0 {
                "No memory events (record with `profile_memory=True`).".to_string()
            } else {
                format!("{} memory events.", c.memory_events)
            }
        );
        let named = if r.device.is_empty() {
            "the trace names no device".to_string()
        } else {
            format!("the trace names it {}", md_code(&r.device))
        };
        match (&r.peaks, &r.matched_by) {
            (Some(p), by) => {
                let _ = writeln!(
                    o,
                    "\nPeaks of the {}{} ({}): fp32 {} TFLOP/s, TF32 {}, fp16/bf16 {}, fp8 {}, {} GB/s.",
                    md_text(&p.device),
                    by.as_ref().map_or(String::new(), |by| format!(
                        ", matched by {} ({named})",
                        md_text(by)
                    )),
                    md_text(&p.source),
                    p.fp32_tflops,
                    p.tf32_tflops.map_or("-".to_string(), |v| v.to_string()),
                    p.fp16_tflops,
                    p.fp8_tflops.map_or("-".to_string(), |v| v.to_string()),
                    p.gbps
                );
            }
            (None, Some(by)) if !r.ambiguous.is_empty() => {
                let _ = writeln!(
                    o,
                    "\nThe device is ambiguous: {named}, and its properties ({}) fit {}; achieved rates only, no MFU.",
                    md_text(by),
                    md_text(&r.ambiguous.join(", "))
                );
            }
            (None, _) => {
                let _ = writeln!(
                    o,
                    "\nDevice {} is not in the peaks table: achieved rates only, no MFU.",
                    md_code(&r.device)
                );
            }
        }
        if let Some(mfu) = r.mfu_text() {
            let (step_ms, roof_ms) = r.mean_step_ms();
            let _ = writeln!(
                o,
                "\nStep MFU {mfu} (steady-state mean); the step's kernels would take {:.3} ms at the roofline (step {:.3} ms).{}",
                roof_ms,
                step_ms,
                r.mfu_bound().map_or(String::new(), |b| format!(" {b}"))
            );
        }
        if r.kernels.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "\n| kernel | op | dtype | calls | ms | TFLOP/s | GB/s | FLOP/B | bound | roofline share | lost ms |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for k in &r.kernels {
            let name: String = k.name.chars().take(80).collect();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.3} | {:.2} | {:.1} | {:.1} | {} | {} | {} |",
                md_code_cell(&name),
                md_code_cell(&k.op),
                md_text(&k.dtype),
                k.calls,
                k.ms,
                k.tflops,
                k.gbps,
                k.intensity,
                k.bound.as_deref().map_or("-".to_string(), md_text),
                k.share
                    .map_or("-".to_string(), |s| format!("{:.0}%", 100.0 * s)),
                k.lost_ms.map_or("-".to_string(), |l| format!("{l:.3}"))
            );
        }
    }

    /// The top-scoring windows and the unexplained ones.
    fn window_detector_markdown(&self, o: &mut String) {
        use std::fmt::Write as _;
        let mut top: Vec<(&WindowEntry, f32, &str)> = self
            .windows
            .iter()
            .filter_map(|w| Some((w, w.anomaly_probability?, w.predicted_type.as_deref()?)))
            .collect();
        if top.is_empty() {
            let _ = writeln!(
                o,
                "\n## Window detector\n\nNot applied: the trace holds no GPU work, and the detector is trained on GPU steps."
            );
            return;
        }
        top.sort_by(|x, y| y.1.total_cmp(&x.1));
        let _ = writeln!(
            o,
            "\n## Window detector\n\nThe {} the model finds most suspicious \
             (probability that the window holds an anti-pattern, and its most likely type):\n\n\
             | step | phase | start | duration | probability | likely type |\n|---|---|---|---|---|---|",
            match top.len().min(TOP_WINDOWS) {
                1 => "window".to_string(),
                n => format!("{n} windows"),
            }
        );
        for (w, p, kind) in top.iter().take(TOP_WINDOWS) {
            let _ = writeln!(
                o,
                "| {} | {} | {:.3} ms | {:.3} ms | {:.0}% | {} |",
                w.step,
                md_text(&w.phase),
                w.start_ms,
                w.duration_ms,
                100.0 * p,
                md_code_cell(kind)
            );
        }
        if self.unexplained.is_empty() {
            let _ = writeln!(
                o,
                "\nNo flagged window is left unexplained by the findings."
            );
        } else {
            let _ = writeln!(
                o,
                "\nUnexplained suspicious regions (flagged, and no finding of that type concerns the step): {}.",
                self.unexplained
                    .iter()
                    .map(|u| format!(
                        "step {} {} ({:.0}%, {})",
                        u.step,
                        md_text(&u.phase),
                        100.0 * u.anomaly_probability,
                        md_code(&u.predicted_type)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
}

/// Control, bidirectional-override and invisible characters (Unicode's `Cc` and `Cf`, and the
/// line and paragraph separators): what must be made visible before text from a trace, a link or
/// a file is shown.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `c` written so that it can be seen: `⟨U+202E⟩` for a hidden character ([`is_hidden`]).
pub fn visible(c: char, out: &mut String) {
    if is_hidden(c) {
        out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
    } else {
        out.push(c);
    }
}

/// Text as Markdown inline text, shown as typed: hidden characters made visible (so a line
/// break cannot start a block), spaces at either end written `&#32;`, and every ASCII
/// punctuation character that Markdown or HTML reads escaped with a backslash (CommonMark allows
/// it before any ASCII punctuation), so that no emphasis, link, image, HTML, entity, code block
/// or table-cell boundary can be made from it.
pub fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let inner = text.trim_matches(' ');
    let (lead, trail) = (
        text.len() - text.trim_start_matches(' ').len(),
        text.len() - text.trim_end_matches(' ').len(),
    );
    // Spaces at either end as entities: leading ones would indent a line into a code block,
    // trailing ones are dropped by the reader.
    let spaces = |n: usize| "&#32;".repeat(n);
    if inner.is_empty() {
        return spaces(text.len());
    }
    out.push_str(&spaces(lead));
    for c in inner.chars() {
        if c.is_ascii_punctuation()
            && !matches!(
                c,
                ',' | '.' | ':' | ';' | '/' | '\'' | '"' | '?' | '=' | '%' | '@' | '-'
            )
        {
            out.push('\\');
        }
        visible(c, &mut out);
    }
    out.push_str(&spaces(trail));
    out
}

/// Text as a Markdown code span: hidden characters made visible, delimited by a run of
/// backticks longer than any inside it (padded with a space where it starts or ends with a
/// backtick or a space, which the reader strips). Inside a table cell, `|` must still be
/// escaped (GitHub's tables split cells before reading code spans).
pub fn md_code(text: &str) -> String {
    let mut body = String::with_capacity(text.len());
    text.chars().for_each(|c| visible(c, &mut body));
    if body.is_empty() {
        return "(empty)".to_string();
    }
    let fence = "`".repeat(longest_run(&body, '`') + 1);
    let pad = if body.starts_with(['`', ' ']) || body.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// [`md_code`] for a table cell: its `|` escaped, so that GitHub does not split the cell there.
pub(crate) fn md_code_cell(text: &str) -> String {
    md_code(text).replace('|', "\\|")
}

/// Text as a fenced Markdown code block in `language`: its lines kept, other hidden characters
/// (a carriage return would end a line) made visible, and a fence longer than any run of
/// backticks inside, so that no line of it can close the block.
pub fn md_fence(text: &str, language: &str) -> String {
    let mut body = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\n' || c == '\t' {
            body.push(c);
        } else {
            visible(c, &mut body);
        }
    }
    let fence = "`".repeat(longest_run(&body, '`').max(2) + 1);
    format!("{fence}{language}\n{body}\n{fence}")
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    text.split(|x| x != c).map(str::len).max().unwrap_or(0)
}
