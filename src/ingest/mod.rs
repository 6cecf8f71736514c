//! Bytes → model: streaming ingestion of a trace that arrives in chunks.
//!
//! ```text
//! chunks ─▶ sniff (gzip by magic bytes) ─▶ [gunzip, streaming] ─▶ framer ─▶ builder ─▶ assemble ─▶ Trace
//! ```
//! - `framer` finds each event's bytes without parsing the rest of the document;
//! - `event` parses one event lazily (raw values, lenient numbers);
//! - `builder` appends it to the model's columns;
//! - `assemble` runs once at the end (sort, call trees, launch links, steps).
//!
//! Nothing here holds the whole input: memory is the model plus one chunk and one event.
//! The caller decides where chunks come from (a file natively, `File` slices in the browser).

mod assemble;
pub mod blocks;
mod builder;
mod capture;
pub mod early;
mod error;
mod event;
mod framer;
mod iterations;
#[cfg(unix)]
mod mapped;
mod overlaps;
#[cfg(not(target_arch = "wasm32"))]
mod parallel;
mod replays;
pub mod serving;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Read, Write};

use flate2::write::MultiGzDecoder;
use serde::Serialize;

pub use builder::skip as skip_reasons;
pub use error::IngestError;
#[cfg(not(target_arch = "wasm32"))]
pub use parallel::BLOCK as PARALLEL_BLOCK;

use crate::model::Trace;
use builder::{Builder, Room};
use framer::{Cut, Frame, Framer};

/// Choices that change what is accepted.
#[derive(Clone, Copy, Debug, Default)]
pub struct IngestOptions {
    /// Read Chrome traces that were not written by the PyTorch profiler, instead of refusing them.
    pub accept_other_chrome_traces: bool,
}

/// What was read, with everything that did not go as expected.
#[derive(Clone, Debug, Serialize)]
pub struct IngestReport {
    /// gzip recognised by its magic bytes.
    pub gzip: bool,
    /// Bytes given to the ingester (compressed size for gzip).
    pub input_bytes: u64,
    /// Bytes of JSON after decompression.
    pub json_bytes: u64,
    /// Elements of the event array, of any kind.
    pub elements: u64,
    /// Events in the model.
    pub events: u64,
    pub metadata_events: u64,
    /// Flow endpoints (`s`/`t`/`f`) read.
    pub flow_events: u64,
    /// Elements skipped, per reason.
    pub skipped: BTreeMap<String, u64>,
    /// Elements per `cat` as written (`""` for events without one).
    pub categories: BTreeMap<String, u64>,
    /// The input stopped before the JSON was complete.
    pub truncated: bool,
    /// Sentences for the user: truncation, repairs, skipped events.
    pub warnings: Vec<String>,
}

/// A trace and the report of its reading.
#[derive(Debug)]
pub struct Ingested {
    pub trace: Trace,
    pub report: IngestReport,
}

/// Progress counters, cheap to read between chunks.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Progress {
    pub input_bytes: u64,
    pub json_bytes: u64,
    pub events: u64,
}

/// The JSON side: framer and builder, fed with decompressed bytes.
struct JsonSink {
    framer: Framer,
    builder: Builder,
    error: Option<IngestError>,
    /// When reading on several threads: the blocks on their way, merged into `framer` and
    /// `builder` as they are done.
    #[cfg(not(target_arch = "wasm32"))]
    blocks: Option<parallel::Blocks>,
}

impl framer::Consumer for Builder {
    fn wants_value(&self, key: &[u8]) -> bool {
        builder::wanted_key(key)
    }

    fn frame(&mut self, frame: Frame<'_>) {
        match frame {
            Frame::TopLevel { object } => self.top.object = Some(object),
            Frame::Key(k) => self.top.keys.push(String::from_utf8_lossy(k).into_owned()),
            Frame::Value { key, bytes } => self.top_value(key, bytes),
            Frame::Element(bytes) => self.element(bytes),
            Frame::Malformed => self.malformed(),
            Frame::Oversized => self.oversized(),
        }
    }

