//! The workers of a load: each file (each rank of a run) is analyzed in its own worker, up to
//! `navigator.hardwareConcurrency` at a time, the rest queued. When a file's worker is done, only
//! its `Outcome` (report, summary, compact profile) is kept and the worker is terminated, which
//! frees its trace at once; so a load holds at most one trace per core, plus file 0's, whose
//! worker is kept to answer the page's requests about it (`Viewer`).

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use web_sys::File;
use yew::Callback;

use super::cost;
use crate::js::{self, Started};
use crate::protocol::{
    self, EarlyLook, FileError, FromWorker, Outcome, Progress, ProtocolError, ToWorker,
};

/// The memory a worker may reach while it reads a trace: a wasm32 memory holds at most 4 GiB,
/// and the analysis after reading needs room beyond what reading took.
pub const MEMORY_LIMIT: u64 = 3 << 30;

/// [`MEMORY_LIMIT`], or the page's `window.ttapMemoryLimit` (bytes) where a test lowered it.
fn memory_limit() -> u64 {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"ttapMemoryLimit".into()).ok())
        .and_then(|v| v.as_f64())
        .map_or(MEMORY_LIMIT, |v| v as u64)
}

/// Where a worker's messages (or why one did not arrive) go.
pub type Messages = Callback<Result<FromWorker, WorkerFailure>>;

/// Why a worker's message did not arrive; its words are the detail of the page's message.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFailure {
    /// A message that cannot be read (a worker of another build, a bug).
    #[error("{0}")]
    Unreadable(#[from] ProtocolError),
    /// The worker stopped on an uncaught error: the browser's words.
    #[error("{0}")]
    Stopped(String),
}

/// An analysis worker with its handlers. Dropping it terminates the worker.
pub struct AnalysisWorker {
    started: Started,
    /// Where its messages go: the load's pool, then the page when it is kept (`redirect`).
    to: Rc<RefCell<Messages>>,
}

impl AnalysisWorker {
    /// Starts a worker whose messages (or why it stopped) go to `on_message`.
    pub fn start(on_message: Messages) -> Result<AnalysisWorker, FileError> {
        let to = Rc::new(RefCell::new(on_message));
        // The callback is taken out before it runs: it may redirect this worker.
        let (target, target_too) = (Rc::clone(&to), Rc::clone(&to));
        let started = Started::new(
            move |data| {
                let decoded = cost::measured(
                    "from-worker",
                    |m: &Result<FromWorker, _>| m.as_ref().map_or("unreadable", FromWorker::kind),
                    || protocol::decode::<FromWorker>(data),
                );
                let to = target.borrow().clone();
                to.emit(decoded.map_err(WorkerFailure::from));
            },
            move |why| {
                let to = target_too.borrow().clone();
                to.emit(Err(WorkerFailure::Stopped(why)));
            },
        )
        .map_err(|e| FileError::NoWorker {
            detail: js::detail(&e),
        })?;
        Ok(AnalysisWorker { started, to })
    }

    /// Sends the worker's messages to `on_message` from now on.
    pub fn redirect(&self, on_message: Messages) {
        *self.to.borrow_mut() = on_message;
    }

    /// Posts `message` (transferring what it hands over), recording its cost.
    pub fn post(&self, message: &ToWorker) -> Result<(), String> {
        cost::measured(
            "to-worker",
            |_| message.kind(),
            || {
                let value = protocol::encode(message).map_err(|e| e.to_string())?;
                self.started
                    .worker
                    .post_message_with_transfer(&value, &message.transfer())
                    .map_err(|e| js::detail(&e))
            },
        )
    }

    /// Asks the worker to analyze file `index` of a load with up to `workers` workers, its
    /// graph replays tied to `capture` where one is given.
    pub fn analyze(
        &self,
        file: &File,
        index: usize,
        workers: usize,
        capture: Option<&File>,
    ) -> Result<(), FileError> {
        self.post(&ToWorker::Analyze {
            files: js_sys::Array::of1(file),
            first: index,
            memory_limit: memory_limit(),
            workers,
            capture: capture.map_or(JsValue::NULL, |c| c.clone().into()),
        })
        .map_err(|detail| FileError::NotHandedOver { detail })
    }
}

/// How many workers a load runs at once: one per core the browser reports.
fn cores() -> usize {
    web_sys::window()
        .map_or(1, |w| w.navigator().hardware_concurrency() as usize)
        .max(1)
}

/// How many workers read one file while `running` files are read at once: the cores left to
/// each, or the page's `?workers=N` where a test or benchmark forces it.
pub fn workers_per_file(running: usize) -> usize {
    let forced = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|search| {
            let query = search.trim_start_matches('?');
            let value = query.split('&').find_map(|p| p.strip_prefix("workers="))?;
            value.parse::<usize>().ok().filter(|&n| n > 0)
        });
    forced.unwrap_or((cores() / running.max(1)).max(1))
}

