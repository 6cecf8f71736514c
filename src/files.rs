//! Trace files and folders read and analyzed, natively: what `ttap analyze` and `ttap compare`
//! print and the Python package (`python/`) returns, made here once. A folder stands for its
//! `.json` and `.gz` files; several ranks of one job (or a folder) also get the run view.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::analyzed::AnalyzedTrace;
use crate::detect::Severity;
use crate::ingest::{Ingest, IngestError, IngestOptions, Ingested, Progress, PARALLEL_BLOCK};
use crate::profile::{Batch, Profile};
use crate::report::Report;
use crate::run::{self, RunView};
use crate::share::SharedReport;

/// The bytes read from a file at a time.
pub const CHUNK: usize = 1 << 20;

/// Threads that read a trace when `TTAP_THREADS` is set: exactly that many (for gzip input the
/// thread that feeds them inflates besides). Any number reads the same; `TTAP_THREADS=1` suits a
/// machine whose cores are already shared out (the fleet job sets it for each `ttap` it runs).
fn threads_set() -> Option<usize> {
    std::env::var("TTAP_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .map(|t: usize| t.max(1))
}

/// Threads for `path` while `concurrent` files are read at once: `TTAP_THREADS`, else
/// [`default_threads`].
pub fn threads_for(path: &Path, concurrent: usize) -> usize {
    threads_set().unwrap_or_else(|| default_threads(path, concurrent))
}

/// The cores shared out among the files read at once. A plain file of less than two blocks
/// has nothing to split and reads on one; gzip reads on at least two, so that inflating and
/// reading overlap (two frame blocks while the feeding thread inflates).
fn default_threads(path: &Path, concurrent: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let share = (cores / concurrent.max(1)).max(1);
    let mut magic = [0u8; 2];
    let mut file = File::open(path);
    let gzip = file
        .as_mut()
        .is_ok_and(|f| f.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b]);
    let size = file.and_then(|f| f.metadata()).map_or(0, |m| m.len());
    if gzip {
        share.max(2)
    } else if size < 2 * PARALLEL_BLOCK as u64 {
        1
    } else {
        share
    }
}

/// Reads one file on `threads` threads (the same result for any number), calling `progress`
/// after each chunk or block.
pub fn read_on(
    path: &Path,
    options: IngestOptions,
    threads: usize,
    progress: impl FnMut(Progress),
) -> Result<Ingested, IngestError> {
    let file = File::open(path).map_err(|e| IngestError::Read {
        detail: e.to_string(),
    })?;
    let mut ingest = match threads {
        1 => Ingest::new(options),
        n => Ingest::parallel(options, n, PARALLEL_BLOCK),
    };
    ingest.expect_input_bytes(file.metadata().map(|m| m.len()).unwrap_or(0));
    ingest.read_file(&file, CHUNK, progress)
}

/// Why a file or folder given could not be analyzed or compared: which one, and what failed.
/// Each message is whole, its cause in it (the CLI prints it after `error: `, the Python
/// package raises it, word for word the same).
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A folder whose entries cannot be listed.
    #[error("{}: {error}", folder.display())]
    Folder {
        folder: PathBuf,
        error: std::io::Error,
    },
    /// A folder with no trace file in it.
    #[error("{}: no .json or .gz trace in this folder", folder.display())]
    EmptyFolder { folder: PathBuf },
    /// A trace file that does not read as a trace.
    #[error("{}: {error}", path.display())]
    Trace { path: PathBuf, error: IngestError },
    /// A trace of a folder compared as its mean trace that does not read.
    #[error(
        "{}: {error}; a folder is compared only when every trace in it reads: move this one out",
        path.display()
    )]
    FolderTrace { path: PathBuf, error: IngestError },
    /// A folder whose traces make no mean trace.
    #[error("{}: no trace", folder.display())]
    NoTrace { folder: PathBuf },
}

/// The files to read (a folder's `.json` and `.gz` files, sorted) and whether a folder was
/// given.
pub fn expand(inputs: &[PathBuf]) -> Result<(Vec<PathBuf>, bool), FilesError> {
    let mut files = Vec::new();
    let mut folder = false;
    for input in inputs {
        if input.is_dir() {
            folder = true;
            let mut inside: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|error| FilesError::Folder {
                    folder: input.clone(),
                    error,
                })?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json" || x == "gz"))
                .collect();
            if inside.is_empty() {
                return Err(FilesError::EmptyFolder {
                    folder: input.clone(),
                });
            }
            inside.sort();
            files.extend(inside);
        } else {
            files.push(input.clone());
        }
    }
    Ok((files, folder))
}

/// What is kept of one analyzed file: its report, compact profile and fingerprint.
pub struct Kept {
    pub report: Report,
    pub profile: Profile,
    pub fingerprint: String,
}