    fn element_in_place(&mut self, rest: &[u8]) -> Result<usize, event::Stopped> {
        Builder::element_in_place(self, rest)
    }
}

impl JsonSink {
    #[cfg_attr(target_arch = "wasm32", allow(unused_variables))]
    fn new(threads: usize, block: usize) -> JsonSink {
        JsonSink {
            framer: Framer::default(),
            builder: Builder::new(),
            error: None,
            #[cfg(not(target_arch = "wasm32"))]
            blocks: (threads > 1).then(|| parallel::Blocks::new(threads, block)),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), IngestError> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(blocks) = &mut self.blocks {
            return blocks
                .feed(bytes, &mut self.framer, &mut self.builder)
                .map_err(|e| json_error(&e, self.builder.top.object.is_some(), blocks.head()));
        }
        self.framer
            .push(bytes, &mut self.builder)
            .map_err(|e| json_error(&e, self.builder.top.object.is_some(), bytes))
    }

    /// Decoded bytes received so far (framed or on their way).
    fn received(&self) -> u64 {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(blocks) = &self.blocks {
            return blocks.received();
        }
        self.framer.offset()
    }

    /// Frames what is still in flight (nothing when reading on one thread).
    fn drain(&mut self) -> Result<(), IngestError> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(blocks) = self.blocks.take() {
            let head = blocks.head().to_vec();
            return blocks
                .finish(&mut self.framer, &mut self.builder)
                .map_err(|e| json_error(&e, self.builder.top.object.is_some(), &head));
        }
        Ok(())
    }
}

/// What a structural error means: not JSON at all when the document never opened, else JSON
/// that breaks off at a byte. `bytes` is the chunk it happened in.
fn json_error(e: &framer::SyntaxError, opened: bool, bytes: &[u8]) -> IngestError {
    if e.offset == 0 || !opened {
        let head = &bytes[..bytes.len().min(8)];
        IngestError::NotJson {
            first_bytes: head.to_vec(),
            looks_like: error::sniff_binary(head),
        }
    } else {
        IngestError::Syntax {
            offset: e.offset,
            expected: e.expected,
            found: e.found,
        }
    }
}

