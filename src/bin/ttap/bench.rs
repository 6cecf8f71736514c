//! `ttap bench`: ingest throughput and peak memory on a large trace, against the floor of any
//! serde-based reader (serde_json skimming the same bytes into `IgnoredAny`), in one run.
//!
//! Timings on a shared machine are noisy, so the figures that matter are ratios measured in the
//! same run; nothing here passes or fails on an absolute time.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use torchtraceap::ingest::IngestOptions;

use crate::inspect::{read_file, CHUNK};

/// The default source: the largest real Kineto trace in the shared set (rank 3 of a recsys
/// training job on 8×A100, 109 k events, 33 MB of JSON).
const DEFAULT_SOURCE: &str = "../shared/traces/facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__control__control.json.gz";

#[derive(clap::Args)]
pub struct Args {
    /// The real trace whose events are repeated (shifted in time, ids renumbered).
    #[arg(long, default_value = DEFAULT_SOURCE)]
    source: PathBuf,
    /// Size of the generated trace, in MiB of JSON.
    #[arg(long, default_value_t = 1024)]
    size_mib: u64,
    /// Where the generated files go (they are reused when present with the same size).
    #[arg(long, default_value = "target/bench")]
    dir: PathBuf,
    /// How many times each measurement runs; the best time is reported.
    #[arg(long, default_value_t = 2)]
    runs: u32,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ChildArgs {
    file: PathBuf,
    #[arg(long, value_enum, default_value_t = Mode::Ingest)]
    mode: Mode,
}

/// What a child process measures.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Ingest the file into the model.
    Ingest,
    /// Read the file into memory, then skim it with serde_json into `IgnoredAny` (timed alone).
    Skim,
    /// Only decompress the gzip file (the cost floor for gzip input).
    Decompress,
}

#[derive(Serialize, Deserialize)]
pub struct ChildResult {
    seconds: f64,
    json_bytes: u64,
    events: u64,
    peak_rss_bytes: u64,
}

/// Peak resident memory of this process (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

pub fn child(args: &ChildArgs) -> ExitCode {
    let t0 = Instant::now();
    let result = if args.mode == Mode::Skim {
        let bytes = std::fs::read(&args.file).expect("bench file exists");
        let t0 = Instant::now();
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).expect("bench file is JSON");
        ChildResult {
            seconds: t0.elapsed().as_secs_f64(),
            json_bytes: bytes.len() as u64,
            events: 0,
            peak_rss_bytes: peak_rss(),
        }
    } else if args.mode == Mode::Decompress {
        let mut decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
            File::open(&args.file).expect("bench file exists"),
        ));
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            let n = decoder.read(&mut buf).expect("bench gzip decodes");
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        ChildResult {
            seconds: t0.elapsed().as_secs_f64(),
            json_bytes: total,
            events: 0,
            peak_rss_bytes: peak_rss(),
        }
    } else {
        match read_file(&args.file, IngestOptions::default()) {
            Ok(ingested) => ChildResult {
                seconds: t0.elapsed().as_secs_f64(),
                json_bytes: ingested.report.json_bytes,
                events: ingested.report.events,
                peak_rss_bytes: peak_rss(),
            },
            Err(e) => {
                eprintln!("error: {}: {e}", args.file.display());
                return ExitCode::from(2);
            }
        }
    };
    println!(
        "{}",
        serde_json::to_string(&result).expect("result serializes")
    );
    ExitCode::SUCCESS
}

