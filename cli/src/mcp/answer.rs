//! The tools' answers, compact and bounded: at most [`MAX_ANSWER_BYTES`] of text each, lists
//! capped and saying how many items were left out, names from the trace cut to
//! [`MAX_NAME_CHARS`]. What a trace holds is data here: it is quoted in JSON strings, never
//! read as instructions.

use serde_json::{json, Map, Value};
use torchtraceap::compare::{render, Comparison};
use torchtraceap::llm::summary::{self, SummaryOptions};
use torchtraceap::model::{EventKind, Trace};
use torchtraceap::profile::Profile;
use torchtraceap::AnalyzedTrace;

use super::roots::Loaded;

/// The most bytes of text in one answer.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// The most characters of a name taken from a trace.
pub const MAX_NAME_CHARS: usize = 160;
/// The most events one look-up returns.
pub const MAX_EVENTS: usize = 100;
/// Evidence lines, steps and event names shown per finding.
const MAX_EVIDENCE: usize = 6;
const MAX_STEPS: usize = 8;
const MAX_EVIDENCE_NAMES: usize = 5;
/// Names per table of a comparison.
pub const MAX_COMPARE_TOP: usize = 20;

const NS_PER_MS: f64 = 1e6;

/// `name` cut to [`MAX_NAME_CHARS`] characters (an ellipsis marks the cut).
fn name(s: &str) -> String {
    match s.char_indices().nth(MAX_NAME_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Milliseconds rounded to the microsecond (and other figures to three decimals).
fn ms(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

/// A confidence or a share, to two decimals.
fn share(v: f32) -> f64 {
    (f64::from(v) * 100.0).round() / 100.0
}

/// `head` with `items` under `key`, as many as fit in [`MAX_ANSWER_BYTES`] (in order), and
/// `<key>_left_out`: how many of `total` are not listed (capped by the caller or the bound).
fn fit(mut head: Map<String, Value>, key: &str, mut items: Vec<Value>, total: usize) -> String {
    loop {
        head.insert(
            format!("{key}_left_out"),
            json!(total.saturating_sub(items.len())),
        );
        head.insert(key.to_string(), Value::Array(items.clone()));
        let text = Value::Object(head.clone()).to_string();
        if text.len() <= MAX_ANSWER_BYTES || items.pop().is_none() {
            return text;
        }
    }
}

/// `text` within [`MAX_ANSWER_BYTES`]: cut at a line's end, saying how much was left out.
pub fn bounded(text: String) -> String {
    if text.len() <= MAX_ANSWER_BYTES {
        return text;
    }
    let room = MAX_ANSWER_BYTES - 120;
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |n| n + 1);
    format!(
        "{}[… {} bytes left out: an answer holds at most {MAX_ANSWER_BYTES} bytes]\n",
        &text[..end],
        text.len() - end
    )
}

/// The report's summary: the trace's facts, its steps and split, its findings ranked with
/// their figures, and what else it holds.
pub fn analyze(file: &str, l: &Loaded) -> String {
    let r = &l.report;
    let t = &r.trace;
    let mut devices: Vec<(String, usize)> = Vec::new();
    for d in &t.devices {
        match devices.iter_mut().find(|(n, _)| n == d) {
            Some((_, k)) => *k += 1,
            None => devices.push((d.clone(), 1)),
        }
    }
    let mut head = Map::new();
    head.insert("file".into(), json!(file));
    head.insert("fingerprint".into(), json!(l.fingerprint));
    head.insert("era".into(), json!(t.era));
    head.insert(
        "devices".into(),
        json!(devices
            .iter()
            .map(|(n, k)| format!("{k} × {}", name(n)))
            .collect::<Vec<_>>()),
    );
    head.insert("rank".into(), json!(t.rank));
    head.insert("world_size".into(), json!(t.world_size));
    head.insert(
        "steps".into(),
        json!({
            "source": t.step_source,
            "count": r.steps.len(),
            "steady": t.steady_steps,
            "warmup": t.warmup_steps,
            "mean_step_ms": ms(t.mean_step_ms),
            "cpu_only": t.cpu_only,
        }),
    );
    head.insert(
        "step_split_ms".into(),
        Value::Object(
            r.split
                .iter()
                .map(|s| (s.part.clone(), json!(ms(s.ms))))
                .collect(),
        ),
    );
    head.insert(
        "mfu_pct".into(),
        json!(r
            .roofline
            .as_ref()
            .and_then(|x| x.measured_mfu())
            .map(|m| ms(m * 100.0))),
    );
    head.insert("events".into(), json!(l.ingested.report.events));
    head.insert(
        "reading_warnings".into(),
        json!(l
            .ingested
            .report
            .warnings
            .iter()
            .take(MAX_EVIDENCE)
            .map(|w| name(w))
            .collect::<Vec<_>>()),
    );
    head.insert(
        "notes".into(),
        json!(r
            .notes
            .iter()
            .take(MAX_EVIDENCE)
            .map(|n| n.id.clone())
            .collect::<Vec<_>>()),
    );
    head.insert(
        "unexplained_windows".into(),
        json!(r
            .unexplained
            .iter()
            .take(MAX_EVIDENCE)
            .map(|u| format!(
                "step {} {} at {:.3} ms: probability {:.2}, most likely {}",
                u.step, u.phase, u.start_ms, u.anomaly_probability, u.predicted_type
            ))
            .collect::<Vec<_>>()),
    );
    let findings = r
        .findings
        .iter()
        .map(|f| {
            json!({
                "id": f.id,
                "title": f.title,
                "severity": f.severity,
                "ms_per_step": ms(f.impact_ms_per_step),
                "pct_of_step": ms(f.impact_pct_of_step),
                "confidence": share(f.confidence),
            })
        })
        .collect();
    fit(head, "findings", findings, r.findings.len())
}

/// The findings (or the one named) with their evidence, fix and windows.
pub fn findings(file: &str, l: &Loaded, only: Option<&str>) -> Result<String, String> {
    let all = &l.report.findings;
    let chosen: Vec<_> = all
        .iter()
        .filter(|f| only.is_none_or(|id| f.id == id))
        .collect();
    if let (Some(id), true) = (only, chosen.is_empty()) {
        return Err(format!(
            "{file}: no finding `{id}`; its findings are: {}",
            ids(l)
        ));
    }
    let items = chosen
        .iter()
        .map(|f| {
            let evidence: Vec<Value> = f
                .evidence
                .iter()
                .take(MAX_EVIDENCE)
                .map(|e| {
                    json!({
                        "what": name(&e.what),
                        "count": e.count,
                        "steps": e.steps.iter().take(MAX_STEPS).collect::<Vec<_>>(),
                        "events": e.events.iter().take(MAX_EVIDENCE_NAMES).map(|n| name(n)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "id": f.id,
                "title": f.title,
                "severity": f.severity,
                "ms_per_step": ms(f.impact_ms_per_step),
                "pct_of_step": ms(f.impact_pct_of_step),
                "confidence": share(f.confidence),
                "summary": name(&f.summary),
                "evidence": evidence,
                "evidence_left_out": f.evidence.len().saturating_sub(MAX_EVIDENCE),
                "module": f.module.as_deref().map(name),
                "fix": f.fix,
                "fix_snippet": f.fix_snippet,
                "window_key": format!("finding:{}", f.id),
            })
        })
        .collect();
    let mut head = Map::new();
    head.insert("file".into(), json!(file));
    Ok(fit(head, "findings", items, chosen.len()))
}

/// The findings' ids, or a word for none.
fn ids(l: &Loaded) -> String {
    match l.report.findings.len() {
        0 => "none".into(),
        _ => l
            .report
            .findings
            .iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The summary of one flagged window as the LLM request about it carries it, within `budget`
/// estimated tokens; `key` is a finding's id, `finding:<id>` or `unexplained:<step>:<window>`.
pub fn window(file: &str, l: &Loaded, key: &str, budget: usize) -> Result<String, String> {
    let opts = SummaryOptions {
        budget,
        max_windows: usize::MAX,
        ..SummaryOptions::default()
    };
    let all = AnalyzedTrace::new(&l.ingested).window_summaries(&opts);
    let wanted = if key.contains(':') {
        key.to_string()
    } else {
        format!("finding:{key}")
    };
    let Some(s) = all.iter().find(|s| s.key == wanted) else {
        let keys: Vec<&str> = all.iter().map(|s| s.key.as_str()).collect();
        return Err(format!(
            "{file}: no flagged window `{key}`; its windows are: {}",
            if keys.is_empty() {
                "none (no finding, no unexplained region)".to_string()
            } else {
                keys.join(", ")
            }
        ));
    };
    let p = summary::prompt(s, budget);
    Ok(bounded(format!(
        "{} [{}]: about {} tokens, {} lines left out for the budget of {budget}\n\n{}\n",
        p.title, p.key, p.window_tokens, p.dropped_lines, p.user
    )))
}

/// Two profiles compared, as `ttap compare` prints them.
pub fn compare(before: &Profile, after: &Profile, top: usize) -> String {
    bounded(render::text(&Comparison::new(before, after), top))
}

/// The events whose name holds `needle` (ignoring case) and that overlap `[from, to]` (ms from
/// the trace's first event), in start order, at most `limit`.
pub fn events(
    file: &str,
    t: &Trace,
    needle: Option<&str>,
    range: (Option<f64>, Option<f64>),
    limit: usize,
) -> String {
    let origin = t.meta.span.map_or(0, |s| s.0);
    let at = |v: Option<f64>, or: i64| v.map_or(or, |v| origin + (v * NS_PER_MS) as i64);
    let (from, to) = (at(range.0, i64::MIN), at(range.1, i64::MAX));
    let needle = needle.map(str::to_lowercase);
    let matching: Vec<bool> = (0..t.strings.len() as u32)
        .map(|id| {
            needle
                .as_deref()
                .is_none_or(|n| t.strings.get(id).to_lowercase().contains(n))
        })
        .collect();
    let e = &t.events;
    let mut found: Vec<usize> = t
        .recorded()
        .filter(|&i| {
            matching[e.name[i] as usize]
                && e.kind[i] != EventKind::Memory
                && e.start[i] <= to
                && e.end(i) >= from
        })
        .collect();
    let total = found.len();
    found.sort_by_key(|&i| (e.start[i], i));
    let items = found
        .iter()
        .take(limit)
        .map(|&i| {
            json!({
                "name": name(t.name_of(i)),
                "kind": e.kind[i].label(),
                "track": track(t, e.track[i] as usize),
                "start_ms": ms((e.start[i] - origin) as f64 / NS_PER_MS),
                "dur_ms": ms(e.dur[i] as f64 / NS_PER_MS),
            })
        })
        .collect();
    let mut head = Map::new();
    head.insert("file".into(), json!(file));
    head.insert("matched".into(), json!(total));
    fit(head, "events", items, total)
}

/// A track as a look-up shows it: the GPU and stream, or the thread.
fn track(t: &Trace, k: usize) -> String {
    let tr = &t.tracks[k];
    match (tr.gpu, tr.thread_name) {
        (true, _) => format!(
            "gpu {} stream {}",
            tr.device.map_or("?".into(), |d| d.to_string()),
            tr.stream.map_or("?".into(), |s| s.to_string())
        ),
        (false, Some(n)) => name(t.strings.get(n)),
        (false, None) => format!("thread {}", name(t.strings.get(tr.tid))),
    }
}

/// The roofline of the main GPU: its device, peaks, MFU and top kernels, at most `limit`.
pub fn kernels(file: &str, l: &Loaded, limit: usize) -> Result<String, String> {
    let Some(r) = &l.report.roofline else {
        return Err(format!(
            "{file}: no roofline: the trace records no GPU kernel"
        ));
    };
    let mut head = Map::new();
    head.insert("file".into(), json!(file));
    head.insert("device".into(), json!(name(&r.device)));
    head.insert(
        "peaks".into(),
        json!(r.peaks.as_ref().map(|p| json!({
            "device": p.device,
            "fp16_tflops": p.fp16_tflops,
            "fp32_tflops": p.fp32_tflops,
            "gbps": p.gbps,
        }))),
    );
    head.insert(
        "mfu_pct".into(),
        json!(r.measured_mfu().map(|m| ms(m * 100.0))),
    );
    head.insert(
        "coverage_ms".into(),
        json!({
            "kernels": ms(r.coverage.kernel_ms),
            "with_shapes": ms(r.coverage.shapes_ms),
            "flops_counted": ms(r.coverage.counted_ms),
        }),
    );
    let items = r
        .kernels
        .iter()
        .take(limit)
        .map(|k| {
            json!({
                "name": name(&k.name),
                "op": name(&k.op),
                "dtype": k.dtype,
                "calls": k.calls,
                "ms": ms(k.ms),
                "tflops": ms(k.tflops),
                "gbps": ms(k.gbps),
                "flop_per_byte": ms(k.intensity),
                "bound": k.bound,
                "lost_ms": k.lost_ms.map(ms),
            })
        })
        .collect();
    Ok(fit(head, "kernels", items, r.kernels.len()))
}
