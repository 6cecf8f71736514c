//! The directories `ttap mcp` may read under, and the traces it has read (a few, per path).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::Context as _;
use torchtraceap::files::{expand, read_on, threads_for};
use torchtraceap::{AnalyzedTrace, IngestOptions, Ingested, Report};

/// Traces kept read and analyzed at once; the least recently asked for goes first.
pub const CACHED_TRACES: usize = 4;

/// The directories named with `--root`, canonical (symlinks resolved).
pub struct Roots(Vec<PathBuf>);

impl Roots {
    /// Each directory canonical; one that is not a readable directory is an error naming it.
    pub fn new(dirs: &[PathBuf]) -> anyhow::Result<Roots> {
        let mut roots = Vec::new();
        for dir in dirs {
            let canonical = dir
                .canonicalize()
                .with_context(|| format!("--root {}: not found", dir.display()))?;
            anyhow::ensure!(
                canonical.is_dir(),
                "--root {}: not a directory (name the folder that holds the traces)",
                dir.display()
            );
            roots.push(canonical);
        }
        Ok(Roots(roots))
    }

    /// The roots, as an error message lists them.
    fn listed(&self) -> String {
        self.0
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `path` canonical (symlinks resolved) when it lies under a root; a relative path is taken
    /// under the first root. Else an error naming the roots.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let given = Path::new(path);
        let joined = if given.is_relative() {
            self.0[0].join(given)
        } else {
            given.to_path_buf()
        };
        let canonical = joined.canonicalize().map_err(|e| {
            format!(
                "{}: cannot be opened ({e}); give the path of an existing trace file under one of the roots: {}",
                joined.display(),
                self.listed()
            )
        })?;
        if self.0.iter().any(|r| canonical.starts_with(r)) {
            Ok(canonical)
        } else {
            Err(format!(
                "{path}: refused: it resolves to {}, outside the directories this server may read ({}); give a path under one of them, or restart `ttap mcp` with another --root",
                canonical.display(),
                self.listed()
            ))
        }
    }

    /// [`Roots::resolve`], and for a folder each trace file in it too (a symlink inside a root
    /// may point outside it), as `compare_traces` reads them.
    pub fn resolve_all(&self, path: &str) -> Result<PathBuf, String> {
        let canonical = self.resolve(path)?;
        if canonical.is_dir() {
            let (files, _) = expand(std::slice::from_ref(&canonical)).map_err(|e| e.to_string())?;
            for file in files {
                self.resolve(&file.display().to_string())?;
            }
        }
        Ok(canonical)
    }
}

/// A trace read and analyzed: the model (for summaries and event look-ups) and the report.
pub struct Loaded {
    pub ingested: Ingested,
    pub report: Report,
    pub fingerprint: String,
}

impl Loaded {
    /// Reads and analyzes `path` as `ttap analyze` and `ttap explain` do.
    fn read(path: &Path) -> Result<Loaded, String> {
        if path.is_dir() {
            return Err(format!(
                "{}: a folder; these tools read one trace file (compare_traces takes folders)",
                path.display()
            ));
        }
        let ingested = read_on(path, IngestOptions::default(), threads_for(path, 1), |_| {})
            .map_err(|e| {
                format!(
                    "{}: {e} (is it a PyTorch profiler trace, Kineto JSON, plain or gzip?)",
                    path.display()
                )
            })?;
        let analyzed = AnalyzedTrace::new(&ingested);
        let fingerprint = analyzed.fingerprint().to_string();
        let report = analyzed.into_report();
        Ok(Loaded {
            fingerprint,
            ingested,
            report,
        })
    }
}

/// What identifies a file's contents cheaply: its size and modification time.
type Stamp = (u64, Option<SystemTime>);

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).map_or((0, None), |m| (m.len(), m.modified().ok()))
}

/// The traces read in this session, at most [`CACHED_TRACES`], most recent last; a file changed
/// since it was read is read again.
#[derive(Default)]
pub struct Cache(Mutex<VecDeque<(PathBuf, Stamp, Arc<Loaded>)>>);

impl Cache {
    /// The trace at `path` (canonical), read now or earlier.
    pub fn get(&self, path: &Path) -> Result<Arc<Loaded>, String> {
        let now = stamp(path);
        {
            let mut kept = self.0.lock().map_err(|_| "the trace cache is unusable")?;
            if let Some(k) = kept.iter().position(|(p, s, _)| p == path && *s == now) {
                let entry = kept.remove(k).expect("found");
                let loaded = entry.2.clone();
                kept.push_back(entry);
                return Ok(loaded);
            }
        }
        // Read outside the lock: another trace may be asked for meanwhile.
        let loaded = Arc::new(Loaded::read(path)?);
        let mut kept = self.0.lock().map_err(|_| "the trace cache is unusable")?;
        kept.retain(|(p, _, _)| p != path);
        if kept.len() == CACHED_TRACES {
            kept.pop_front();
        }
        kept.push_back((path.to_path_buf(), now, loaded.clone()));
        Ok(loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small trace file named `name` in `dir`, with `ops` operators.
    fn trace(dir: &Path, name: &str, ops: usize) -> PathBuf {
        let events: Vec<String> = (0..ops)
            .map(|i| {
                format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::op{i}", "pid": 1, "tid": 1, "ts": {}, "dur": 5}}"#,
                    1000 + i * 10
                )
            })
            .collect();
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(r#"{{"traceEvents": [{}]}}"#, events.join(",")),
        )
        .unwrap();
        path
    }

    #[test]
    fn the_cache_keeps_the_last_traces_read_and_reads_a_changed_file_again() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        let cache = Cache::default();
        let paths: Vec<PathBuf> = (0..=CACHED_TRACES)
            .map(|k| trace(dir, &format!("t{k}.json"), 3))
            .collect();
        let first = cache.get(&paths[0]).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.get(&paths[0]).unwrap()));
        for p in &paths[1..] {
            cache.get(p).unwrap();
        }
        assert_eq!(cache.0.lock().unwrap().len(), CACHED_TRACES);
        assert!(!Arc::ptr_eq(&first, &cache.get(&paths[0]).unwrap()));
        let before = cache.get(&paths[1]).unwrap();
        assert_eq!(before.ingested.report.events, 3);
        trace(dir, "t1.json", 40);
        assert_eq!(cache.get(&paths[1]).unwrap().ingested.report.events, 40);
        assert_eq!(cache.0.lock().unwrap().len(), CACHED_TRACES);
    }
}
