//! Native only: the JSON framed and read on several threads, with the same result as one pass.
//!
//! ```text
//! decoded bytes ─▶ blocks (cut before an event's `{`) ─▶ N worker threads (framer + builder
//!   each, on the guess that the block starts between two events) ─▶ merged in input order
//! ```
//!
//! The cut rule, framing a block alone and the ordered merge with its guess check are
//! `blocks`'s (shared with the web app's workers); this module runs them on threads and frames
//! a block again, serially, when its guess was wrong.
//!
//! Memory: the model plus the blocks in flight (at most `threads + 1` blocks of [`BLOCK`] bytes by
//! default), the one being merged and the one being filled.
//!
//! [`read_file`] is the same for a plain file natively: the workers map their blocks of it
//! (`mapped`; positioned reads where mapping fails), so the bytes are never copied, nor pass
//! through the merging thread, which only reads a few KiB at each block's end to find the cut
//! point after it.
//!
//! Gzip input goes through [`Blocks`] too: the feeding thread inflates, cuts and merges, and the
//! workers frame, as many as for plain input. Inflating costs less than framing and reading (a
//! third to a half), so on two cores the three threads keep both busy where one thread
//! inflating and one reading left the inflating one idle half of the time.

use std::collections::BTreeMap;
#[cfg(unix)]
use std::fs::File;
#[cfg(unix)]
use std::io;
use std::ops::Deref;
#[cfg(unix)]
use std::ops::Range;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::blocks::{self, cut_point, Framed, Start, LOOKBACK};
use super::builder::Builder;
use super::event::is_ws;
use super::framer::{Framer, SyntaxError};
#[cfg(unix)]
use super::mapped::Window;

/// Bytes per block by default: large enough that merging and thread hand-offs cost little next
/// to framing, small enough that blocks in flight stay a small part of the model.
pub const BLOCK: usize = 8 << 20;
/// A block without a cut point grows to this many times the block size before it is cut
/// anywhere.
const MAX_BLOCKS_UNCUT: usize = 4;

/// Room beyond a block for the chunk that fills it (the CLI and the gzip path feed 1 MiB).
const SLACK: usize = 1 << 20;
/// How many of the document's first bytes an error message may quote.
const HEAD: usize = 8;

struct Job {
    index: usize,
    offset: u64,
    start: Start,
    bytes: Vec<u8>,
}

/// A framed block, with its bytes (a buffer, or a file's mapped window) in case the guess was
/// wrong.
struct Done<B = Vec<u8>> {
    index: usize,
    bytes: B,
    framed: Framed,
}

fn frame(job: Job) -> Done {
    let framed = blocks::frame(job.start, job.offset, &job.bytes);
    Done {
        index: job.index,
        bytes: job.bytes,
        framed,
    }
}

/// Merges `done`, the next block in input order, into the framer and builder of everything
/// before it (`blocks::merge` checks its guess), framing it again there when its guessed start
/// was wrong; gives back its bytes.
fn merge<B: Deref<Target = [u8]>>(
    done: Done<B>,
    framer: &mut Framer,
    builder: &mut Builder,
) -> (Result<(), SyntaxError>, B) {
    let framed = if blocks::merge(framer, builder, done.framed) {
        Ok(())
    } else {
        // A wrong guess, or a syntax error that framing in order reports at its place.
        framer.push(&done.bytes, builder)
    };
    (framed, done.bytes)
}

/// Blocks on their way through the worker threads; merged into the sink's framer and builder.
pub(crate) struct Blocks {
    /// The document's first bytes, for the message when it is not JSON at all.
    head: Vec<u8>,
    /// Decoded bytes not yet sent, starting at document offset `offset`.
    pending: Vec<u8>,
    offset: u64,
    /// Whether the event array is guessed to sit in a top-level object (from the first byte).
    in_object: Option<bool>,
    /// Bytes per block.
    block: usize,
    sent: usize,
    merged: usize,
    in_flight_limit: usize,
    jobs: Option<SyncSender<Job>>,
    results: Receiver<Done>,
    early: BTreeMap<usize, Done>,
    /// Buffers of merged blocks, for the next blocks.
    spare: Vec<Vec<u8>>,
    workers: Vec<JoinHandle<()>>,
}

