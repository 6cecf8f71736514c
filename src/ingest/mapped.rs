//! Native, Unix: a window of a regular file, memory-mapped (pages populated up front) instead of
//! copied into a buffer by `read`: the kernel's copy was a sixth of a 1-thread ingest's time.
//! Only the windows being framed are mapped, each unmapped once framed: the resident memory
//! they add is a few blocks, as buffers would be.
//!
//! **A file that shrinks while mapped.** Touching a mapped page past the file's end kills the
//! process with `SIGBUS`: no error, no unwinding. Each window checks the file's size first (a
//! file already cut gives a read error, never the signal), so the risk left is the file cut
//! within a window in the milliseconds it is mapped (a trace rewritten in place while read).
//! As ripgrep does, we take that risk for regular files: profilers write a trace once, then
//! leave it. Where mapping fails, the window is read into a buffer instead.

use std::fs::File;
use std::io;
use std::ops::{Deref, Range};
use std::os::unix::fs::FileExt;

use memmap2::{Mmap, MmapOptions};

/// A window's bytes: mapped, or read where mapping failed.
pub enum Window {
    Mapped(Mmap),
    Read(Vec<u8>),
}

impl Deref for Window {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Window::Mapped(map) => map,
            Window::Read(buffer) => buffer,
        }
    }
}

impl Window {
    /// Bytes `range` of `file`, a regular file: mapped, else read into `buffer` (reused).
    /// An error where the file is now shorter than `range.end`.
    pub fn of(file: &File, range: Range<u64>, mut buffer: Vec<u8>) -> io::Result<Window> {
        let size = file.metadata()?.len();
        if size < range.end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the file shrank to {size} bytes while it was read (byte {} was expected): was it rewritten? Read it again once it is complete",
                    range.end
                ),
            ));
        }
        let len = (range.end - range.start) as usize;
        // SAFETY: the map is read only, and `size` says the file holds every byte of it. A file
        // cut in the meantime is the risk the module's doc describes.
        let map = unsafe {
            MmapOptions::new()
                .offset(range.start)
                .len(len)
                .populate()
                .map(file)
        };
        if let Ok(map) = map {
            return Ok(Window::Mapped(map));
        }
        // Only bytes beyond the buffer's last length are zeroed: buffers are reused.
        buffer.resize(len, 0);
        file.read_exact_at(&mut buffer, range.start)?;
        Ok(Window::Read(buffer))
    }

    /// The buffer of a window that was read, to read the next one into.
    pub(crate) fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            Window::Mapped(_) => None,
            Window::Read(buffer) => Some(buffer),
        }
    }
}