fn run_child(file: &Path, mode: Mode) -> Result<ChildResult> {
    let exe = std::env::current_exe().context("finding the ttap executable")?;
    let mode = match mode {
        Mode::Ingest => "ingest",
        Mode::Skim => "skim",
        Mode::Decompress => "decompress",
    };
    let out = Command::new(exe)
        .arg("bench-child")
        .arg(file)
        .args(["--mode", mode])
        .output()
        .context("running the ingest child process")?;
    if !out.status.success() {
        bail!(
            "the ingest child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the child's result")
}

fn best_of(runs: u32, file: &Path, mode: Mode) -> Result<ChildResult> {
    let mut best: Option<ChildResult> = None;
    for _ in 0..runs.max(1) {
        let r = run_child(file, mode)?;
        best = Some(match best {
            Some(b) if b.seconds <= r.seconds => ChildResult {
                peak_rss_bytes: b.peak_rss_bytes.max(r.peak_rss_bytes),
                ..b
            },
            Some(b) => ChildResult {
                peak_rss_bytes: b.peak_rss_bytes.max(r.peak_rss_bytes),
                ..r
            },
            None => r,
        });
    }
    Ok(best.expect("at least one run"))
}

fn shift(v: &mut Value, key: &str, by: f64) {
    if let Some(x) = v.get_mut(key) {
        if let Some(n) = x.as_f64() {
            *x = if x.is_f64() {
                Value::from(n + by)
            } else {
                Value::from((n + by) as i64)
            };
        }
    }
}

/// Writes `size` bytes or more of a trace made by repeating the source's events.
fn generate(source: &Path, out: &Path, size: u64) -> Result<()> {
    let mut bytes = Vec::new();
    File::open(source)
        .with_context(|| {
            format!(
                "opening the benchmark source {} (give another with --source)",
                source.display()
            )
        })?
        .read_to_end(&mut bytes)?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut plain)?;
        bytes = plain;
    }
    let mut doc: Value =
        serde_json::from_slice(&bytes).context("the benchmark source is not JSON")?;
    drop(bytes);
    let Some(Value::Array(events)) = doc.as_object_mut().and_then(|o| o.remove("traceEvents"))
    else {
        bail!("the benchmark source has no traceEvents array");
    };
    let (mut lo, mut hi, mut max_id) = (f64::MAX, f64::MIN, 0f64);
    for e in &events {
        if let Some(ts) = e.get("ts").and_then(Value::as_f64) {
            lo = lo.min(ts);
            hi = hi.max(ts + e.get("dur").and_then(Value::as_f64).unwrap_or(0.0));
        }
        for id in [
            e.get("id"),
            e.pointer("/args/correlation"),
            e.pointer("/args/External id"),
        ] {
            max_id = max_id.max(id.and_then(Value::as_f64).unwrap_or(0.0));
        }
    }
    let period = (hi - lo) + 1000.0;
    let id_stride = max_id + 1.0;
    let mut w = BufWriter::with_capacity(1 << 20, File::create(out)?);
    let header = serde_json::to_string(&doc)?;
    w.write_all(&header.as_bytes()[..header.len() - 1])?;
    w.write_all(if header.len() > 2 {
        b", \"traceEvents\": [\n"
    } else {
        b"\"traceEvents\": [\n"
    })?;
    let mut written = header.len() as u64;
    let mut first = true;
    let mut rep = 0f64;
    while written < size {
        for e in &events {
            if rep > 0.0 && e.get("ph").and_then(Value::as_str) == Some("M") {
                continue;
            }
            let mut e = e.clone();
            shift(&mut e, "ts", rep * period);
            shift(&mut e, "id", rep * id_stride);
            if let Some(args) = e.get_mut("args") {
                shift(args, "correlation", rep * id_stride);
                shift(args, "External id", rep * id_stride);
            }
            let text = serde_json::to_string(&e)?;
            if !first {
                w.write_all(b",\n")?;
            }
            first = false;
            w.write_all(text.as_bytes())?;
            written += text.len() as u64 + 2;
        }
        rep += 1.0;
    }
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok(())
}

