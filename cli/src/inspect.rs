//! `ttap inspect FILE...`

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use torchtraceap::ingest::{IngestOptions, Ingested};
use torchtraceap::model::StepSource;
use torchtraceap::summary::Summary;
use torchtraceap_cli::read::read_file;

/// Steps listed one by one in the text report; the rest are summed up.
const STEPS_LISTED: usize = 12;

#[derive(clap::Args)]
pub struct Args {
    /// Trace files: Kineto JSON (`*.pt.trace.json`), plain or gzip-compressed.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print machine-readable JSON (one object per file, in an array).
    #[arg(long)]
    json: bool,
    /// How many kernels to list by total time.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Read Chrome traces that the PyTorch profiler did not write, instead of refusing them.
    #[arg(long)]
    allow_non_pytorch: bool,
    /// Also print the model's memory, part by part (bytes per event, used and allocated).
    #[arg(long)]
    memory: bool,
}

/// Each file's summary; a file that does not read is said (`error: `) and the others still
/// summarized, with exit code 2.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let options = IngestOptions {
        accept_other_chrome_traces: args.allow_non_pytorch,
    };
    let mut failed = false;
    let mut json = Vec::new();
    for path in &args.files {
        match read_file(path, options) {
            Ok(ingested) => {
                let summary = Summary::of(&ingested, args.top);
                if args.json {
                    json.push(serde_json::json!({ "file": path, "summary": summary }));
                } else {
                    crate::out(&render(path, &summary));
                }
                if args.memory {
                    crate::out(&render_memory(&ingested));
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("error: {}: {e}", path.display());
                if args.json {
                    json.push(serde_json::json!({ "file": path, "error": e.to_string() }));
                }
            }
        }
    }
    if args.json {
        crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json).expect("summaries serialize")
        ));
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The model's bytes per event, part by part, against the JSON's.
fn render_memory(ingested: &Ingested) -> String {
    let t = &ingested.trace;
    let n = t.events.len().max(1) as f64;
    let parts = t.footprint();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "  memory      bytes per event (used / allocated); JSON {:.1}",
        ingested.report.json_bytes as f64 / n
    );
    for p in &parts {
        let _ = writeln!(
            o,
            "    {:<18} {:>7.2} / {:>7.2}",
            p.name,
            p.used as f64 / n,
            p.allocated as f64 / n
        );
    }
    let (used, allocated) = parts
        .iter()
        .fold((0, 0), |(u, a), p| (u + p.used, a + p.allocated));
    let _ = writeln!(
        o,
        "    {:<18} {:>7.2} / {:>7.2} = {:.3} x the JSON",
        "model",
        used as f64 / n,
        allocated as f64 / n,
        allocated as f64 / ingested.report.json_bytes.max(1) as f64
    );
    o
}

/// A size in KiB below 1 MiB, in MiB above.
fn size(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// The human-readable report for one file.
pub fn render(path: &Path, s: &Summary) -> String {
    let mut o = String::new();
    let f = &s.format;
    let _ = writeln!(o, "{}", path.display());
    let _ = writeln!(
        o,
        "  format      {} JSON{}, {}, schemaVersion {}, {} of JSON{}",
        match f.container {
            torchtraceap::model::Container::Object => "Kineto object",
            torchtraceap::model::Container::Array => "bare array",
        },
        if f.gzip {
            format!(" (gzip, {})", size(f.input_bytes))
        } else {
            String::new()
        },
        f.era_label,
        f.schema_version.as_deref().unwrap_or("-"),
        size(f.json_bytes),
        if f.truncated { ", TRUNCATED" } else { "" }
    );
    if s.devices.is_empty() {
        let _ = writeln!(o, "  devices     none listed");
    }
    for d in &s.devices {
        let _ = writeln!(
            o,
            "  device {:<4} {}{}{}{}",
            d.id.map_or("?".into(), |i| i.to_string()),
            d.name,
            d.memory_gib
                .map_or(String::new(), |g| format!(", {g:.0} GiB")),
            d.compute_capability
                .as_ref()
                .map_or(String::new(), |c| format!(", sm {c}")),
            d.sms.map_or(String::new(), |n| format!(", {n} SMs")),
        );
    }
    let _ = writeln!(
        o,
        "  rank        {}{}{}",
        s.rank.map_or("-".into(), |r| r.to_string()),
        s.world_size.map_or(String::new(), |w| format!(" of {w}")),
        s.backend
            .as_ref()
            .map_or(String::new(), |b| format!(" ({b})")),
    );
    let _ = writeln!(o, "  span        {:.3} ms", s.span_ms);
    let ranges = match s.steps.source {
        StepSource::ProfilerSteps => "ProfilerStep ranges",
        StepSource::RepeatedAnnotations => {
            "iterations (no ProfilerStep#: a repeating record_function range)"
        }
        StepSource::RepeatedOps => "iterations (no ProfilerStep#: a repeating sequence of ops)",
        StepSource::ServingIterations => {
            "serving iterations (no ProfilerStep#: a serving engine's model-runner ranges)"
        }
        StepSource::WholeTrace => "",
    };
    match s.steps.source {
        StepSource::ProfilerSteps
        | StepSource::RepeatedAnnotations
        | StepSource::RepeatedOps
        | StepSource::ServingIterations => {
            let mut list: Vec<String> = s
                .steps
                .durations_ms
                .iter()
                .take(STEPS_LISTED)
                .map(|(n, d)| format!("#{n} {d:.3} ms"))
                .collect();
            if s.steps.count > STEPS_LISTED {
                list.push(format!("… ({} more)", s.steps.count - STEPS_LISTED));
            }
            let _ = writeln!(
                o,
                "  steps       {} {ranges}, mean {:.3} ms: {}",
                s.steps.count,
                s.steps.mean_ms.unwrap_or(0.0),
                list.join(", ")
            );
        }
        StepSource::WholeTrace => {
            let _ = writeln!(
                o,
                "  steps       no ProfilerStep# ranges: the whole trace is taken as one step"
            );
        }
    }
    let kinds: Vec<String> = s
        .events_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(o, "  events      {}", kinds.join(", "));
    let _ = write!(
        o,
        "  tracks      {} CPU threads, {} GPU streams",
        s.cpu_threads, s.gpu_streams
    );
    if s.gpu_events > 0 {
        let _ = write!(
            o,
            "; {} of {} GPU events linked to their launch",
            s.linked_gpu_events, s.gpu_events
        );
    }
    let _ = writeln!(o);
    for g in &s.gpu_busy {
        let _ = writeln!(
            o,
            "  gpu {:<7} busy {:.3} ms = {:.1}% of its active window, {:.1}% of the span ({} events on {} streams)",
            g.device.map_or("?".into(), |d| d.to_string()),
            g.busy_ms,
            g.busy_pct_of_active,
            g.busy_pct_of_span,
            g.events,
            g.streams
        );
    }
    if !s.top_kernels.is_empty() {
        let _ = writeln!(o, "  top kernels by total time:");
        for k in &s.top_kernels {
            let name: String = if k.name.chars().count() > 90 {
                k.name.chars().take(89).chain(['…']).collect()
            } else {
                k.name.clone()
            };
            let _ = writeln!(
                o,
                "    {:>9.3} ms {:>5.1}% {:>6}× {:>9.1} µs  {}{}",
                k.total_ms,
                k.pct,
                k.count,
                k.mean_us,
                name,
                k.compiled
                    .as_ref()
                    .map_or(String::new(), |c| format!(" ({c})"))
            );
        }
    }
    for w in &s.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }
    o
}
