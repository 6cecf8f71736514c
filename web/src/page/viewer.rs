//! The worker that answers the page's requests (timeline, LLM prompts) about the file shown. It
//! holds one file's trace: after a load, file 0's (its load worker, kept); a request about
//! another file replaces it with a new worker that reads that file again, so the page never
//! holds more than one trace after a load, whatever the number of ranks.

use web_sys::File;

use super::pool::{AnalysisWorker, Messages};
use crate::protocol::{FileError, FromWorker, ToWorker};

pub struct Viewer {
    worker: AnalysisWorker,
    /// The file whose trace the worker holds, or is reading.
    pub file: usize,
    /// While the file is read: the file, and the requests that wait for it.
    reading: Option<(File, Vec<ToWorker>)>,
    /// The graph capture trace the load gave beside its files, read with the file again.
    capture: Option<File>,
    /// The share of the file read so far.
    read: f64,
}

impl Viewer {
    /// The worker that analyzed file `file` and holds its trace; its messages go to
    /// `on_message` from now on.
    pub fn holding(worker: AnalysisWorker, file: usize, on_message: Messages) -> Viewer {
        worker.redirect(on_message);
        Viewer {
            worker,
            file,
            reading: None,
            capture: None,
            read: 1.0,
        }
    }

    /// A new worker that reads file `index` (`file`, with `capture` beside it), then answers
    /// requests about it.
    pub fn reading(
        file: File,
        capture: Option<File>,
        index: usize,
        on_message: Messages,
    ) -> Result<Viewer, FileError> {
        Ok(Viewer {
            worker: AnalysisWorker::start(on_message)?,
            file: index,
            reading: Some((file, Vec::new())),
            capture,
            read: 0.0,
        })
    }

    /// While the file is read again: its name and the share read so far.
    pub fn reading_now(&self) -> Option<(String, f64)> {
        let (file, _) = self.reading.as_ref()?;
        Some((file.name(), self.read))
    }

    /// Posts `request`, or keeps it until the file is read.
    pub fn ask(&mut self, request: &ToWorker) -> Result<(), String> {
        match &mut self.reading {
            Some((_, waiting)) => {
                waiting.push(request.clone());
                Ok(())
            }
            None => self.worker.post(request),
        }
    }

    /// A message of the worker about its own reading: once ready, it is handed the file; its
    /// progress is kept; once finished, the waiting requests are posted. The file's outcome
    /// needs nothing: the page has it from its load.
    pub fn receive(&mut self, message: &FromWorker) -> Result<(), String> {
        match message {
            FromWorker::Ready => match &self.reading {
                Some((file, _)) => self
                    .worker
                    .analyze(
                        file,
                        self.file,
                        super::pool::workers_per_file(1),
                        self.capture.as_ref(),
                    )
                    .map_err(|e| super::errors::file_error(&e, &file.name())),
                None => Ok(()),
            },
            FromWorker::Finished => {
                let Some((_, waiting)) = self.reading.take() else {
                    return Ok(());
                };
                waiting.iter().try_for_each(|r| self.worker.post(r))
            }
            FromWorker::Progress(p) => {
                self.read = p.bytes as f64 / p.total_bytes.max(1) as f64;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
