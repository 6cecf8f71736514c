//! What the page holds of its LLM questions: each file's prompts (from the worker, tagged with
//! the options they were made with), the exchanges by file and prompt key, the kept labels; and
//! the messages that change them, including the request's streamed text.

use std::collections::BTreeMap;
use std::rc::Rc;

use torchtraceap::llm::answer::{parse_answer, Answer};
use torchtraceap::llm::check::{check, expected_of, sent_text, Check};
use torchtraceap::llm::protocol::{schema_refused, without_key, without_schema, LlmError};
use torchtraceap::ml::labels::{self, WindowLabel};
use yew::prelude::*;

use super::labels::{labels_file_name, same_window};
use super::settings::{page_origin, MadeWith, Settings};
use super::transport::{local_models, message, Failure, Request};
use crate::page::errors;
use crate::page::export::download;
use crate::protocol::{
    Question, Reply, Request as WorkerRequest, RequestError, RetrainError, Retrained,
};

/// A file's questions (prompts and request bodies), for the settings they were made with.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Prompts {
    Pending(MadeWith),
    Ready(MadeWith, Rc<Vec<Question>>),
    Failed(MadeWith, String),
}

impl Prompts {
    pub(super) fn made_with(&self) -> &MadeWith {
        match self {
            Prompts::Pending(m) | Prompts::Ready(m, _) | Prompts::Failed(m, _) => m,
        }
    }
}

/// One question about one flagged window.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Exchange {
    /// The request body is shown; nothing is sent yet.
    Preview,
    Sending {
        id: u64,
        request: Request,
        text: String,
        /// The body sent: the previewed one, or it without the answer schema the server refused.
        body: String,
        /// Why the body is not the previewed one.
        note: Option<String>,
    },
    Answered {
        answer: Answer,
        /// The answer against the request's text.
        check: Check,
        /// Why the answer is to the request without the answer schema.
        note: Option<String>,
    },
    Failed {
        message: String,
        text: String,
    },
}

/// The page's LLM state: settings, each file's prompts (from the worker) and the exchanges, by
/// file index and prompt key (`finding:<id>`, `unexplained:<step>:<window>`).
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub(super) settings: Settings,
    pub(super) settings_open: bool,
    /// Why the settings could not be stored, when the browser refused.
    pub(super) storage_error: Option<String>,
    pub(super) prompts: BTreeMap<usize, Prompts>,
    pub(super) exchanges: BTreeMap<(usize, String), Exchange>,
    pub(super) next_id: u64,
    /// The pattern the user picked for an answered region, by file and prompt key, until kept.
    pub(super) choices: BTreeMap<(usize, String), String>,
    /// The labels the user kept, in the order kept; they outlive the files shown (each names
    /// its trace) until the page closes, and leave it only through Export labels.
    pub(super) labels: Vec<WindowLabel>,
    /// Why the last export, import or model download failed.
    pub(super) export_error: Option<String>,
    /// The window model scoring the traces: the bundled one, or one retrained on the labels.
    pub(super) retraining: Retraining,
    /// The model server on this machine, looked for the first time a question is previewed
    /// while this browser holds no saved settings.
    pub(super) local: Local,
}

/// Whether the page looked for a model server on this machine
/// ([`LOCAL_SERVER`](torchtraceap::llm::protocol::LOCAL_SERVER)), and what it found.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Local {
    NotLooked,
    Looking,
    /// It answered, serving this model: the settings ask it until the user saves others.
    Found(String),
    Absent,
}

/// Where retraining the window model on the kept labels stands (the worker fits it).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Retraining {
    /// The bundled model scores the windows; nothing retrained yet.
    Bundled,
    /// The worker is fitting on this many labels (0: going back to the bundled model).
    Working(usize),
    /// The worker's reply: the traces rescored by the retrained model, or by the bundled one
    /// again (`model` is `None`).
    Done(Rc<Retrained>),
    Failed(String),
}