impl Kept {
    /// The report with the fingerprint, as a link carries it.
    pub fn shared(&self) -> SharedReport {
        SharedReport::new(self.report.clone(), self.fingerprint.clone())
    }
}

/// One file's `Kept`, or why it could not be read.
pub type FileOutcome = Result<Kept, IngestError>;

/// How a front end reads one file while `concurrent` files are read at once (the CLI adds a
/// progress bar; [`Quiet`] adds nothing).
pub trait Reader: Sync {
    fn read(&self, path: &Path, concurrent: usize) -> Result<Ingested, IngestError>;
}

/// Reads with default options on [`threads_for`] threads, reporting no progress.
pub struct Quiet;

impl Reader for Quiet {
    fn read(&self, path: &Path, concurrent: usize) -> Result<Ingested, IngestError> {
        read_on(
            path,
            IngestOptions::default(),
            threads_for(path, concurrent),
            |_| {},
        )
    }
}

/// Each file's outcome, analyzed on up to as many threads as there are cores; only the report
/// and the compact profile outlive a file's analysis.
pub(crate) fn analyze_all(files: &[PathBuf], reader: &impl Reader) -> Vec<FileOutcome> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<FileOutcome>>> = Mutex::new(files.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(k) else { break };
                let outcome = analyze_one(path, reader, workers);
                done.lock().expect("no worker panics")[k] = Some(outcome);
            });
        }
    });
    done.into_inner()
        .expect("no worker panics")
        .into_iter()
        .map(|o| o.expect("every file analyzed"))
        .collect()
}

/// One file's report, compact profile and fingerprint, while `concurrent` files are analyzed
/// at once (the cores are shared out among them).
pub(crate) fn analyze_one(path: &Path, reader: &impl Reader, concurrent: usize) -> FileOutcome {
    let ingested = reader.read(path, concurrent)?;
    let analyzed = AnalyzedTrace::new(&ingested);
    let label = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    Ok(Kept {
        profile: analyzed.profile(&label),
        fingerprint: analyzed.fingerprint().to_string(),
        report: analyzed.into_report(),
    })
}

/// Files and folders analyzed as `ttap analyze` does: each file's outcome, and the run view of
/// a folder or of the ranks of one job.
pub struct Analyzed {
    pub files: Vec<(PathBuf, FileOutcome)>,
    pub run: Option<RunView>,
}

impl Analyzed {
    pub fn new(inputs: &[PathBuf], reader: &impl Reader) -> Result<Analyzed, FilesError> {
        let (paths, folder) = expand(inputs)?;
        let outcomes = analyze_all(&paths, reader);
        let files: Vec<_> = paths.into_iter().zip(outcomes).collect();
        let profiles = Self::profiles_of(&files);
        let run = (profiles.len() >= 2 && (folder || run::is_run(&profiles)))
            .then(|| RunView::new(&profiles));
        Ok(Analyzed { files, run })
    }

    fn profiles_of(files: &[(PathBuf, FileOutcome)]) -> Vec<Profile> {
        files
            .iter()
            .filter_map(|(_, o)| o.as_ref().ok().map(|k| k.profile.clone()))
            .collect()
    }

    /// The profiles of the files that read, in order.
    pub fn profiles(&self) -> Vec<Profile> {
        Self::profiles_of(&self.files)
    }

    /// The files that could not be read, as the CLI prints them after `error: `.
    pub fn errors(&self) -> Vec<FilesError> {
        self.files
            .iter()
            .filter_map(|(p, o)| {
                o.as_ref().err().map(|e| FilesError::Trace {
                    path: p.clone(),
                    error: e.clone(),
                })
            })
            .collect()
    }

    /// Whether a finding (of a file or of the run view) is at least as severe as `gate`
    /// (`ttap analyze --fail-on`).
    pub fn reaches(&self, gate: Severity) -> bool {
        let at_least = |label: &str| Severity::from_label(label).is_some_and(|s| s >= gate);
        self.files.iter().any(|(_, o)| {
            o.as_ref()
                .is_ok_and(|k| k.report.findings.iter().any(|f| at_least(&f.severity)))
        }) || self
            .run
            .as_ref()
            .is_some_and(|r| r.findings.iter().any(|f| at_least(&f.severity)))
    }

