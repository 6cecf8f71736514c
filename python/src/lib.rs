//! `torchtraceap._core`: the library's analysis of trace files (`torchtraceap::files`) for
//! Python; `python/torchtraceap/` makes the package's objects of what it returns. Every failure
//! is a `TraceError` (a `ValueError`) with the message `ttap` prints after `error: `; bad input
//! is an error, never a panic.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use torchtraceap::compare::{render, Comparison};
use torchtraceap::files::{self, Analyzed, Quiet};
use torchtraceap::ingest::early::read_early;
use torchtraceap::share::{self, ShareOptions};
use torchtraceap::{AnalyzedTrace, Severity};

pyo3::create_exception!(
    torchtraceap,
    TraceError,
    PyValueError,
    "A trace or folder that could not be read or analyzed; the message is the CLI's."
);

/// Files analyzed as `ttap analyze` does.
#[pyclass(frozen, get_all)]
struct Analysis {
    /// The JSON `ttap analyze --format json` prints.
    json: String,
    /// The Markdown `ttap analyze` prints.
    markdown: String,
    /// Each file's report as Markdown, in the order of `json`'s reports.
    reports_markdown: Vec<String>,
    /// Each file's share-link fragment (the part after `#`), or why none could be made.
    links: Vec<(Option<String>, Option<String>)>,
    /// Whether a finding reaches the `fail_on` severity (`ttap analyze --fail-on`).
    failed: bool,
}

/// A comparison as `ttap compare` prints it.
#[pyclass(frozen, get_all)]
struct Compared {
    json: String,
    text: String,
    markdown: String,
    /// How far throughput dropped, in percent beyond the steps' spread (`--fail-on-regression`).
    regression_pct: Option<f64>,
}

fn severity(label: Option<&str>) -> PyResult<Option<Severity>> {
    label
        .map(|l| {
            Severity::from_label(l).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "fail_on: {l:?} is not a severity: use 'low', 'medium' or 'high'"
                ))
            })
        })
        .transpose()
}

/// Analyzes a trace file (Kineto JSON, plain or gzip) or a folder of them.
#[pyfunction]
#[pyo3(signature = (path, fail_on=None))]
fn analyze(py: Python<'_>, path: PathBuf, fail_on: Option<&str>) -> PyResult<Analysis> {
    let gate = severity(fail_on)?;
    let analyzed = py
        .detach(|| Analyzed::new(&[path], &Quiet))
        .map_err(|e| TraceError::new_err(e.to_string()))?;
    let errors: Vec<String> = analyzed.errors().iter().map(ToString::to_string).collect();
    if !errors.is_empty() {
        return Err(TraceError::new_err(errors.join("\n")));
    }
    let links = analyzed
        .files
        .iter()
        .filter_map(|(_, o)| o.as_ref().ok())
        .map(
            |k| match share::encode(&k.shared(), &ShareOptions::default()) {
                Ok(e) => (Some(e.fragment), None),
                Err(e) => (None, Some(e.to_string())),
            },
        )
        .collect();
    Ok(Analysis {
        json: analyzed.json().to_string(),
        markdown: analyzed.markdown(),
        reports_markdown: analyzed.reports_markdown(),
        links,
        failed: gate.is_some_and(|g| analyzed.reaches(g)),
    })
}

/// Compares two traces (or folders, each as its mean trace) as `ttap compare` does.
#[pyfunction]
#[pyo3(signature = (before, after, batch_size_before=None, batch_size_after=None, top=10))]
fn compare(
    py: Python<'_>,
    before: PathBuf,
    after: PathBuf,
    batch_size_before: Option<u64>,
    batch_size_after: Option<u64>,
    top: usize,
) -> PyResult<Compared> {
    let (b, a) = py.detach(|| {
        (
            files::profile_of(&before, batch_size_before, &Quiet),
            files::profile_of(&after, batch_size_after, &Quiet),
        )
    });
    let (b, a) = match (b, a) {
        (Ok(b), Ok(a)) => (b, a),
        (b, a) => {
            let errors: Vec<String> = [b.err(), a.err()]
                .into_iter()
                .flatten()
                .map(|e| e.to_string())
                .collect();
            return Err(TraceError::new_err(errors.join("\n")));
        }
    };
    let c = Comparison::new(&b, &a);
    Ok(Compared {
        json: serde_json::to_string(&c).map_err(|e| PyValueError::new_err(e.to_string()))?,
        text: render::text(&c, top),
        markdown: render::markdown(&c, top),
        regression_pct: c.regression_pct(),
    })
}

/// The early look at a large plain trace, as `ttap analyze --early` prints it: the report of
/// its first whole steps, read from part of the file.
#[pyclass(frozen, get_all)]
struct Early {
    /// The report, as `ttap analyze --early --format json` prints it.
    json: String,
    /// The report as `ttap analyze --early` prints it.
    markdown: String,
    /// The first and last step held whole, and how many.
    steps: (i64, i64),
    whole_steps: usize,
    /// Bytes read, and the file's.
    read_bytes: u64,
    file_bytes: u64,
}

/// The early look at a trace file, or `None` where it has none (under 64 MiB, gzip, no whole
/// steps within an eighth of the file).
#[pyfunction]
fn analyze_early(py: Python<'_>, path: PathBuf) -> PyResult<Option<Early>> {
    let early = py
        .detach(|| read_early(&path))
        .map_err(|e| TraceError::new_err(format!("reading {}: {e}", path.display())))?;
    let Some(e) = early else {
        return Ok(None);
    };
    let analyzed = AnalyzedTrace::new(&e.ingested);
    let report = analyzed.report();
    Ok(Some(Early {
        json: serde_json::to_string(report).map_err(|e| PyValueError::new_err(e.to_string()))?,
        markdown: report.to_markdown(&path.display().to_string()),
        steps: e.step_range(),
        whole_steps: e.ingested.trace.steps.len(),
        read_bytes: e.read,
        file_bytes: e.len,
    }))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_early, m)?)?;
    m.add_class::<Analysis>()?;
    m.add_class::<Early>()?;
    m.add_class::<Compared>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("DEFAULT_BASE_URL", share::DEFAULT_BASE_URL)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
