//! Reading a trace file from the command line: default options, a progress bar on stderr for
//! large inputs, and the reading threads chosen for the file (`files::threads_for`).

use std::path::Path;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use torchtraceap::files;
use torchtraceap::ingest::{IngestError, IngestOptions, Ingested, Progress};

/// Inputs at least this large get a progress bar on stderr.
const PROGRESS_THRESHOLD: u64 = 32 << 20;

/// Reads one file with default options; its error names the file.
pub fn read_trace(path: &Path) -> anyhow::Result<Ingested> {
    read_file(path, IngestOptions::default()).with_context(|| path.display().to_string())
}

/// Reads one file with a progress bar for large inputs, on [`threads`] threads, else on
/// [`default_threads`] as the only file read at the time.
pub fn read_file(path: &Path, options: IngestOptions) -> Result<Ingested, IngestError> {
    read_file_among(path, options, 1)
}

/// [`read_file`] while `concurrent` files are read at once, on threads of their own.
pub fn read_file_among(
    path: &Path,
    options: IngestOptions,
    concurrent: usize,
) -> Result<Ingested, IngestError> {
    read_file_on(path, options, files::threads_for(path, concurrent), |_| {})
}

/// Reads one file on `threads` threads (the same result for any number), calling `progress`
/// after each chunk or block; a progress bar on stderr for large inputs.
pub fn read_file_on(
    path: &Path,
    options: IngestOptions,
    threads: usize,
    mut progress: impl FnMut(Progress),
) -> Result<Ingested, IngestError> {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let bar = if size >= PROGRESS_THRESHOLD {
        let bar = ProgressBar::new(size);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} {bar:30} {bytes_per_sec} {msg}",
            )
            .expect("valid progress template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = files::read_on(path, options, threads, |p| {
        bar.set_position(p.input_bytes);
        bar.set_message(format!("{} events", p.events));
        progress(p);
    });
    bar.finish_and_clear();
    result
}

/// The CLI's reader: [`read_file_among`], with its progress bar.
pub struct WithProgress;

impl files::Reader for WithProgress {
    fn read(&self, path: &Path, concurrent: usize) -> Result<Ingested, IngestError> {
        read_file_among(path, IngestOptions::default(), concurrent)
    }
}

/// `--capture FILE`: the trace of a warm-up that captured the graphs a trace replays.
#[derive(clap::Args)]
pub struct CaptureArg {
    /// A capture trace for a trace of CUDA/HIP graph replays (a serving engine's or
    /// `torch.compile(mode="reduce-overhead")`'s warm-up, recorded with its operators): each
    /// replayed kernel is tied by kernel order and name to the operator and module that launched
    /// it there, so the roofline, module tree and evidence cover graph kernels.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<std::path::PathBuf>,
}

impl CaptureArg {
    /// The capture trace, read, with the name it is reported by; `None` without `--capture`.
    pub fn read(&self) -> anyhow::Result<Option<Beside>> {
        let Some(path) = &self.capture else {
            return Ok(None);
        };
        let capture = read_trace(path).context("reading the capture trace given by --capture")?;
        Ok(Some(Beside {
            capture,
            from: path.display().to_string(),
        }))
    }
}

/// A capture trace given beside the traces read: [`WithProgress`], each trace then tied to it
/// (`Ingested::with_capture`).
pub struct Beside {
    capture: Ingested,
    from: String,
}

impl Beside {
    /// `ingested` with this capture beside it.
    pub fn tie(&self, ingested: Ingested) -> Ingested {
        ingested.with_capture(&self.capture, &self.from)
    }
}

impl files::Reader for Beside {
    fn read(&self, path: &Path, concurrent: usize) -> Result<Ingested, IngestError> {
        read_file_among(path, IngestOptions::default(), concurrent).map(|i| self.tie(i))
    }
}
