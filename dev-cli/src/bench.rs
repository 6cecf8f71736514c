//! `ttap-dev bench`: ingest throughput on 1, 2 and N threads and peak memory on a large trace,
//! against the floor of any serde-based reader (serde_json skimming the same bytes into
//! `IgnoredAny` on one thread), and gzip input against its decompression alone and against the
//! least time the cores allow, in one run. Each ingest's time is split where the last input
//! byte is given to the ingester: reading, then finishing (the last blocks, assembling).
//!
//! Timings on a shared machine are noisy, so the figures that matter are ratios measured in the
//! same run: every measurement runs once per round, rounds interleave them, and each figure is
//! the median over the rounds. Nothing here passes or fails on an absolute time.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use torchtraceap::files::CHUNK;
use torchtraceap::ingest::IngestOptions;

use torchtraceap_cli::read::read_file_on;

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
    /// How many rounds of measurements run; the median of each is reported.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Thread counts of the scaling curve (default: 1, 2 and every core).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ChildArgs {
    file: PathBuf,
    #[arg(long, value_enum, default_value_t = Mode::Ingest)]
    mode: Mode,
    /// Threads that ingest.
    #[arg(long, default_value_t = 1)]
    threads: usize,
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
    /// CPU time (user and system, every thread) over the same span: on a shared machine wall
    /// time also counts the waits for a core, CPU time does not.
    cpu_seconds: f64,
    json_bytes: u64,
    events: u64,
    peak_rss_bytes: u64,
    /// Seconds and CPU seconds until the ingester was given the input's last byte (ingest
    /// only); the rest is finishing: blocks still in flight, then assembling the model.
    read_seconds: f64,
    read_cpu_seconds: f64,
}

/// CPU time this process has used, all threads, user and system (`/proc/self/stat`, in clock
/// ticks of 10 ms: `USER_HZ` is 100 on Linux).
fn cpu_time() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (which may hold spaces), from the third on.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / 100.0)
        })
        .unwrap_or(0.0)
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

pub fn child(args: &ChildArgs) -> Result<ExitCode> {
    let t0 = Instant::now();
    let cpu0 = cpu_time();
    let result = if args.mode == Mode::Skim {
        let bytes = std::fs::read(&args.file).expect("bench file exists");
        let t0 = Instant::now();
        let cpu0 = cpu_time();
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).expect("bench file is JSON");
        ChildResult {
            seconds: t0.elapsed().as_secs_f64(),
            cpu_seconds: cpu_time() - cpu0,
            json_bytes: bytes.len() as u64,
            events: 0,
            peak_rss_bytes: peak_rss(),
            read_seconds: 0.0,
            read_cpu_seconds: 0.0,
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
            cpu_seconds: cpu_time() - cpu0,
            json_bytes: total,
            events: 0,
            peak_rss_bytes: peak_rss(),
            read_seconds: 0.0,
            read_cpu_seconds: 0.0,
        }
    } else {
        let size = std::fs::metadata(&args.file).map_or(0, |m| m.len());
        let mut read = None;
        let ingested = read_file_on(&args.file, IngestOptions::default(), args.threads, |p| {
            if read.is_none() && p.input_bytes >= size {
                read = Some((t0.elapsed().as_secs_f64(), cpu_time() - cpu0));
            }
        })
        .with_context(|| args.file.display().to_string())?;
        let (read_seconds, read_cpu_seconds) = read.unwrap_or_default();
        ChildResult {
            seconds: t0.elapsed().as_secs_f64(),
            cpu_seconds: cpu_time() - cpu0,
            json_bytes: ingested.report.json_bytes,
            events: ingested.report.events,
            peak_rss_bytes: peak_rss(),
            read_seconds,
            read_cpu_seconds,
        }
    };
    println!(
        "{}",
        serde_json::to_string(&result).expect("result serializes")
    );
    Ok(ExitCode::SUCCESS)
}