pub enum Msg {
    ToggleSettings,
    Settings(Settings),
    ForgetSettings,
    /// The findings of a file are shown: make sure its prompts are there.
    NeedPrompts(usize),
    Preview(usize, String),
    Close(usize, String),
    /// Send this body (the previewed text) for this file and key.
    Send(usize, String, String),
    Cancel(usize, String),
    /// A piece of the answer to request `id` (the current one for `file` and `key`, or a
    /// cancelled one, whose pieces are dropped).
    Streamed {
        file: usize,
        key: String,
        id: u64,
        piece: String,
    },
    /// Request `id` ended: the whole answer, or why there is none.
    Ended {
        file: usize,
        key: String,
        id: u64,
        result: Result<String, Failure>,
    },
    /// The pattern picked for the region `key` of `file` ("" for none yet).
    Choose(usize, String, String),
    /// Keep this label (replacing one for the same window of the same trace).
    Keep(WindowLabel),
    /// Drop the label for this label's window.
    Unkeep(WindowLabel),
    /// Offer the kept labels as a download.
    ExportLabels,
    /// Read a labels file (as Export labels writes) and keep its labels.
    ImportLabels(web_sys::File),
    /// A labels file's labels, or why it cannot be read.
    Imported(Result<Vec<WindowLabel>, String>),
    /// Fit a window model on the base set plus the kept labels, in the worker.
    Retrain,
    /// Score the windows with the bundled model again.
    BundledModel,
    /// Offer the retrained model's file as a download.
    DownloadModel,
    /// The model the server on this machine serves, or none answered.
    LocalServer(Option<String>),
    /// The worker's reply to a request of these panels (prompts, a retrain).
    Worker(Reply),
}

/// The retrained model's file name when downloaded.
const RETRAINED_MODEL_FILE: &str = "window-forest.retrained.json";

impl Default for State {
    /// The stored settings; no prompts or exchanges yet.
    fn default() -> State {
        State {
            settings: Settings::load(),
            settings_open: false,
            storage_error: None,
            prompts: BTreeMap::new(),
            exchanges: BTreeMap::new(),
            next_id: 0,
            choices: BTreeMap::new(),
            labels: Vec::new(),
            export_error: None,
            retraining: Retraining::Bundled,
            local: Local::NotLooked,
        }
    }
}

impl State {
    /// A new set of files is shown: the old files' prompts and answers go, and requests still
    /// running for them are cancelled.
    pub fn forget_files(&mut self) {
        for exchange in self.exchanges.values() {
            if let Exchange::Sending { request, .. } = exchange {
                request.cancel();
            }
        }
        self.exchanges.clear();
        self.prompts.clear();
        self.choices.clear();
        // A new load has a new worker, which scores with the bundled model.
        self.retraining = Retraining::Bundled;
    }

    /// The worker's answer to `Retrain` or `BundledModel`; returns the requests for the prompts
    /// shown, which summarize the windows the new scores flag.
    fn retrained(&mut self, result: Result<Retrained, RetrainError>) -> Vec<WorkerRequest> {
        let failed = result.is_err();
        self.retraining = match result {
            Ok(r) => Retraining::Done(Rc::new(r)),
            Err(e) => Retraining::Failed(errors::retrain_error(&e)),
        };
        if failed {
            return Vec::new();
        }
        let files: Vec<usize> = self.prompts.keys().copied().collect();
        self.prompts.clear();
        files.into_iter().filter_map(|f| self.need(f)).collect()
    }

    /// The worker's answer to a prompts request; one made with other settings than the
    /// current ones (they changed since) is dropped.
    fn prompts_arrived(
        &mut self,
        file: usize,
        made_with: MadeWith,
        result: Result<Vec<Question>, RequestError>,
    ) {
        if made_with != self.settings.made_with() {
            return;
        }
        let prompts = match result {
            Ok(p) => Prompts::Ready(made_with, Rc::new(p)),
            Err(e) => Prompts::Failed(made_with, errors::request_error(&e)),
        };
        self.prompts.insert(file, prompts);
    }

