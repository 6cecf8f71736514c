//! A `Blob`'s bytes read through a BYOB stream reader (`blob.slice(…).stream()`, reader mode
//! `byob`) into a reused `ArrayBuffer`, then copied once into wasm memory: the cheapest way to
//! read a file in this worker that was measured. Headless Chromium 156, a 2.0 GB generated trace
//! read whole in a worker (2 cores, loaded): `slice().arrayBuffer()` in 16 MiB ranges took
//! 6.3–10.6 s and 6.8–9.1 s of CPU (3 s of it on the worker's thread), `FileReaderSync` and
//! a default `stream()` reader about as much, a BYOB reader filling a reused 16 MiB buffer
//! 4.2–5.2 s and 4.3–7.9 s of CPU (1.0–2.4 s on the worker's thread). Copying 2 GB into wasm
//! memory takes 0.4 s of that. The file's reading threads share the cores with the parsing
//! workers: what reading saves, parsing gets.
//!
//! A read's buffer is transferred to the stream and back with each chunk (about 360 KB), then
//! kept for the next read: at most [`SPARE`] buffers per worker, the largest.

use std::cell::RefCell;

use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, ReadableStreamByobReader, ReadableStreamReadResult};

use crate::protocol::{FileError, ReadStep};

/// Bytes read from a file per slice when it is read in order.
pub const SLICE_BYTES: usize = 4 << 20;

/// The most bytes a read stages in a JS buffer before they are copied into wasm memory: a
/// range's bytes are read into wasm memory through it, so that a helper does not hold them
/// twice (a JS buffer the range's size, then their copy).
const STAGE: usize = 1 << 20;

/// Buffers kept between reads (a helper reads two ranges at a time: `ranges::DEPTH`).
const SPARE: usize = 2;

thread_local! {
    /// Buffers no read holds, the largest first.
    static BUFFERS: RefCell<Vec<ArrayBuffer>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of at least `bytes` bytes: a kept one, or a new one.
fn buffer(bytes: usize) -> ArrayBuffer {
    BUFFERS
        .with_borrow_mut(|kept| {
            let fits = kept
                .iter()
                .rposition(|b| b.byte_length() as usize >= bytes)?;
            Some(kept.remove(fits))
        })
        .unwrap_or_else(|| ArrayBuffer::new(bytes as u32))
}

/// Keeps `buffer` for a later read, if it is among the [`SPARE`] largest.
fn keep(buffer: ArrayBuffer) {
    BUFFERS.with_borrow_mut(|kept| {
        kept.push(buffer);
        kept.sort_by_key(|b| std::cmp::Reverse(b.byte_length()));
        kept.truncate(SPARE);
    });
}

/// Bytes `start..end` of a blob, read in order.
pub struct Stream {
    reader: ReadableStreamByobReader,
    /// The next byte to read, and where the bytes end.
    at: u64,
    end: u64,
}

impl Stream {
    /// Bytes `start..end` of `blob` (or up to its end).
    pub fn open(blob: &Blob, start: u64, end: u64) -> Result<Stream, FileError> {
        let end = end.min(blob.size() as u64);
        let start = start.min(end);
        let slice = blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| FileError::read(ReadStep::Slice { start, end }, &e))?;
        let reader = ReadableStreamByobReader::new(&slice.stream())
            .map_err(|e| FileError::read(ReadStep::Stream { start, end }, &e))?;
        Ok(Stream {
            reader,
            at: start,
            end,
        })
    }

    /// The next `max` bytes (fewer only at the end) in `out`, which they replace. `false` when
    /// no bytes are left.
    pub async fn next(&mut self, max: usize, out: &mut Vec<u8>) -> Result<bool, FileError> {
        out.clear();
        self.append(max, out).await
    }

    /// The next `max` bytes (fewer only at the end) appended to `out`, staged through a
    /// buffer of at most [`STAGE`] bytes. `false` when no bytes are left.
    async fn append(&mut self, max: usize, out: &mut Vec<u8>) -> Result<bool, FileError> {
        let want = max.min((self.end - self.at) as usize);
        if want == 0 {
            return Ok(false);
        }
        out.reserve(want);
        let mut buffer = buffer(want.min(STAGE));
        let mut filled = 0;
        while filled < want {
            let room = (want - filled).min(buffer.byte_length() as usize);
            let view = Uint8Array::new_with_byte_offset_and_length(&buffer, 0, room as u32);
            let at = self.at + filled as u64;
            let read = JsFuture::from(self.reader.read_with_array_buffer_view(&view))
                .await
                .map_err(|e| FileError::read(ReadStep::Bytes { at, end: self.end }, &e))?
                .unchecked_into::<ReadableStreamReadResult>();
            let Some(chunk) = read.get_value().dyn_into::<Uint8Array>().ok() else {
                return Err(FileError::Ended { at, end: self.end });
            };
            // The bytes are in the buffer, given back (the read transferred it).
            buffer = chunk.buffer();
            if read.get_done() == Some(true) {
                return Err(FileError::Ended { at, end: self.end });
            }
            let len = out.len();
            out.resize(len + chunk.length() as usize, 0);
            chunk.copy_to(&mut out[len..]);
            filled += chunk.length() as usize;
        }
        keep(buffer);
        self.at += want as u64;
        Ok(true)
    }
}

/// Bytes `start..end` of `blob` (or up to its end).
pub async fn bytes(blob: &Blob, start: u64, end: u64) -> Result<Vec<u8>, FileError> {
    let mut stream = Stream::open(blob, start, end)?;
    let mut out = Vec::new();
    stream.append(usize::MAX, &mut out).await?;
    Ok(out)
}