impl Blocks {
    /// Starts `threads` worker threads for blocks of about `block` bytes.
    pub fn new(threads: usize, block: usize) -> Blocks {
        let block = block.max(1);
        let threads = threads.max(1);
        let (jobs, queue) = mpsc::sync_channel::<Job>(threads);
        let queue = Arc::new(Mutex::new(queue));
        let (done, results) = mpsc::channel();
        let workers = (0..threads)
            .map(|_| {
                let queue = Arc::clone(&queue);
                let done = done.clone();
                std::thread::spawn(move || loop {
                    let job = match queue.lock() {
                        Ok(q) => q.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    if done.send(frame(job)).is_err() {
                        return;
                    }
                })
            })
            .collect();
        Blocks {
            head: Vec::new(),
            pending: Vec::with_capacity(block + SLACK),
            block,
            offset: 0,
            in_object: None,
            sent: 0,
            merged: 0,
            in_flight_limit: threads + 1,
            jobs: Some(jobs),
            results,
            early: BTreeMap::new(),
            spare: Vec::new(),
            workers,
        }
    }

    /// Takes the next decoded bytes; sends full blocks and merges those that are done.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        framer: &mut Framer,
        builder: &mut Builder,
    ) -> Result<(), SyntaxError> {
        if self.in_object.is_none() {
            self.in_object = bytes.iter().find(|&&b| !is_ws(b)).map(|&b| b != b'[');
        }
        if self.head.len() < HEAD {
            let more = bytes.len().min(HEAD - self.head.len());
            self.head.extend_from_slice(&bytes[..more]);
        }
        self.pending.extend_from_slice(bytes);
        while self.pending.len() >= self.block {
            let cut = match cut_point(&self.pending) {
                Some(cut) => cut,
                None if self.pending.len() >= MAX_BLOCKS_UNCUT * self.block => self.pending.len(),
                None => break,
            };
            self.send(cut, framer, builder)?;
        }
        Ok(())
    }

    /// Decoded bytes received so far.
    pub fn received(&self) -> u64 {
        self.offset + self.pending.len() as u64
    }

    /// The document's first bytes (up to eight).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Sends `pending[..cut]` as the next block, first merging (and waiting for) enough blocks
    /// that at most `in_flight_limit` are in flight.
    fn send(
        &mut self,
        cut: usize,
        framer: &mut Framer,
        builder: &mut Builder,
    ) -> Result<(), SyntaxError> {
        // Blocks taken out of flight to make room, merged once the next block is on its way: a
        // worker that finished never waits for this thread's merge to get more work.
        let mut ready = Vec::new();
        while self.sent - self.merged >= self.in_flight_limit {
            ready.push(self.next_done());
        }
        // The next pending buffer is a merged block's, reused: a fresh one would cost a page
        // fault per 4 KiB. Room for a block and the chunk that fills it, never reallocated.
        let mut rest = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.block + SLACK));
        rest.extend_from_slice(&self.pending[cut..]);
        self.pending.truncate(cut);
        let bytes = std::mem::replace(&mut self.pending, rest);
        let start = match self.sent {
            0 => Start::Document,
            _ => Start::Between(self.in_object.unwrap_or(true)),
        };
        let job = Job {
            index: self.sent,
            offset: self.offset,
            start,
            bytes,
        };
        self.offset += cut as u64;
        self.sent += 1;
        if let Some(jobs) = &self.jobs {
            if let Err(mpsc::SendError(job)) = jobs.send(job) {
                // No worker is left (one panicked): frame it here.
                self.early.insert(job.index, frame(job));
            }
        }
        ready
            .into_iter()
            .try_for_each(|done| self.merge_done(done, framer, builder))
    }

    /// Waits for the next block in input order; it is no longer in flight.
    fn next_done(&mut self) -> Done {
        let done = loop {
            if let Some(done) = self.early.remove(&self.merged) {
                break done;
            }
            match self.results.recv() {
                Ok(done) if done.index == self.merged => break done,
                Ok(done) => {
                    self.early.insert(done.index, done);
                }
                Err(_) => unreachable!("a block in flight is always answered or framed here"),
            }
        };
        self.merged += 1;
        done
    }

    /// Merges `done`, the next block in input order; keeps its buffer for the next blocks.
    fn merge_done(
        &mut self,
        done: Done,
        framer: &mut Framer,
        builder: &mut Builder,
    ) -> Result<(), SyntaxError> {
        let (framed, mut spare) = merge(done, framer, builder);
        spare.clear();
        self.spare.push(spare);
        framed
    }

    /// Sends what is left and merges every block; the workers end.
    pub fn finish(mut self, framer: &mut Framer, builder: &mut Builder) -> Result<(), SyntaxError> {
        if !self.pending.is_empty() {
            self.send(self.pending.len(), framer, builder)?;
        }
        self.jobs = None;
        while self.merged < self.sent {
            let done = self.next_done();
            self.merge_done(done, framer, builder)?;
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        Ok(())
    }
}