fn gzip(plain: &Path, out: &Path) -> Result<()> {
    let mut input = File::open(plain)?;
    let mut enc = flate2::write::GzEncoder::new(
        BufWriter::new(File::create(out)?),
        flate2::Compression::fast(),
    );
    std::io::copy(&mut input, &mut enc)?;
    enc.finish()?.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct Report {
    source: PathBuf,
    json_bytes: u64,
    gzip_bytes: u64,
    events: u64,
    ingest_mb_per_s: f64,
    skim_mb_per_s: f64,
    ingest_over_skim: f64,
    peak_rss_bytes: u64,
    peak_over_size: f64,
    gzip_ingest_s: f64,
    plain_ingest_s: f64,
    decompress_s: f64,
    gzip_extra_over_decompress: f64,
}

fn measure(args: &Args) -> Result<Report> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let size = args.size_mib << 20;
    let plain = args.dir.join(format!("bench-{}MiB.json", args.size_mib));
    let gz = args.dir.join(format!("bench-{}MiB.json.gz", args.size_mib));
    if std::fs::metadata(&plain)
        .map(|m| m.len() < size)
        .unwrap_or(true)
    {
        eprintln!(
            "generating {} from {} …",
            plain.display(),
            args.source.display()
        );
        generate(&args.source, &plain, size)?;
        let _ = std::fs::remove_file(&gz);
    }
    if !gz.exists() {
        eprintln!("compressing {} …", gz.display());
        gzip(&plain, &gz)?;
    }
    let json_bytes = std::fs::metadata(&plain)?.len();
    let gzip_bytes = std::fs::metadata(&gz)?.len();

    eprintln!(
        "measuring in child processes: serde_json skim, ingest (plain, gzip), decompression …"
    );
    let skim_s = best_of(args.runs, &plain, Mode::Skim)?.seconds;
    let plain_run = best_of(args.runs, &plain, Mode::Ingest)?;
    let gz_run = best_of(args.runs, &gz, Mode::Ingest)?;
    let decompress = best_of(args.runs, &gz, Mode::Decompress)?;
    let mb = json_bytes as f64 / 1e6;
    Ok(Report {
        source: args.source.clone(),
        json_bytes,
        gzip_bytes,
        events: plain_run.events,
        ingest_mb_per_s: mb / plain_run.seconds,
        skim_mb_per_s: mb / skim_s,
        ingest_over_skim: skim_s / plain_run.seconds,
        peak_rss_bytes: plain_run.peak_rss_bytes.max(gz_run.peak_rss_bytes),
        peak_over_size: plain_run.peak_rss_bytes.max(gz_run.peak_rss_bytes) as f64
            / json_bytes as f64,
        gzip_ingest_s: gz_run.seconds,
        plain_ingest_s: plain_run.seconds,
        decompress_s: decompress.seconds,
        gzip_extra_over_decompress: (gz_run.seconds - plain_run.seconds) / decompress.seconds,
    })
}

pub fn run(args: &Args) -> ExitCode {
    match measure(args) {
        Ok(r) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r).expect("report serializes")
                );
            } else {
                println!(
                    "trace              {:.1} MB of JSON ({:.1} MB gzip), {} events, from {}",
                    r.json_bytes as f64 / 1e6,
                    r.gzip_bytes as f64 / 1e6,
                    r.events,
                    r.source.display()
                );
                println!(
                    "ingest             {:.1} MB/s ({:.2} s)",
                    r.ingest_mb_per_s, r.plain_ingest_s
                );
                println!("serde_json skim    {:.1} MB/s", r.skim_mb_per_s);
                println!(
                    "ingest / skim      {:.2}  (target >= 0.5)",
                    r.ingest_over_skim
                );
                println!(
                    "peak memory        {:.1} MB = {:.3} x the JSON size  (target <= 0.35)",
                    r.peak_rss_bytes as f64 / 1e6,
                    r.peak_over_size
                );
                println!(
                    "gzip input         {:.2} s; plain {:.2} s; decompression alone {:.2} s",
                    r.gzip_ingest_s, r.plain_ingest_s, r.decompress_s
                );
                println!(
                    "gzip extra / decompression  {:.2}  (target <= 1.0)",
                    r.gzip_extra_over_decompress
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: ttap bench: {e:#}");
            ExitCode::from(2)
        }
    }
}
