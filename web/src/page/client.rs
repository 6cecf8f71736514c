//! The page's client of the worker that answers requests about the files of the load shown.
//! Each request gets an id and a callback (whoever asked: the timeline, the LLM panels, the
//! Perfetto export); the worker's reply carries the id back and goes straight to that callback,
//! never through `App::update`. The timeline's frames, which answer no one request, go to the
//! timeline shown. The worker itself is a [`Viewer`]: one trace at a time, read again when a
//! request is about another file.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use wasm_bindgen::JsValue;
use web_sys::{File, OffscreenCanvas};
use yew::Callback;

use super::errors;
use super::pool::{AnalysisWorker, Messages, WorkerFailure};
use super::viewer::Viewer;
use crate::protocol::{FromWorker, Reply, Request, TimelineReply, ToWorker};

/// The client, shared by the page and the views that ask (a handle: clones share it).
#[derive(Clone)]
pub struct Client(Rc<RefCell<Inner>>);

impl PartialEq for Client {
    fn eq(&self, other: &Client) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

struct Inner {
    /// The worker that holds one of `files`' traces and answers requests about it.
    viewer: Option<Viewer>,
    /// The files of the load shown, to read one again when a request is about it, and the
    /// graph capture trace given beside them.
    files: Vec<File>,
    capture: Option<File>,
    /// Viewers started: the timeline, whose canvas belongs to one worker, is made again for
    /// each.
    viewers: u32,
    /// The last request's id.
    last_id: u64,
    /// Who waits for the reply to each request in flight.
    waiting: BTreeMap<u64, Callback<Reply>>,
    /// Where the timeline's frames go: the timeline shown, while it exists.
    frames: Option<Callback<Box<TimelineReply>>>,
    /// Tells the page that the worker changed (started, read, stopped): something to show,
    /// with a notice when there is one.
    on_change: Callback<Option<String>>,
}

impl Client {
    /// A client with no worker yet; `on_change` hears when its worker changes.
    pub fn new(on_change: Callback<Option<String>>) -> Client {
        Client(Rc::new(RefCell::new(Inner {
            viewer: None,
            files: Vec::new(),
            capture: None,
            viewers: 0,
            last_id: 0,
            waiting: BTreeMap::new(),
            frames: None,
            on_change,
        })))
    }

    /// A new load is shown: its `files` (with `capture` beside them), and the worker that holds
    /// file 0's trace (if it read it). Requests still waiting for the previous worker get no
    /// reply.
    pub fn hold(&self, worker: Option<AnalysisWorker>, files: Vec<File>, capture: Option<File>) {
        let messages = self.messages();
        let mut inner = self.0.borrow_mut();
        inner.viewer = worker.map(|worker| Viewer::holding(worker, 0, messages));
        inner.viewers += 1;
        inner.files = files;
        inner.capture = capture;
        inner.waiting.clear();
    }

    /// Viewers started so far (the timeline's key: it is made again for each).
    pub fn viewers(&self) -> u32 {
        self.0.borrow().viewers
    }

    /// While a file is read again: its name and the share read so far.
    pub fn reading_now(&self) -> Option<(String, f64)> {
        self.0
            .borrow()
            .viewer
            .as_ref()
            .and_then(Viewer::reading_now)
    }

    /// Asks `request` of the worker that holds its file's trace (a request about no file, of
    /// the worker of file `shown`), starting one that reads the file again when none does;
    /// its reply goes to `on_reply`. Nothing is asked about a file the load does not have.
    pub fn ask(&self, request: Request, shown: usize, on_reply: Callback<Reply>) {
        let file = request.file().unwrap_or(shown);
        let started = match self.reader_for(file) {
            Reader::NoFile => return,
            Reader::Held => None,
            Reader::Started(notice) => Some(notice),
        };
        let posted = {
            let mut inner = self.0.borrow_mut();
            inner.last_id += 1;
            let id = inner.last_id;
            if request.replied() {
                inner.waiting.insert(id, on_reply);
            }
            let message = ToWorker::Request { id, request };
            inner.viewer.as_mut().map(|v| v.ask(&message))
        };
        if let Some(Err(e)) = posted {
            web_sys::console::error_1(&JsValue::from_str(&e));
        }
        if let Some(notice) = started {
            let on_change = self.0.borrow().on_change.clone();
            on_change.emit(notice);
        }
    }