/// Bytes read at a block's nominal end to find the cut point after it; doubled while none is
/// found, up to [`MAX_BLOCKS_UNCUT`] blocks (then the block is cut at its nominal end, and its
/// guess fails).
#[cfg(unix)]
const CUT_WINDOW: usize = 64 << 10;

/// A block of a file for a worker to map (or read) and frame, with a buffer to read it into
/// where mapping fails.
#[cfg(unix)]
struct FileJob {
    index: usize,
    start: Start,
    range: Range<u64>,
    buffer: Vec<u8>,
}

/// What a worker answers for a block of a file: its index, and the framed block, or the read
/// error, or the panic (a bug) to go on with on the merging thread.
#[cfg(unix)]
type FileDone = (usize, std::thread::Result<io::Result<Done<Window>>>);

#[cfg(unix)]
fn read_block(file: &File, job: FileJob) -> io::Result<Done<Window>> {
    let FileJob {
        index,
        start,
        range,
        buffer,
    } = job;
    let offset = range.start;
    let bytes = Window::of(file, range, buffer)?;
    let framed = blocks::frame(start, offset, &bytes);
    Ok(Done {
        index,
        bytes,
        framed,
    })
}

/// Where the block that ends near `at` ends: at the cut point `blocks::range_start` finds from
/// `at` on (the rule the web app's workers apply), at the end of the file if there is none, or
/// at `at` itself if none is found in the window.
#[cfg(unix)]
fn boundary(
    file: &File,
    at: u64,
    size: u64,
    block: usize,
    window: &mut Vec<u8>,
) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let from = at.saturating_sub(LOOKBACK);
    let mut len = CUT_WINDOW;
    loop {
        let to = (at + len as u64).min(size);
        window.resize((to - from) as usize, 0);
        file.read_exact_at(window, from)?;
        if let Some(cut) = blocks::range_start(window, from, at, to).filter(|&cut| cut < to) {
            return Ok(cut);
        }
        if to == size {
            return Ok(size);
        }
        if len >= MAX_BLOCKS_UNCUT * block {
            return Ok(at);
        }
        len *= 2;
    }
}

/// The size of the next block of a file when `left` bytes are left: `block`, but for the last
/// few a part of what is left (an eighth of a block at least), so that the threads run out of
/// blocks at about the same time instead of one framing a whole last block alone.
#[cfg(unix)]
fn tail_block(left: u64, block: usize, threads: usize) -> u64 {
    let block = block as u64;
    (left / (2 * threads as u64)).clamp((block / 8).max(1), block)
}