fn run_child(file: &Path, mode: Mode, threads: usize) -> Result<ChildResult> {
    let exe = std::env::current_exe().context("finding the ttap executable")?;
    let mode = match mode {
        Mode::Ingest => "ingest",
        Mode::Skim => "skim",
        Mode::Decompress => "decompress",
    };
    let out = Command::new(exe)
        .arg("bench-child")
        .arg(file)
        .args(["--mode", mode, "--threads", &threads.to_string()])
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

/// The median of one measure of `runs`.
fn median_of(runs: &[ChildResult], measure: impl Fn(&ChildResult) -> f64) -> f64 {
    median(&runs.iter().map(measure).collect::<Vec<_>>())
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
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

/// The step number of a `ProfilerStep#N` range.
fn step_number(e: &Value) -> Option<i64> {
    e.get("name")?
        .as_str()?
        .strip_prefix("ProfilerStep#")?
        .parse()
        .ok()
}

/// Writes `size` bytes or more of a trace made by repeating the source's events: each copy
/// shifted in time past the one before, with its own ids and its own step numbers (a copy's
/// `ProfilerStep#N` follows the last of the copy before).
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
    let numbers = events.iter().filter_map(step_number);
    let step_stride = numbers.clone().max().unwrap_or(0) - numbers.min().unwrap_or(0) + 1;
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
            if let Some(n) = step_number(&e) {
                e["name"] = Value::from(format!("ProfilerStep#{}", n + rep as i64 * step_stride));
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

/// Where an ingest's time goes (medians): reading until the input's last byte is given to the
/// ingester, then finishing (blocks still in flight, assembling the model). Wall seconds
/// against CPU seconds show where a core is idle or the threads wait for one.
#[derive(Serialize)]
struct Phases {
    read_s: f64,
    read_cpu_s: f64,
    finish_s: f64,
    finish_cpu_s: f64,
}

impl Phases {
    fn of(runs: &[ChildResult]) -> Phases {
        Phases {
            read_s: median_of(runs, |r| r.read_seconds),
            read_cpu_s: median_of(runs, |r| r.read_cpu_seconds),
            finish_s: median_of(runs, |r| r.seconds - r.read_seconds),
            finish_cpu_s: median_of(runs, |r| r.cpu_seconds - r.read_cpu_seconds),
        }
    }

    fn line(&self) -> String {
        format!(
            "read {:.2} s (CPU {:.2} s), then finish {:.2} s (CPU {:.2} s)",
            self.read_s, self.read_cpu_s, self.finish_s, self.finish_cpu_s
        )
    }
}

/// One point of the scaling curve.
#[derive(Serialize)]
struct Scaling {
    threads: usize,
    /// Median seconds to ingest the plain file.
    ingest_s: f64,
    ingest_mb_per_s: f64,
    /// Throughput over the single-thread serde_json skim's (≥ 1.0: faster than the skim).
    over_skim: f64,
    /// Throughput over the single-thread ingest's.
    over_one_thread: f64,
    /// Median CPU seconds, all threads: what the threads cost beyond one (merging, hand-offs).
    cpu_s: f64,
    phases: Phases,
    peak_rss_bytes: u64,
}

#[derive(Serialize)]
struct Report {
    source: PathBuf,
    json_bytes: u64,
    gzip_bytes: u64,
    events: u64,
    rounds: u32,
    skim_mb_per_s: f64,
    skim_cpu_s: f64,
    scaling: Vec<Scaling>,
    peak_rss_bytes: u64,
    peak_over_size: f64,
    /// Threads of the gzip measurement (the most of the curve).
    gzip_threads: usize,
    gzip_ingest_s: f64,
    gzip_phases: Phases,
    /// Gzip ingest on one thread (inflated and read on it).
    gzip_one_thread_s: f64,
    gzip_one_thread_phases: Phases,
    decompress_s: f64,
    decompress_cpu_s: f64,
    /// gzip ingest over decompression alone (≤ 1.0: no slower than decompressing).
    gzip_over_decompress: f64,
    /// The least time gzip input can take on `gzip_threads` threads and this machine's cores,
    /// all of them busy, in CPU seconds (what wall time comes to on an idle machine): inflating
    /// (decompression's CPU), or inflating plus reading (plus the CPU of the plain ingest on
    /// the curve's fewest threads, one by default) shared by the cores.
    gzip_floor_s: f64,
    /// `gzip_floor_s` over decompression's CPU: the least `gzip_over_decompress` can be.
    gzip_floor_over_decompress: f64,
}

/// The thread counts of the curve: the ones asked for, else 1, 2 and every core.
fn thread_counts(asked: &[usize]) -> Vec<usize> {
    let mut counts = if asked.is_empty() {
        vec![
            1,
            2,
            std::thread::available_parallelism().map_or(1, usize::from),
        ]
    } else {
        asked.to_vec()
    };
    counts.retain(|&t| t > 0);
    counts.sort_unstable();
    counts.dedup();
    counts
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
    let counts = thread_counts(&args.threads);
    let most = *counts.last().context("no thread count")?;
    let rounds = args.runs.max(1);

    eprintln!(
        "measuring in child processes, {rounds} rounds: serde_json skim, ingest on {counts:?} threads, gzip ingest on {most} and 1, decompression …"
    );
    let mut skim = Vec::new();
    let mut skim_cpu = Vec::new();
    let mut ingest: Vec<Vec<ChildResult>> = counts.iter().map(|_| Vec::new()).collect();
    let mut gz_runs = Vec::new();
    let mut gz_one = Vec::new();
    let mut decompress = Vec::new();
    for _ in 0..rounds {
        let r = run_child(&plain, Mode::Skim, 1)?;
        skim.push(r.seconds);
        skim_cpu.push(r.cpu_seconds);
        for (runs, &threads) in ingest.iter_mut().zip(&counts) {
            runs.push(run_child(&plain, Mode::Ingest, threads)?);
        }
        gz_runs.push(run_child(&gz, Mode::Ingest, most)?);
        gz_one.push(run_child(&gz, Mode::Ingest, 1)?);
        decompress.push(run_child(&gz, Mode::Decompress, 1)?);
    }
    let mb = json_bytes as f64 / 1e6;
    let skim_s = median(&skim);
    let one_s = median_of(&ingest[0], |r| r.seconds);
    let scaling: Vec<Scaling> = counts
        .iter()
        .zip(&ingest)
        .map(|(&threads, runs)| {
            let s = median_of(runs, |r| r.seconds);
            Scaling {
                threads,
                ingest_s: s,
                ingest_mb_per_s: mb / s,
                over_skim: skim_s / s,
                over_one_thread: one_s / s,
                cpu_s: median_of(runs, |r| r.cpu_seconds),
                phases: Phases::of(runs),
                peak_rss_bytes: runs.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0),
            }
        })
        .collect();
    let peak = scaling.iter().map(|s| s.peak_rss_bytes).max().unwrap_or(0);
    let gzip_ingest_s = median_of(&gz_runs, |r| r.seconds);
    let decompress_s = median_of(&decompress, |r| r.seconds);
    let decompress_cpu_s = median_of(&decompress, |r| r.cpu_seconds);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let sharing = most.min(cores) as f64;
    let gzip_floor_s = decompress_cpu_s.max((decompress_cpu_s + scaling[0].cpu_s) / sharing);
    Ok(Report {
        source: args.source.clone(),
        json_bytes,
        gzip_bytes,
        events: ingest[0][0].events,
        rounds,
        skim_mb_per_s: mb / skim_s,
        skim_cpu_s: median(&skim_cpu),
        scaling,
        peak_rss_bytes: peak,
        peak_over_size: peak as f64 / json_bytes as f64,
        gzip_threads: most,
        gzip_ingest_s,
        gzip_phases: Phases::of(&gz_runs),
        gzip_one_thread_s: median_of(&gz_one, |r| r.seconds),
        gzip_one_thread_phases: Phases::of(&gz_one),
        decompress_s,
        decompress_cpu_s,
        gzip_over_decompress: gzip_ingest_s / decompress_s,
        gzip_floor_s,
        gzip_floor_over_decompress: gzip_floor_s / decompress_cpu_s,
    })
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let r = measure(args).context("ttap-dev bench")?;
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
            "serde_json skim    {:.1} MB/s ({:.2} s, CPU {:.2} s; one thread; medians of {} rounds)",
            r.skim_mb_per_s,
            r.json_bytes as f64 / 1e6 / r.skim_mb_per_s,
            r.skim_cpu_s,
            r.rounds
        );
        for s in &r.scaling {
            println!(
                "ingest, {:>2} thr.   {:.1} MB/s ({:.2} s, CPU {:.2} s)  / skim {:.2}  / 1 thread {:.2}",
                s.threads,
                s.ingest_mb_per_s,
                s.ingest_s,
                s.cpu_s,
                s.over_skim,
                s.over_one_thread
            );
            println!("                     {}", s.phases.line());
        }
        println!(
            "peak memory        {:.1} MB = {:.3} x the JSON size  (target <= 0.35)",
            r.peak_rss_bytes as f64 / 1e6,
            r.peak_over_size
        );
        println!(
            "gzip input         {:.2} s on {} threads; decompression alone {:.2} s",
            r.gzip_ingest_s, r.gzip_threads, r.decompress_s
        );
        println!("                     {}", r.gzip_phases.line());
        println!(
            "gzip / decompression  {:.2}  (target <= 1.0); on 1 thread {:.2} s = {:.2}",
            r.gzip_over_decompress,
            r.gzip_one_thread_s,
            r.gzip_one_thread_s / r.decompress_s
        );
        println!("                     {}", r.gzip_one_thread_phases.line());
        println!(
            "gzip floor         {:.2} s = {:.2} x decompression (least gzip / decompression): max(its CPU {:.2} s, (that + 1-thread ingest CPU) / {} cores)",
            r.gzip_floor_s,
            r.gzip_floor_over_decompress,
            r.decompress_cpu_s,
            r.gzip_threads.min(std::thread::available_parallelism().map_or(1, usize::from))
        );
    }
    Ok(ExitCode::SUCCESS)
}