    /// Hands the timeline's canvas to the worker, which draws into it from then on.
    pub fn hand_canvas(&self, canvas: OffscreenCanvas) {
        let posted = {
            let mut inner = self.0.borrow_mut();
            let message = ToWorker::Canvas { canvas };
            inner.viewer.as_mut().map(|v| v.ask(&message))
        };
        if let Some(Err(e)) = posted {
            web_sys::console::error_1(&JsValue::from_str(&e));
        }
    }

    /// Sends the timeline's frames to `listener` from now on.
    pub fn listen(&self, listener: Callback<Box<TimelineReply>>) {
        self.0.borrow_mut().frames = Some(listener);
    }

    /// Stops sending frames to `listener` (a timeline made since keeps its own).
    pub fn stop(&self, listener: &Callback<Box<TimelineReply>>) {
        let mut inner = self.0.borrow_mut();
        if inner.frames.as_ref() == Some(listener) {
            inner.frames = None;
        }
    }

    /// Makes sure the worker holds file `file`'s trace, starting one that reads it when it does
    /// not.
    fn reader_for(&self, file: usize) -> Reader {
        let messages = self.messages();
        let mut inner = self.0.borrow_mut();
        if inner.viewer.as_ref().is_some_and(|v| v.file == file) {
            return Reader::Held;
        }
        let Some(handle) = inner.files.get(file).cloned() else {
            return Reader::NoFile;
        };
        let capture = inner.capture.clone();
        let notice = match Viewer::reading(handle.clone(), capture, file, messages) {
            Ok(v) => {
                inner.viewer = Some(v);
                inner.waiting.clear();
                None
            }
            Err(e) => Some(errors::file_error(&e, &handle.name())),
        };
        inner.viewers += 1;
        Reader::Started(notice)
    }

    /// Where the messages of a worker this client starts or keeps go.
    fn messages(&self) -> Messages {
        let client = Rc::downgrade(&self.0);
        Callback::from(move |message| receive(&client, message))
    }
}

/// Whether the worker holds a file's trace.
enum Reader {
    Held,
    /// A worker was started to read it (the page shows it), or could not be: the notice.
    Started(Option<String>),
    /// The load has no such file (a shared link's report, a saved report's).
    NoFile,
}

/// A message from the client's worker (or why it stopped): a reply to whoever waits for it, a
/// frame to the timeline shown, the worker's own reading to its viewer.
fn receive(client: &Weak<RefCell<Inner>>, message: Result<FromWorker, WorkerFailure>) {
    let Some(client) = client.upgrade() else {
        return;
    };
    // No callback runs while the client is borrowed: it may ask again at once.
    let changed = match message {
        Ok(FromWorker::Reply { id, reply }) => {
            let waiting = client.borrow_mut().waiting.remove(&id);
            if let Some(on_reply) = waiting {
                on_reply.emit(reply);
            }
            return;
        }
        Ok(FromWorker::Frame(frame)) => {
            let listener = client.borrow().frames.clone();
            if let Some(listener) = listener {
                listener.emit(frame);
            }
            return;
        }
        // Worker to worker only: never the page's.
        Ok(FromWorker::Parsed(_)) => return,
        Ok(message) => {
            let received = (client.borrow_mut().viewer.as_mut()).map(|v| v.receive(&message));
            if let Some(Err(e)) = received {
                web_sys::console::error_1(&JsValue::from_str(&e));
            }
            None
        }
        Err(failure) => {
            let mut inner = client.borrow_mut();
            inner.viewer = None;
            inner.waiting.clear();
            Some(format!(
                "The worker of the file shown stopped unexpectedly: {failure}. The results are \
                 kept, and the file is read again when needed. If the file is large, the worker \
                 may have run out of memory (a worker has at most 4 GiB); otherwise this is a bug \
                 in TorchTraceAP: please report it with the trace's PyTorch version."
            ))
        }
    };
    let on_change = client.borrow().on_change.clone();
    on_change.emit(changed);
}