/// A plain JSON file of `size` bytes framed on `threads` threads, each mapping its blocks of
/// the file (nothing goes through this thread), merged in order into `framer` and `builder`
/// as [`Blocks`] merges: the same result as one pass. This thread cuts the blocks (reading a
/// few KiB at each end) and merges; `progress` gets the framer and builder after each block.
#[cfg(unix)]
pub fn read_file(
    file: &File,
    size: u64,
    threads: usize,
    block: usize,
    framer: &mut Framer,
    builder: &mut Builder,
    mut progress: impl FnMut(&Framer, &mut Builder),
) -> io::Result<Result<(), SyntaxError>> {
    let block = block.max(1);
    let threads = threads.max(1);
    let mut window = Vec::new();
    // Whether the event array is guessed to sit in a top-level object (from the first byte).
    let in_object = {
        use std::os::unix::fs::FileExt;
        window.resize(CUT_WINDOW.min(size as usize), 0);
        file.read_exact_at(&mut window, 0)?;
        window
            .iter()
            .find(|&&b| !is_ws(b))
            .is_none_or(|&b| b != b'[')
    };
    let (jobs, queue) = mpsc::sync_channel::<FileJob>(threads);
    let queue = Mutex::new(queue);
    let (done, results) = mpsc::channel::<FileDone>();
    std::thread::scope(|s| {
        // Workers end once `jobs` is dropped, when this closure returns (or unwinds).
        let jobs = jobs;
        for _ in 0..threads {
            let (queue, done) = (&queue, done.clone());
            s.spawn(move || loop {
                let job = match queue.lock() {
                    Ok(q) => q.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                let index = job.index;
                let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    read_block(file, job)
                }));
                if done.send((index, read)).is_err() {
                    return;
                }
            });
        }
        drop(done);
        let (mut sent, mut merged, mut next) = (0usize, 0usize, 0u64);
        let mut early: BTreeMap<usize, std::thread::Result<io::Result<Done<Window>>>> =
            BTreeMap::new();
        let mut spare: Vec<Vec<u8>> = Vec::new();
        // The block taken out of flight, merged once the next one is on its way (a worker that
        // finished never waits for the merge to get more work).
        let mut ready: Option<Done<Window>> = None;
        loop {
            while next < size && sent - merged <= threads {
                let nominal = next + tail_block(size - next, block, threads);
                let end = if nominal >= size {
                    size
                } else {
                    boundary(file, nominal, size, block, &mut window)?
                };
                let job = FileJob {
                    index: sent,
                    start: match sent {
                        0 => Start::Document,
                        _ => Start::Between(in_object),
                    },
                    range: next..end,
                    buffer: spare.pop().unwrap_or_default(),
                };
                jobs.send(job)
                    .expect("the workers live as long as the queue");
                next = end;
                sent += 1;
            }
            if let Some(done) = ready.take() {
                let (framed, bytes) = merge(done, framer, builder);
                // A mapped block is unmapped here; a buffer is kept for the next blocks.
                spare.extend(bytes.into_buffer());
                if framed.is_err() {
                    return Ok(framed);
                }
                progress(framer, builder);
            }
            if merged == sent {
                return Ok(Ok(()));
            }
            let answer = loop {
                if let Some(answer) = early.remove(&merged) {
                    break answer;
                }
                let (index, answer) = results
                    .recv()
                    .expect("a worker answers every block it takes");
                early.insert(index, answer);
            };
            merged += 1;
            ready = Some(answer.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?);
        }
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::tail_block;

    /// The nominal block sizes of a file of `size` bytes (before cut points move them).
    fn nominal_sizes(size: u64, block: usize, threads: usize) -> Vec<u64> {
        let mut next = 0;
        std::iter::from_fn(|| {
            let len = tail_block(size - next, block, threads).min(size - next);
            next += len;
            (len > 0).then_some(len)
        })
        .collect()
    }

    #[test]
    fn the_last_blocks_of_a_file_shrink_so_the_threads_end_together() {
        let (block, threads) = (8 << 20, 2);
        let sizes = nominal_sizes(400 << 20, block, threads);
        assert_eq!(sizes.iter().sum::<u64>(), 400 << 20);
        // Whole blocks while more than one per thread and round is left …
        let whole = sizes.iter().take_while(|&&s| s == block as u64).count();
        assert_eq!(whole, 47, "{sizes:?}");
        // … then each a quarter of what is left, down to an eighth of a block; what the last
        // round of two threads frames is at most two eighths of a block.
        let tail = &sizes[whole..];
        assert!(tail.windows(2).all(|w| w[1] <= w[0]), "{tail:?}");
        assert!(tail.iter().all(|&s| s < block as u64), "{tail:?}");
        assert_eq!(tail[tail.len() - 2], block as u64 / 8, "{tail:?}");
        assert!(tail[tail.len() - 1] <= block as u64 / 8, "{tail:?}");
        // A small file: a single block, or two of an eighth of a block each.
        assert_eq!(super::tail_block(1 << 20, block, threads), 1 << 20);
        assert_eq!(nominal_sizes(2 << 20, block, threads), vec![1 << 20; 2]);
    }
}
