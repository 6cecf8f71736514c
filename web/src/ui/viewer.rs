//! The worker that answers the page's requests (timeline, LLM prompts) about the file shown. It
//! holds one file's trace: after a load, file 0's (its load worker, kept); a request about
//! another file replaces it with a new worker that reads that file again, so the page never
//! holds more than one trace after a load, whatever the number of ranks.

use web_sys::File;

use super::pool::{AnalysisWorker, Messages};
use crate::protocol::{FromWorker, ToWorker};

pub struct Viewer {
    worker: AnalysisWorker,
    /// The file whose trace the worker holds, or is reading.
    pub file: usize,
    /// While the file is read: the file, and the requests that wait for it.
    reading: Option<(File, Vec<ToWorker>)>,
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
        }
    }

    /// A new worker that reads file `index` (`file`), then answers requests about it.
    pub fn reading(file: File, index: usize, on_message: Messages) -> Result<Viewer, String> {
        Ok(Viewer {
            worker: AnalysisWorker::start(on_message)?,
            file: index,
            reading: Some((file, Vec::new())),
        })
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

    /// A message of the worker about its own reading: once ready, it is handed the file; once
    /// finished, the waiting requests. Anything else (progress, the file's outcome, which the
    /// page has from its load) needs nothing.
    pub fn receive(&mut self, message: &FromWorker) -> Result<(), String> {
        match message {
            FromWorker::Ready => match &self.reading {
                Some((file, _)) => self.worker.analyze(file, self.file),
                None => Ok(()),
            },
            FromWorker::Finished => {
                let Some((_, waiting)) = self.reading.take() else {
                    return Ok(());
                };
                waiting.iter().try_for_each(|r| self.worker.post(r))
            }
            _ => Ok(()),
        }
    }
}