    /// Each file's report as Markdown, titled by its path, in order.
    pub fn reports_markdown(&self) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|(p, o)| {
                let k = o.as_ref().ok()?;
                Some(k.report.to_markdown(&p.display().to_string()))
            })
            .collect()
    }

    /// The Markdown of `ttap analyze`: the run view (if any), then each report.
    pub fn markdown(&self) -> String {
        let mut text: String = self
            .reports_markdown()
            .into_iter()
            .map(|md| md + "\n")
            .collect();
        if let Some(run) = &self.run {
            text = format!("{}\n{text}", run::render::markdown(run));
        }
        text
    }

    /// The JSON of `ttap analyze --format json`: the reports (each with its file and
    /// fingerprint), under `reports` beside the `run` view when there is one.
    pub fn json(&self) -> serde_json::Value {
        let reports: Vec<_> = self
            .files
            .iter()
            .filter_map(|(p, o)| {
                let k = o.as_ref().ok()?;
                Some(serde_json::json!({
                    "file": p,
                    "fingerprint": k.fingerprint,
                    "report": k.report,
                }))
            })
            .collect();
        match &self.run {
            Some(run) => serde_json::json!({ "run": run, "reports": reports }),
            None => serde_json::json!(reports),
        }
    }
}

/// The profile of a trace file, or of a folder's mean trace (`Profile::pooled`), as
/// `ttap compare` compares them, with the batch size given (`--batch-size`) if any.
pub fn profile_of(
    path: &Path,
    batch: Option<u64>,
    reader: &impl Reader,
) -> Result<Profile, FilesError> {
    let mut profile = pooled(path, reader)?;
    if let Some(size) = batch {
        profile.batch = Some(Batch {
            size,
            source: "given".into(),
        });
    }
    Ok(profile)
}

/// A file's profile, or a folder's mean trace: a folder is compared only when every trace in
/// it reads.
fn pooled(path: &Path, reader: &impl Reader) -> Result<Profile, FilesError> {
    if !path.is_dir() {
        return analyze_one(path, reader, 1)
            .map(|k| k.profile)
            .map_err(|error| FilesError::Trace {
                path: path.to_path_buf(),
                error,
            });
    }
    let (files, _) = expand(&[path.to_path_buf()])?;
    let mut profiles = Vec::new();
    for (file, outcome) in files.iter().zip(analyze_all(&files, reader)) {
        let kept = outcome.map_err(|error| FilesError::FolderTrace {
            path: file.clone(),
            error,
        })?;
        profiles.push(kept.profile);
    }
    let label = format!("{} ({} traces)", path.display(), profiles.len());
    Profile::pooled(&label, &profiles).ok_or_else(|| FilesError::NoTrace {
        folder: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` bytes (sparse past its first) starting with `head`, in `dir`.
    fn sized(dir: impl AsRef<Path>, name: &str, head: &[u8], len: u64) -> PathBuf {
        let path = dir.as_ref().join(name);
        let mut file = File::create(&path).unwrap();
        std::io::Write::write_all(&mut file, head).unwrap();
        file.set_len(len).unwrap();
        path
    }

    #[test]
    fn a_folder_fails_naming_itself_or_the_trace_that_does_not_read() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        let (empty, traces) = (dir.join("empty"), dir.join("traces"));
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(&traces).unwrap();
        let err = expand(std::slice::from_ref(&empty)).unwrap_err();
        assert!(matches!(&err, FilesError::EmptyFolder { folder } if *folder == empty));
        assert_eq!(
            err.to_string(),
            format!("{}: no .json or .gz trace in this folder", empty.display())
        );
        let missing = dir.join("missing.json");
        let err = profile_of(&missing, None, &Quiet).unwrap_err();
        assert!(
            matches!(&err, FilesError::Trace { path, error: IngestError::Read { .. } } if *path == missing),
            "{err}"
        );
        let bad = traces.join("not-a-trace.json");
        std::fs::write(&bad, b"{\"a\": 1}").unwrap();
        let err = profile_of(&traces, None, &Quiet).unwrap_err();
        assert!(
            matches!(&err, FilesError::FolderTrace { path, error: IngestError::NoTraceEvents { .. } } if *path == bad),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with(&format!("{}: a JSON object", bad.display())));
        assert!(err.to_string().ends_with("move this one out"), "{err}");
    }

    #[test]
    fn the_cores_are_shared_out_among_the_files_read_at_once() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let big = 2 * PARALLEL_BLOCK as u64;
        let scratch = tempfile::tempdir().unwrap();
        let plain = sized(&scratch, "plain.json", b"{\"traceEvents\": [", big);
        let small = sized(&scratch, "small.json", b"{\"traceEvents\": [", big - 1);
        let gzip = sized(&scratch, "trace.json.gz", &[0x1f, 0x8b, 8], 100);
        assert_eq!(default_threads(&plain, 1), cores);
        assert_eq!(default_threads(&plain, 2), (cores / 2).max(1));
        assert_eq!(default_threads(&plain, cores), 1);
        assert_eq!(default_threads(&small, 1), 1);
        assert_eq!(default_threads(&gzip, 1), cores.max(2));
        assert_eq!(default_threads(&gzip, cores), 2);
        assert_eq!(default_threads(Path::new("/no/such/trace.json"), 1), 1);
    }
}
