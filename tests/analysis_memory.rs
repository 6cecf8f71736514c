//! What analyzing a trace allocates beyond the model it reads: in the page, the file's worker
//! keeps its wasm memory's high-water mark for as long as it holds the trace, so the
//! analysis's transient lists (the roofline's charged kernels, the attention detector's lanes)
//! weigh as much as the model itself. A counting allocator (this test binary's own) measures
//! the peak of live bytes while `AnalyzedTrace::new` runs, against the live bytes of the
//! trace read, on a generated ResNet-50 training trace (no attention: no softmax anywhere).
//! Measured: 0.97× the model before the attention detector looked for a softmax before
//! listing every op and kernel, and the roofline sized its lists once and stopped copying
//! every kernel's start per step; 0.61× after.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::AnalyzedTrace;
use torchtraceap_dev::synth::{generate, Config};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // Counted as the copy a move makes: the new block while the old is still held.
        grew(size);
        let moved = unsafe { System.realloc(ptr, layout, size) };
        LIVE.fetch_sub(layout.size(), Relaxed);
        moved
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn resnet(steps: u32) -> String {
    generate(&Config::resnet50_a100(steps)).trace
}

#[test]
fn analyzing_a_trace_allocates_at_most_three_quarters_of_its_model_beyond_it() {
    // What is made once per process (the embedded window model) is made here, not counted.
    let small = ingest_bytes(resnet(4).as_bytes(), IngestOptions::default()).expect("ingests");
    drop(AnalyzedTrace::new(&small));
    drop(small);
    let trace = resnet(200);
    let ingested = ingest_bytes(trace.as_bytes(), IngestOptions::default()).expect("ingests");
    drop(trace);
    let model = LIVE.load(Relaxed);
    PEAK.store(model, Relaxed);
    let analyzed = AnalyzedTrace::new(&ingested);
    let beyond = PEAK.load(Relaxed) - model;
    assert!(!analyzed.report().steps.is_empty());
    eprintln!(
        "model {} KiB, analysis peak {} KiB beyond it ({:.2}x)",
        model >> 10,
        beyond >> 10,
        beyond as f64 / model as f64
    );
    assert!(
        beyond * 4 <= model * 3,
        "the analysis peaked {beyond} bytes beyond the model's {model}"
    );
}
