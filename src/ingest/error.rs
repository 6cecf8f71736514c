//! Why an input could not be read as a PyTorch profiler trace: each case names what was found
//! and what is expected, and says what to do.

use std::fmt;

/// What a PyTorch profiler trace is, said once for every message.
const EXPECTED: &str =
    "TorchTraceAP reads PyTorch profiler traces: the Chrome-trace JSON written by \
torch.profiler (prof.export_chrome_trace(\"trace.json\") or tensorboard_trace_handler, files named \
*.pt.trace.json or *.pt.trace.json.gz)";

#[derive(Debug, Clone, PartialEq)]
pub enum IngestError {
    /// The input could not be read at all.
    Read { detail: String },
    /// Nothing but whitespace.
    Empty,
    /// The first bytes are not JSON.
    NotJson {
        first_bytes: Vec<u8>,
        looks_like: Option<&'static str>,
    },
    /// JSON that breaks off into something else at `offset`.
    Syntax {
        offset: u64,
        expected: &'static str,
        found: u8,
    },
    /// The input stops before any event could be read.
    CutBeforeEvents { offset: u64 },
    /// A JSON object without `traceEvents`.
    NoTraceEvents { keys: Vec<String> },
    /// A PyTorch execution trace (Chakra ET: `nodes`, `schema`).
    ExecutionTrace { schema: Option<String> },
    /// A memory-timeline export: an array of `[ts, action, bytes, category]` arrays.
    MemoryTimeline { arrays: u64 },
    /// A trace written by PaddlePaddle's profiler.
    PaddleTrace,
    /// The export of the pre-Kineto `torch.autograd.profiler` (PyTorch 1.7 and older).
    LegacyAutograd { events: u64 },
    /// A Chrome trace from some other tool.
    NotPyTorch {
        events: u64,
        categories: Vec<(String, u64)>,
    },
    /// A trace with no timed events.
    NoEvents {
        elements: u64,
        metadata: u64,
        skipped: Vec<(String, u64)>,
    },
    /// gzip data that is not a valid gzip stream.
    BadGzip { offset: u64, detail: String },
}

fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

impl fmt::Display for IngestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IngestError::Read { detail } => write!(f, "could not read the input: {detail}"),
            IngestError::Empty => write!(f, "the input is empty (no bytes, or only whitespace). {EXPECTED}."),
            IngestError::NotJson { first_bytes, looks_like } => {
                write!(f, "not JSON: the input starts with bytes {}", printable(first_bytes))?;
                match looks_like {
                    Some(what) => write!(f, ", which is {what}")?,
                    None => write!(f, ", which cannot start a JSON document")?,
                }
                write!(f, ". {EXPECTED}.")
            }
            IngestError::Syntax { offset, expected, found } => write!(
                f,
                "malformed JSON at byte {offset}: expected {expected}, found {}. The file is damaged or is not a trace; {EXPECTED}.",
                describe_byte(*found)
            ),
            IngestError::CutBeforeEvents { offset } => write!(
                f,
                "the input ends at byte {offset}, before any event: the file was cut off (a process killed while writing it, or an incomplete download or copy). Record or copy the trace again."
            ),
            IngestError::NoTraceEvents { keys } => write!(
                f,
                "a JSON object without \"traceEvents\" (its keys: {}). {EXPECTED}.",
                if keys.is_empty() { "none".to_string() } else { keys.join(", ") }
            ),
            IngestError::ExecutionTrace { schema } => write!(
                f,
                "this is a PyTorch execution trace (Chakra ET, schema {}: a graph of \"nodes\"), not a profiler trace with timings. \
                 Load the Kineto trace recorded alongside it (torch.profiler with export_chrome_trace) instead.",
                schema.as_deref().unwrap_or("unknown")
            ),
            IngestError::MemoryTimeline { arrays } => write!(
                f,
                "this is a torch.profiler memory-timeline export ({arrays} [timestamp, action, bytes, category] rows, from export_memory_timeline), not a trace. \
                 Load the trace itself: prof.export_chrome_trace(\"trace.json\")."
            ),
            IngestError::PaddleTrace => write!(
                f,
                "this is a PaddlePaddle profiler trace (top-level \"span_indx\"/\"ExtraInfo\", categories such as Operator/OperatorInner/CudaRuntime), not a PyTorch one. {EXPECTED}."
            ),
            IngestError::LegacyAutograd { events } => write!(
                f,
                "a trace of the legacy torch.autograd.profiler (PyTorch 1.7 and older: a top-level array with \"CPU functions\"/\"CUDA functions\" processes, {events} events): \
                 it records per-op CPU and CUDA-event times but no kernels, runtime calls or categories, so no finding can be made from it; \
                 record again with torch.profiler (PyTorch 1.8 or newer). {EXPECTED}."
            ),
            IngestError::NotPyTorch { events, categories } => {
                let cats = if categories.is_empty() {
                    "no \"cat\" field".to_string()
                } else {
                    categories.iter().map(|(c, n)| format!("{c} ({n})")).collect::<Vec<_>>().join(", ")
                };
                write!(
                    f,
                    "a Chrome trace with {events} events, but not from the PyTorch profiler: none of its categories is one Kineto writes \
                     (found: {cats}; expected cpu_op, kernel, cuda_runtime, gpu_memcpy, … or the capitalised Operator, Kernel, Runtime of PyTorch 1.8). {EXPECTED}."
                )
            }
            IngestError::NoEvents { elements, metadata, skipped } => {
                write!(f, "the trace holds no timed event ({elements} elements in traceEvents: {metadata} metadata")?;
                for (why, n) in skipped {
                    write!(f, ", {n} skipped: {why}")?;
                }
                write!(
                    f,
                    "). The profiler recorded nothing: check that the profiled code ran inside the profiler's active steps (schedule(wait, warmup, active)) and that prof.step() was called."
                )
            }
            IngestError::BadGzip { offset, detail } => write!(
                f,
                "the gzip data is damaged at or before compressed byte {offset} ({detail}). Everything before the damage was read; re-copy or re-export the trace."
            ),
        }
    }
}

impl std::error::Error for IngestError {}

/// Names well-known binary formats from their first bytes, for the "not JSON" message.
pub(crate) fn sniff_binary(first: &[u8]) -> Option<&'static str> {
    const MAGICS: [(&[u8], &str); 9] = [
        (b"PK\x03\x04", "a zip archive: unzip it and load the .json inside"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed data: decompress it (zstd -d) and load the .json"),
        (b"\xfd7zXZ\x00", "xz-compressed data: decompress it (xz -d) and load the .json"),
        (b"BZh", "bzip2-compressed data: decompress it (bunzip2) and load the .json"),
        (b"\x00\x05\x16\x07", "a macOS AppleDouble resource fork (a '._' file from a zip made on a Mac), not the trace itself"),
        (b"\x89PNG", "a PNG image"),
        (b"%PDF", "a PDF document"),
        (b"SQLite format 3", "an SQLite database (an Nsight Systems export?)"),
        (b"<", "HTML or XML"),
    ];
    MAGICS
        .iter()
        .find(|(magic, _)| first.starts_with(magic))
        .map(|&(_, what)| what)
}