impl Write for JsonSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.error.is_some() {
            return Err(io::Error::other("the JSON stream already failed"));
        }
        match self.feed(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.error = Some(e);
                Err(io::Error::other("the JSON stream failed"))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Stage {
    /// Waiting for enough bytes to recognise the compression.
    Sniffing(Vec<u8>),
    Plain(Box<JsonSink>),
    /// Decompressed bytes are gathered into chunks of [`GZIP_CHUNK`] before framing, so that few
    /// events straddle two chunks; on several threads they go straight into the blocks, which
    /// gather them anyway (a copy less).
    Gzip(Box<MultiGzDecoder<BufWriter<JsonSink>>>),
}

/// A streaming ingester: `feed` it chunks of any size, then `finish`.
pub struct Ingest {
    stage: Stage,
    options: IngestOptions,
    input_bytes: u64,
    gzip_error: Option<String>,
    /// Threads that frame and read the JSON (1: this one), and their block size.
    threads: usize,
    block: usize,
    sizing: Sizing,
}

/// What sizes the model's columns ahead of the input ([`Ingest::expect_input_bytes`]).
#[derive(Default)]
struct Sizing {
    /// The input's whole size, where the caller knows it.
    expected_bytes: Option<u64>,
    /// Input bytes, events and flow points at the last [`Sizing::make_room`].
    room_then: (u64, u64, u64),
    /// Input bytes read before the first flow point.
    first_flow: Option<u64>,
}

/// JSON read before the model's size is estimated from it.
const ESTIMATE_AFTER: u64 = 32 << 20;
/// JSON whose events the model keeps room for beyond the estimate (at least a parallel block).
const ROOM_JSON: u64 = 16 << 20;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const GZIP_CHUNK: usize = 1 << 20;

impl Sizing {
    /// Estimates the events and flow points of the whole input from the `read` input bytes
    /// (`json` of them decoded) and makes room for them in `b`. Events: from the events per
    /// input byte so far. Flow points often come in one block at the end of a trace: from the
    /// flow points per input byte since the first.
    fn make_room(&mut self, read: u64, json: u64, b: &mut Builder) {
        let Some(total) = self.expected_bytes else {
            return;
        };
        let then = self.room_then;
        let read = read.max(then.0);
        let (events, flows) = (b.events.len() as u64, b.flows.len() as u64);
        if flows > 0 && self.first_flow.is_none() {
            self.first_flow = Some(then.0);
        }
        self.room_then = (read, events, flows);
        if json < ESTIMATE_AFTER {
            return;
        }
        let first_flow = self.first_flow.unwrap_or(read);
        let total = total.max(read);
        // `n` counted over the input from `from` to `read`, scaled to `from` to `to`.
        let scaled = |n: u64, from: u64, to: u64| {
            let n = u128::from(n) * u128::from(to - from) / u128::from((read - from).max(1));
            usize::try_from(n).unwrap_or(usize::MAX)
        };
        let events_room = Room {
            total: scaled(events, 0, total),
            margin: 2 * (events - then.1) as usize + scaled(events, 0, ROOM_JSON * read / json),
        };
        let flows_room = Room {
            total: scaled(flows, first_flow, total),
            margin: 2 * (flows - then.2) as usize + 1024,
        };
        b.make_room(events_room, flows_room);
    }
}

impl Ingest {
    pub fn new(options: IngestOptions) -> Ingest {
        Ingest {
            stage: Stage::Sniffing(Vec::new()),
            options,
            input_bytes: 0,
            gzip_error: None,
            threads: 1,
            block: 0,
            sizing: Sizing::default(),
        }
    }

    /// Tells the ingester the size of the input it will be fed (a file's, compressed or not;
    /// a byte range's where it reads only that): from the events per input byte read so far it
    /// sizes the model's columns for the whole input, instead of letting them double (see
    /// `Builder::make_room`). A wrong size costs memory, never a different model.
    pub fn expect_input_bytes(&mut self, bytes: u64) {
        self.sizing.expected_bytes = Some(bytes);
    }

    /// Makes room in the model for the whole input (see [`Sizing::make_room`]).
    fn make_room(&mut self) {
        let sink = match &mut self.stage {
            Stage::Sniffing(_) => return,
            Stage::Plain(sink) => sink,
            Stage::Gzip(decoder) => decoder.get_mut().get_mut(),
        };
        // The builder holds the events of the JSON framed (merged, on several threads) so far:
        // the estimate counts the input bytes behind those, not the blocks still in flight.
        let json = sink.framer.offset();
        let received = sink.received().max(1);
        let read = u128::from(self.input_bytes) * u128::from(json) / u128::from(received);
        self.sizing.make_room(read as u64, json, &mut sink.builder);
    }

    /// An ingester that frames and reads the JSON on `threads` threads, in blocks of about
    /// `block` bytes ([`PARALLEL_BLOCK`] unless testing), and builds the model on two, with the
    /// same result as [`Ingest::new`]'s. For gzip input the thread that feeds it inflates
    /// besides (and merges, as it does for plain input fed to it): the threads share the cores
    /// with it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn parallel(options: IngestOptions, threads: usize, block: usize) -> Ingest {
        Ingest {
            threads: threads.max(1),
            block,
            ..Ingest::new(options)
        }
    }

    /// An ingester of plain JSON read as blocks, each framed alone ([`blocks::frame`]) and
    /// merged here in input order ([`Ingest::merge`]); a block whose merge fails is fed
    /// ([`Ingest::feed`]) instead. [`Ingest::finish`] then gives what one pass gives.
    pub fn blocks(options: IngestOptions) -> Ingest {
        Ingest {
            stage: Stage::Plain(Box::new(JsonSink::new(1, 0))),
            ..Ingest::new(options)
        }
    }

    /// Merges the next block of an [`Ingest::blocks`], framed alone. False when its guess of
    /// where it starts was wrong (or it holds a syntax error): nothing changed, and the caller
    /// feeds the block's bytes instead.
    pub fn merge(&mut self, block: blocks::Framed) -> bool {
        let Stage::Plain(sink) = &mut self.stage else {
            return false;
        };
        let merged = blocks::merge(&mut sink.framer, &mut sink.builder, block);
        self.input_bytes = sink.framer.offset();
        self.make_room();
        merged
    }

    fn sink(&self) -> Option<&JsonSink> {
        match &self.stage {
            Stage::Sniffing(_) => None,
            Stage::Plain(s) => Some(s),
            Stage::Gzip(d) => Some(d.get_ref().get_ref()),
        }
    }

    pub fn progress(&self) -> Progress {
        let sink = self.sink();
        Progress {
            input_bytes: self.input_bytes,
            json_bytes: sink.map_or(0, JsonSink::received),
            events: sink.map_or(0, |s| s.builder.elements),
        }
    }

    /// Feeds the next chunk of the input.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), IngestError> {
        self.input_bytes += chunk.len() as u64;
        if let Stage::Sniffing(head) = &mut self.stage {
            head.extend_from_slice(chunk);
            if head.len() < GZIP_MAGIC.len() {
                return Ok(());
            }
            let head = std::mem::take(head);
            self.stage = if head.starts_with(&GZIP_MAGIC) {
                let gather = if self.threads > 1 { 0 } else { GZIP_CHUNK };
                Stage::Gzip(Box::new(MultiGzDecoder::new(BufWriter::with_capacity(
                    gather,
                    JsonSink::new(self.threads, self.block),
                ))))
            } else {
                Stage::Plain(Box::new(JsonSink::new(self.threads, self.block)))
            };
            return self.pass(&head);
        }
        self.pass(chunk)?;
        self.make_room();
        Ok(())
    }

    fn pass(&mut self, bytes: &[u8]) -> Result<(), IngestError> {
        match &mut self.stage {
            Stage::Sniffing(_) => unreachable!("sniffing ends before bytes are passed on"),
            Stage::Plain(sink) => sink.feed(bytes),
            Stage::Gzip(decoder) => {
                if self.gzip_error.is_some() {
                    return Ok(());
                }
                if let Err(e) = decoder.write_all(bytes) {
                    if let Some(json) = decoder.get_mut().get_mut().error.take() {
                        return Err(json);
                    }
                    // Corrupt compressed data: keep what was decoded, like a cut file.
                    self.gzip_error = Some(e.to_string());
                }
                Ok(())
            }
        }
    }

    /// Ends the input and builds the model.
    pub fn finish(mut self) -> Result<Ingested, IngestError> {
        if let Stage::Sniffing(head) = &mut self.stage {
            // Fewer than two bytes in all: no gzip, pass them on as they are.
            let head = std::mem::take(head);
            self.stage = Stage::Plain(Box::new(JsonSink::new(self.threads, self.block)));
            self.pass(&head)?;
        }
        let mut warnings = Vec::new();
        let gzip = matches!(self.stage, Stage::Gzip(_));
        let mut sink = match self.stage {
            Stage::Sniffing(_) => unreachable!("handled above"),
            Stage::Plain(sink) => *sink,
            Stage::Gzip(mut decoder) => {
                if self.gzip_error.is_none() {
                    if let Err(e) = decoder.try_finish() {
                        self.gzip_error = Some(e.to_string());
                    }
                }
                // Whatever was decoded, even before damage, still goes through.
                let buffered = decoder.get_mut().flush();
                if let Some(json) = decoder.get_mut().get_mut().error.take() {
                    return Err(json);
                }
                buffered.map_err(read_error)?;
                let offset = self.input_bytes;
                if let Some(detail) = &self.gzip_error {
                    if decoder.get_ref().get_ref().received() == 0 {
                        return Err(IngestError::BadGzip {
                            offset,
                            detail: detail.clone(),
                        });
                    }
                    warnings.push(format!(
                        "the gzip stream is incomplete or damaged ({detail}): it ends after {offset} compressed bytes; everything decoded before that point was read."
                    ));
                }
                std::mem::replace(decoder.get_mut().get_mut(), JsonSink::new(1, 0))
            }
        };
        sink.drain()?;
        let JsonSink {
            mut framer,
            mut builder,
            ..
        } = sink;
        let cut = framer
            .finish(&mut builder)
            .map_err(|e| json_error(&e, builder.top.object.is_some(), &[]))?;
        let truncated = cut.is_err();
        match cut {
            Ok(()) => {}
            Err(Cut::Empty) => return Err(IngestError::Empty),
            Err(_) if builder.elements == 0 && builder.top.keys.iter().all(|k| k != "traceEvents") && builder.top.object == Some(true) => {
                return Err(IngestError::CutBeforeEvents { offset: framer.offset() })
            }
            Err(Cut::InsideEvent | Cut::InsideEventArray | Cut::InsideTopLevel) => warnings.push(format!(
                "the input ends before the JSON is complete (after {} bytes of JSON, {}): the file was probably cut off while being written. All {} complete events before the cut were read.",
                framer.offset(),
                match cut {
                    Err(Cut::InsideEvent) => "in the middle of an event",
                    Err(Cut::InsideEventArray) => "between events",
                    _ => "after the event array",
                },
                builder.elements
            )),
        }
        warnings.extend(builder.limit_warning());
        if framer.has_trailing_data() {
            warnings.push("bytes after the end of the JSON document were ignored.".to_string());
        }
        if builder.repaired_utf8 > 0 {
            warnings.push(format!(
                "{} events held invalid UTF-8; the bad bytes were replaced by U+FFFD.",
                builder.repaired_utf8
            ));
        }
        let unclosed = builder.close_open_events();
        assemble::check_format(
            &builder,
            unclosed.len(),
            self.options.accept_other_chrome_traces,
        )?;
        let skipped_total: u64 = builder.skipped.values().sum();
        if skipped_total > 0 {
            warnings.push(format!(
                "{skipped_total} events were skipped: {}.",
                builder
                    .skipped
                    .iter()
                    .map(|(why, n)| format!("{n} × {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let mut categories: BTreeMap<String, u64> = BTreeMap::new();
        for c in &builder.categories {
            *categories
                .entry(builder.strings.get(c.id).to_string())
                .or_default() += c.count;
        }
        let skipped = builder
            .skipped
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let elements = builder.elements;
        let metadata_events = builder.metadata_events;
        let flow_events = builder.flows.len() as u64;
        let json_bytes = framer.offset();
        drop(framer);
        let trace = assemble::assemble(builder, &unclosed, self.threads);
        let clipped = &trace.meta.clipped;
        if clipped.records > 0 {
            warnings.push(format!(
                "{} GPU records overran the next on their stream ({:.3} ms in all); each was clipped to the next one's start, so that no time counts twice.",
                clipped.records,
                clipped.ns as f64 / 1e6
            ));
        }
        let report = IngestReport {
            gzip,
            input_bytes: self.input_bytes,
            json_bytes,
            elements,
            events: trace.events.len() as u64,
            metadata_events,
            flow_events,
            skipped,
            categories,
            truncated,
            warnings,
        };
        Ok(Ingested { trace, report })
    }
}

/// Reads a whole `Read` source in chunks of `chunk_size`, calling `progress` after each.
pub fn ingest_reader(
    reader: impl Read,
    options: IngestOptions,
    chunk_size: usize,
    progress: impl FnMut(Progress),
) -> Result<Ingested, IngestError> {
    Ingest::new(options).read_all(reader, chunk_size, progress)
}

impl Ingest {
    /// Feeds a whole `Read` source in chunks of `chunk_size`, calling `progress` after each,
    /// then finishes.
    pub(crate) fn read_all(
        mut self,
        mut reader: impl Read,
        chunk_size: usize,
        mut progress: impl FnMut(Progress),
    ) -> Result<Ingested, IngestError> {
        let mut buf = vec![0u8; chunk_size.max(1)];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(e)),
            };
            self.feed(&buf[..n])?;
            progress(self.progress());
        }
        self.finish()
    }

    /// Reads a whole file: as [`Ingest::read_all`] does, in chunks of `chunk_size`, but a
    /// regular file natively on Unix is mapped a chunk at a time instead of copied (`mapped`),
    /// and an ingester on several threads given a plain (not gzip) file of at least two blocks
    /// has each thread map its own blocks, which spares this thread every byte. The same result
    /// either way. A file is read up to the size it has when the reading starts.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_file(
        self,
        file: &std::fs::File,
        chunk_size: usize,
        progress: impl FnMut(Progress),
    ) -> Result<Ingested, IngestError> {
        #[cfg(unix)]
        if self.input_bytes == 0 {
            use std::os::unix::fs::FileExt;
            let metadata = file.metadata().map_err(read_error)?;
            let size = metadata.len();
            // Pipes, devices and files whose size says nothing (as in /proc) are read as they come.
            if metadata.is_file() && size > 0 {
                let mut head = [0u8; 8];
                let n = file.read_at(&mut head, 0).map_err(read_error)?;
                let head = &head[..n];
                if self.threads > 1
                    && size >= 2 * self.block as u64
                    && !head.starts_with(&GZIP_MAGIC)
                {
                    return self.read_blocks(file, size, head, progress);
                }
                return self.read_windows(file, size, chunk_size, progress);
            }
        }
        self.read_all(file, chunk_size, progress)
    }

    /// Feeds `size` bytes of a regular `file` in windows of `window` bytes, each mapped (or
    /// read, where mapping fails) and unmapped once framed, then finishes.
    #[cfg(unix)]
    fn read_windows(
        mut self,
        file: &std::fs::File,
        size: u64,
        window: usize,
        mut progress: impl FnMut(Progress),
    ) -> Result<Ingested, IngestError> {
        let mut buffer = Vec::new();
        let mut at = 0;
        while at < size {
            let end = size.min(at + window.max(1) as u64);
            let bytes = mapped::Window::of(file, at..end, buffer).map_err(read_error)?;
            self.feed(&bytes)?;
            progress(self.progress());
            buffer = bytes.into_buffer().unwrap_or_default();
            at = end;
        }
        self.finish()
    }

    /// Reads a plain JSON `file` of `size` bytes (starting with `head`) on this ingester's
    /// threads, each mapping its own blocks (`parallel::read_file`), then finishes.
    #[cfg(unix)]
    fn read_blocks(
        mut self,
        file: &std::fs::File,
        size: u64,
        head: &[u8],
        mut progress: impl FnMut(Progress),
    ) -> Result<Ingested, IngestError> {
        let mut sink = JsonSink::new(1, 0);
        let sizing = &mut self.sizing;
        let framed = parallel::read_file(
            file,
            size,
            self.threads,
            self.block,
            &mut sink.framer,
            &mut sink.builder,
            |framer, builder| {
                sizing.make_room(framer.offset(), framer.offset(), builder);
                progress(Progress {
                    input_bytes: framer.offset(),
                    json_bytes: framer.offset(),
                    events: builder.elements,
                });
            },
        )
        .map_err(read_error)?;
        framed.map_err(|e| json_error(&e, sink.builder.top.object.is_some(), head))?;
        self.input_bytes = size;
        self.stage = Stage::Plain(Box::new(sink));
        self.finish()
    }
}

/// A failed read, for the user.
fn read_error(e: io::Error) -> IngestError {
    IngestError::Read {
        detail: e.to_string(),
    }
}

/// Reads a trace held in memory.
pub fn ingest_bytes(bytes: &[u8], options: IngestOptions) -> Result<Ingested, IngestError> {
    let mut ingest = Ingest::new(options);
    ingest.feed(bytes)?;
    ingest.finish()
}