    /// Applies `msg`; returns what to ask the worker for (prompts, a retrain). `send` delivers
    /// the messages of requests in flight and of a labels file being read.
    pub fn update(&mut self, msg: Msg, send: &Callback<Msg>) -> Vec<WorkerRequest> {
        match msg {
            Msg::ToggleSettings => self.settings_open = !self.settings_open,
            Msg::Settings(settings) => {
                self.storage_error = settings.save().err();
                self.settings = settings;
                // Files whose prompts were made with other settings need new ones.
                let made_with = self.settings.made_with();
                let files: Vec<usize> = self
                    .prompts
                    .iter()
                    .filter(|(_, p)| *p.made_with() != made_with)
                    .map(|(f, _)| *f)
                    .collect();
                return files.into_iter().filter_map(|f| self.need(f)).collect();
            }
            Msg::ForgetSettings => {
                Settings::forget();
                self.storage_error = None;
                self.settings = match &self.local {
                    Local::Found(model) => Settings::local(model),
                    _ => Settings::default(),
                };
                let files: Vec<usize> = self.prompts.keys().copied().collect();
                return files.into_iter().filter_map(|f| self.need(f)).collect();
            }
            Msg::NeedPrompts(file) => return self.need(file).into_iter().collect(),
            Msg::Preview(file, key) => {
                self.exchanges.insert((file, key), Exchange::Preview);
                if self.local == Local::NotLooked && !Settings::stored() {
                    self.local = Local::Looking;
                    let send = send.clone();
                    wasm_bindgen_futures::spawn_local(async move {
                        let found = local_models().await.into_iter().next();
                        send.emit(Msg::LocalServer(found));
                    });
                }
                return self.need(file).into_iter().collect();
            }
            Msg::LocalServer(found) => {
                let Some(model) = found else {
                    self.local = Local::Absent;
                    return Vec::new();
                };
                self.local = Local::Found(model.clone());
                // Settings the user saved meanwhile win.
                if !Settings::stored() {
                    self.settings = Settings::local(&model);
                    let files: Vec<usize> = self.prompts.keys().copied().collect();
                    return files.into_iter().filter_map(|f| self.need(f)).collect();
                }
            }
            Msg::Close(file, key) => {
                self.exchanges.remove(&(file, key));
            }
            Msg::Send(file, key, body) => self.send(file, key, body, None, send),
            Msg::Cancel(file, key) => {
                if let Some(Exchange::Sending { request, .. }) =
                    self.exchanges.get(&(file, key.clone()))
                {
                    request.cancel();
                }
            }
            Msg::Streamed {
                file,
                key,
                id,
                piece,
            } => {
                if let Some(Exchange::Sending {
                    id: current, text, ..
                }) = self.exchanges.get_mut(&(file, key))
                {
                    if *current == id {
                        text.push_str(&piece);
                    }
                }
            }
            Msg::Ended {
                file,
                key,
                id,
                result,
            } => {
                let slot = (file, key);
                let Some(Exchange::Sending {
                    id: current,
                    text,
                    body,
                    note,
                    ..
                }) = self.exchanges.get(&slot)
                else {
                    return Vec::new();
                };
                if *current != id {
                    return Vec::new();
                }
                let (text, body, note) = (text.clone(), body.clone(), note.clone());
                let ended = match result {
                    Ok(text) => {
                        let answer = parse_answer(&text);
                        Exchange::Answered {
                            check: check(&sent_text(&body), &answer, expected_of(&slot.1)),
                            answer,
                            note,
                        }
                    }
                    // A server without structured output: the same request without the schema,
                    // once, saying so.
                    Err(Failure::Llm(e)) if schema_refused(&e) && note.is_none() => {
                        if let Some(plain) = without_schema(&body) {
                            let why = match &e {
                                LlmError::Http { status, message } => {
                                    format!("HTTP {status}: {message}")
                                }
                                other => other.to_string(),
                            };
                            let note = without_key(
                                &format!(
                                    "The endpoint refused the answer schema ({why}); the request was sent again without it, and the answer is read as free text."
                                ),
                                &self.settings.endpoint,
                            );
                            let (file, key) = slot;
                            self.send(file, key, plain, Some(note), send);
                            return Vec::new();
                        }
                        Exchange::Failed {
                            message: self.failure_message(&Failure::Llm(e)),
                            text,
                        }
                    }
                    Err(failure) => Exchange::Failed {
                        message: self.failure_message(&failure),
                        text,
                    },
                };
                self.exchanges.insert(slot, ended);
            }
            Msg::Choose(file, key, pattern) => {
                self.choices.insert((file, key), pattern);
            }
            Msg::Keep(label) => {
                self.labels.retain(|l| !same_window(l, &label));
                self.labels.push(label);
            }
            Msg::Unkeep(label) => self.labels.retain(|l| !same_window(l, &label)),
            Msg::ExportLabels => {
                self.export_error = download(
                    &labels_file_name(&self.labels),
                    "application/json",
                    &labels::to_json(&self.labels),
                )
                .err();
            }
            Msg::ImportLabels(file) => {
                let send = send.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    send.emit(Msg::Imported(read_labels(&file).await));
                });
            }
            Msg::Imported(Ok(imported)) => {
                self.export_error = None;
                for label in imported {
                    self.labels.retain(|l| !same_window(l, &label));
                    self.labels.push(label);
                }
            }
            Msg::Imported(Err(e)) => self.export_error = Some(e),
            Msg::Retrain => {
                if !self.labels.is_empty() && !matches!(self.retraining, Retraining::Working(_)) {
                    self.retraining = Retraining::Working(self.labels.len());
                    return vec![WorkerRequest::Retrain {
                        labels: self.labels.clone(),
                    }];
                }
            }
            Msg::BundledModel => {
                if !matches!(self.retraining, Retraining::Working(_)) {
                    self.retraining = Retraining::Working(0);
                    return vec![WorkerRequest::BundledModel {
                        labels: self.labels.clone(),
                    }];
                }
            }
            Msg::Worker(Reply::Prompts {
                file,
                options,
                endpoint,
                result,
            }) => self.prompts_arrived(file, MadeWith { options, endpoint }, result),
            Msg::Worker(Reply::Retrained(result)) => return self.retrained(*result),
            // Replies to the timeline's and the export's requests go to them, never here.
            Msg::Worker(Reply::Timeline(_) | Reply::Perfetto { .. }) => {}
            Msg::DownloadModel => {
                if let Retraining::Done(r) = &self.retraining {
                    if let Some(model) = &r.model {
                        self.export_error =
                            download(RETRAINED_MODEL_FILE, "application/json", model).err();
                    }
                }
            }
        }
        Vec::new()
    }

    /// Asks for `file`'s questions unless they are there (or on their way) for the current
    /// settings.
    fn need(&mut self, file: usize) -> Option<WorkerRequest> {
        let made_with = self.settings.made_with();
        if self
            .prompts
            .get(&file)
            .is_some_and(|p| *p.made_with() == made_with)
        {
            return None;
        }
        self.prompts
            .insert(file, Prompts::Pending(made_with.clone()));
        let MadeWith { options, endpoint } = made_with;
        Some(WorkerRequest::Prompts {
            file,
            options,
            endpoint,
        })
    }

    /// What to tell the user about `failure`: never the API key, even where the server echoed
    /// it back.
    fn failure_message(&self, failure: &Failure) -> String {
        without_key(&message(failure, &page_origin()), &self.settings.endpoint)
    }

    /// Sends `body` for `key` of `file`; `note` says why it is not the previewed body.
    fn send(
        &mut self,
        file: usize,
        key: String,
        body: String,
        note: Option<String>,
        send: &Callback<Msg>,
    ) {
        let request = match Request::new() {
            Ok(r) => r,
            Err(failure) => {
                let message = self.failure_message(&failure);
                self.exchanges.insert(
                    (file, key),
                    Exchange::Failed {
                        message,
                        text: String::new(),
                    },
                );
                return;
            }
        };
        self.next_id += 1;
        let id = self.next_id;
        self.exchanges.insert(
            (file, key.clone()),
            Exchange::Sending {
                id,
                request: request.clone(),
                text: String::new(),
                body: body.clone(),
                note,
            },
        );
        let endpoint = self.settings.endpoint.clone();
        let send = send.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let on_text = {
                let (send, key) = (send.clone(), key.clone());
                move |piece: &str| {
                    send.emit(Msg::Streamed {
                        file,
                        key: key.clone(),
                        id,
                        piece: piece.to_string(),
                    })
                }
            };
            let result = request.send(&endpoint, &body, on_text).await;
            send.emit(Msg::Ended {
                file,
                key,
                id,
                result,
            });
        });
    }

    /// The question for `key` of `file`, when the questions are there.
    pub(super) fn prompt(&self, file: usize, key: &str) -> Option<&Question> {
        match self.prompts.get(&file)? {
            Prompts::Ready(_, q) => q.iter().find(|q| q.prompt.key == key),
            _ => None,
        }
    }
}

/// The labels of a file Export labels wrote; each must name its trace by fingerprint, which is
/// how retraining finds its window.
async fn read_labels(file: &web_sys::File) -> Result<Vec<WindowLabel>, String> {
    let name = file.name();
    let text = wasm_bindgen_futures::JsFuture::from(file.text())
        .await
        .map_err(|e| format!("Could not read {name}: {e:?}. Choose the file again."))?
        .as_string()
        .unwrap_or_default();
    let read = labels::parse(&text, &name).map_err(|e| e.to_string())?;
    if let Some((i, _)) = read
        .iter()
        .enumerate()
        .find(|(_, l)| l.fingerprint.is_none())
    {
        return Err(format!(
            "{name}: label {i} names no trace (no fingerprint), as `ttap-dev synth --labels` writes: \
             import labels that this app exported, which name their trace"
        ));
    }
    Ok(read)
}