/// A file's worker while it runs.
struct Running {
    file: usize,
    worker: AnalysisWorker,
}

/// The workers of one load and what they sent back.
pub struct Pool {
    pub files: Vec<File>,
    /// The graph capture trace given beside the files, if any.
    pub capture: Option<File>,
    /// Where each file's worker sends its messages: `(file, message)`.
    on_message: Callback<(usize, Result<FromWorker, WorkerFailure>)>,
    limit: usize,
    /// How many workers read one file ([`workers_per_file`]).
    workers: usize,
    /// The next file to start.
    next: usize,
    running: Vec<Running>,
    /// File 0's worker once it is done: it holds that trace for the page's requests.
    kept: Option<AnalysisWorker>,
    /// Each file's latest progress.
    pub progress: Vec<Option<Progress>>,
    /// The latest early look a worker posted (a large trace's first steps), until its file is done.
    pub early: Option<EarlyLook>,
    pub outcomes: Vec<Outcome>,
    /// Workers started, and the most that ran at once.
    pub started: u32,
    pub peak: u32,
}

impl Pool {
    /// Starts the first workers on `files`.
    pub fn new(
        files: Vec<File>,
        capture: Option<File>,
        on_message: Callback<(usize, Result<FromWorker, WorkerFailure>)>,
    ) -> Pool {
        let limit = cores().min(files.len()).max(1);
        let mut pool = Pool {
            progress: vec![None; files.len()],
            limit,
            workers: workers_per_file(limit),
            files,
            capture,
            on_message,
            next: 0,
            running: Vec::new(),
            kept: None,
            early: None,
            outcomes: Vec::new(),
            started: 0,
            peak: 0,
        };
        pool.fill();
        pool
    }

    /// How many workers may run at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether file `file` waits for a worker.
    pub fn queued(&self, file: usize) -> bool {
        file >= self.next
    }

    /// Whether every file has its outcome and every worker has finished.
    pub fn is_done(&self) -> bool {
        self.outcomes.len() == self.files.len() && self.running.is_empty()
    }

    /// The outcomes in file order, and the worker that holds file 0's trace (if it read it).
    pub fn finish(mut self) -> (Vec<Outcome>, Option<AnalysisWorker>) {
        self.outcomes.sort_by_key(|o| o.file);
        (self.outcomes, self.kept.take())
    }

    /// Starts workers on queued files while fewer than `limit` run.
    fn fill(&mut self) {
        while self.running.len() < self.limit && self.next < self.files.len() {
            let file = self.next;
            self.next += 1;
            let on_message = self.on_message.reform(move |m| (file, m));
            match AnalysisWorker::start(on_message) {
                Ok(worker) => {
                    self.started += 1;
                    self.running.push(Running { file, worker });
                    self.peak = self.peak.max(self.running.len() as u32);
                }
                Err(e) => self.failed(file, e),
            }
        }
    }

    /// File `file` has no analysis: `message` says why.
    fn failed(&mut self, file: usize, error: FileError) {
        let f = &self.files[file];
        self.outcomes.push(Outcome {
            file,
            name: f.name(),
            size: f.size() as u64,
            worker_memory_bytes: 0,
            result: Err(error),
        });
    }

    /// Ends file `file`'s worker (keeping file 0's when `keep`) and starts the next queued file.
    fn retire(&mut self, file: usize, keep: bool) {
        if let Some(i) = self.running.iter().position(|r| r.file == file) {
            let running = self.running.swap_remove(i);
            if file == 0 && keep {
                self.kept = Some(running.worker);
            }
        }
        self.fill();
    }

    /// A message from file `file`'s worker.
    pub fn receive(&mut self, file: usize, message: Result<FromWorker, WorkerFailure>) {
        match message {
            Ok(FromWorker::Ready) => {
                let Some(r) = self.running.iter().find(|r| r.file == file) else {
                    return;
                };
                let capture = self.capture.as_ref();
                if let Err(e) = r
                    .worker
                    .analyze(&self.files[file], file, self.workers, capture)
                {
                    self.failed(file, e);
                    self.retire(file, false);
                }
            }
            Ok(FromWorker::Progress(p)) => self.progress[file] = Some(p),
            Ok(FromWorker::Early(look)) => self.early = Some(*look),
            Ok(FromWorker::Done(outcome)) => self.outcomes.push(*outcome),
            Ok(FromWorker::Finished) => self.retire(file, true),
            // Replies to requests: none are asked during a load.
            Ok(_) => {}
            Err(failure) => {
                if self.outcomes.iter().all(|o| o.file != file) {
                    let detail = failure.to_string();
                    self.failed(file, FileError::Stopped { detail });
                }
                self.retire(file, false);
            }
        }
    }
}
