//! Every detector of the catalogue on small training traces written here: a positive case whose
//! impact is checked against the arithmetic of the trace, and the nearest healthy trace, which
//! must not trigger it; the warm-up rule; then the findings expected on real traces of
//! `../shared/traces` (skipped, with a message, when absent).

mod common;
mod kineto;
mod notes;

use common::{shared_traces, trace_files};
use notes::{expect_no_note, expect_note};

use std::path::{Path, PathBuf};

use torchtraceap::ingest::{ingest_bytes, ingest_reader, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect::{self, Detected, Finding, Severity, DETECTORS, OBSERVERS};
use torchtraceap::model::{StepSource, Trace};

// ---------------------------------------------------------------------------------------------
// The trace generator.

/// A DataLoader range as PyTorch names it.
const DATALOADER: &str = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
const ELEMENTWISE: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
const TENSOR_CORE_GEMM: &str = "ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn";
const SIMT_GEMM: &str = "ampere_sgemm_128x64_nn";
const ALL_REDUCE: &str =
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
/// An A100's memory, as `deviceProperties.totalGlobalMem` reports it.
const A100_MEM: u64 = 85_899_345_920;

/// The first step, when it differs from the others (warm-up).
#[derive(Clone, Copy)]
struct First {
    step_us: i64,
    dataloader_us: i64,
    alloc_pairs: u32,
}

/// A collective after the compute kernels (exposed) or alongside the first one (overlapped).
#[derive(Clone, Copy)]
struct Collective {
    dur_us: i64,
    overlapped: bool,
}

/// The shape of a training run; every step is laid out the same way, in microseconds from the
/// step's start:
///
/// ```text
/// [DataLoader dataloader_us] [cudaFree free_us, cudaMalloc malloc_us] × alloc_pairs
/// [H2D copy copy_us] then kernels × (GPU idle gap_us, kernel kernel_us), the first half under
/// `## forward ##` and the rest under `## backward ##` (a training step) [collective, exposed]
/// … tail until step_us
/// ```
///
/// Each kernel's `cudaLaunchKernel` (launch_us long) ends 1 µs before the kernel starts and
/// begins after the GPU went idle, so every gap is host wait. The copy's runtime call spans the
/// copy. The sync, when set, is an `aten::item` waiting on kernel `after`; the GPU then idles
/// `idle_us` before the next kernel.
#[derive(Clone)]
struct Shape {
    steps: usize,
    step_us: i64,
    first: Option<First>,
    dataloader_us: i64,
    alloc_pairs: u32,
    malloc_us: i64,
    free_us: i64,
    /// `(duration, "Pageable" | "Pinned")`
    copy: Option<(i64, &'static str)>,
    kernels: u32,
    kernel_us: i64,
    gap_us: i64,
    launch_us: i64,
    /// When set, each launch sits at the end of an `aten::linear` op this long (the host's
    /// time to issue the kernel).
    op_us: Option<i64>,
    /// When set, one `cudaGraphLaunch` (as long as a kernel launch, before the first kernel)
    /// replays the step's kernels: they carry its correlation id and have no launch of their
    /// own.
    graph: bool,
    /// The range around each step: `ProfilerStep#N` when `None`, else this `record_function`
    /// name in every step (a loop profiled without a schedule).
    mark: Option<&'static str>,
    /// Kernel names, used in turn.
    names: &'static [&'static str],
    /// Kernel `j` runs on device `j % devices`.
    devices: i64,
    /// `(after kernel, GPU idle after the sync)`
    sync: Option<(u32, i64)>,
    collective: Option<Collective>,
    /// `Total Allocated` reported once per step by the caching allocator.
    allocated: Option<u64>,
    gpu: (&'static str, i64, u64),
    backend: &'static str,
    world_size: i64,
}

impl Shape {
    /// A healthy run on an A100: 4 steps of 10 ms, DataLoader 200 µs (2%), 45 tensor-core or
    /// element-wise kernels of 200 µs each after 16 µs of launch gap: GPU busy 9 ms (90%).
    fn healthy() -> Shape {
        Shape {
            steps: 4,
            step_us: 10_000,
            first: None,
            dataloader_us: 200,
            alloc_pairs: 0,
            malloc_us: 100,
            free_us: 150,
            copy: None,
            kernels: 45,
            kernel_us: 200,
            gap_us: 16,
            launch_us: 10,
            op_us: None,
            graph: false,
            mark: None,
            names: &[TENSOR_CORE_GEMM, ELEMENTWISE],
            devices: 1,
            sync: None,
            collective: None,
            allocated: None,
            gpu: ("NVIDIA A100-SXM4-80GB", 8, A100_MEM),
            backend: "nccl",
            world_size: 1,
        }
    }

    fn json(&self) -> String {
        let mut g = Gen::default();
        let mut start = 1_000_000; // µs, like a real trace's clock
        for k in 0..self.steps {
            let first = self.first.filter(|_| k == 0);
            let step_us = first.map_or(self.step_us, |f| f.step_us);
            let end = self.step(&mut g, k, start, first);
            assert!(end <= start + step_us, "step {k} overflows: {end}");
            let mark = self
                .mark
                .map_or_else(|| format!("ProfilerStep#{}", k + 1), str::to_string);
            g.cpu("user_annotation", &mark, start, step_us, "");
            start += step_us;
        }
        let devices: Vec<String> = (0..self.devices)
            .map(|d| kineto::device(d, self.gpu.0, self.gpu.1, self.gpu.2))
            .collect();
        let distributed = format!(
            r#""distributedInfo": {{"backend": "{}", "rank": 0, "world_size": {}}}, "#,
            self.backend, self.world_size
        );
        kineto::document(&devices, &distributed, &g.events, "synthetic.pt.trace.json")
    }

    /// Writes one step's events; returns where its last event ends.
    fn step(&self, g: &mut Gen, k: usize, start: i64, first: Option<First>) -> i64 {
        let mut c = start;
        let dataloader = first.map_or(self.dataloader_us, |f| f.dataloader_us);
        if dataloader > 0 {
            g.cpu("user_annotation", DATALOADER, c, dataloader, "");
            c += dataloader;
        }
        if let Some(bytes) = self.allocated {
            g.memory(start + 1, bytes);
        }
        for _ in 0..first.map_or(self.alloc_pairs, |f| f.alloc_pairs) {
            g.cpu("cuda_runtime", "cudaFree", c, self.free_us, "");
            g.cpu(
                "cuda_runtime",
                "cudaMalloc",
                c + self.free_us,
                self.malloc_us,
                "",
            );
            c += self.free_us + self.malloc_us;
        }
        if let Some((dur, host)) = self.copy {
            let name = format!("Memcpy HtoD ({host} -> Device)");
            g.cpu("cpu_op", "aten::copy_", c, dur, "");
            g.gpu_work(
                "cudaMemcpyAsync",
                (c, dur),
                "gpu_memcpy",
                &name,
                (0, 7, c),
                dur,
            );
            c += dur;
        }
        let forward = c;
        let graph = self.graph.then(|| {
            g.call(
                100,
                "cudaGraphLaunch",
                (c + self.gap_us - 1 - self.launch_us, self.launch_us),
            )
        });
        let mut first_kernel = None;
        let mut backward_at = None;
        for j in 0..self.kernels {
            let gap = match self.sync {
                Some((after, idle)) if j == after + 1 => idle,
                _ => self.gap_us,
            };
            assert!(gap > self.launch_us, "the launch must fit in the gap");
            let at = c + gap;
            first_kernel.get_or_insert(at);
            if j == self.kernels / 2 {
                backward_at = Some(c);
            }
            let name = self.names[(k * self.kernels as usize + j as usize) % self.names.len()];
            let launch = (at - 1 - self.launch_us, self.launch_us);
            if let Some(op) = self.op_us {
                g.cpu("cpu_op", "aten::linear", at - 1 - op, op, "");
            }
            let device = j as i64 % self.devices;
            match graph {
                Some(corr) => g.work(corr, "kernel", name, (device, 7, at), self.kernel_us),
                None => g.gpu_work(
                    "cudaLaunchKernel",
                    launch,
                    "kernel",
                    name,
                    (device, 7, at),
                    self.kernel_us,
                ),
            }
            if matches!(self.sync, Some((after, _)) if after == j) {
                // loss.item(): the CPU waits for the kernel to finish.
                g.cpu("cpu_op", "aten::item", at, self.kernel_us + 2, "");
                g.cpu(
                    "cuda_runtime",
                    "cudaStreamSynchronize",
                    at,
                    self.kernel_us,
                    "",
                );
            }
            c = at + self.kernel_us;
        }
        // A training step: the first half of the kernels is the forward pass, the rest backward.
        let backward = backward_at.unwrap_or(c);
        g.cpu(
            "user_annotation",
            "## forward ##",
            forward,
            backward - forward,
            "",
        );
        if c > backward {
            g.cpu(
                "user_annotation",
                "## backward ##",
                backward,
                c - backward,
                "",
            );
        }
        if let Some(coll) = self.collective {
            // Launched from DDP's communication thread.
            let at = if coll.overlapped {
                first_kernel.expect("a kernel to overlap")
            } else {
                c + 6
            };
            g.cpu_on(101, "user_annotation", "nccl:all_reduce", at - 6, 5, "");
            g.gpu_work_on(
                101,
                "cudaLaunchKernel",
                (at - 6, 5),
                "kernel",
                ALL_REDUCE,
                (0, 20, at),
                coll.dur_us,
            );
            c = c.max(at + coll.dur_us);
        }
        c
    }
}

/// Event text and correlation ids.
#[derive(Default)]
struct Gen {
    events: Vec<String>,
    correlation: u64,
}

impl Gen {
    /// A range on the main Python thread.
    fn cpu(&mut self, cat: &str, name: &str, ts: i64, dur: i64, args: &str) {
        self.cpu_on(100, cat, name, ts, dur, args);
    }

    fn cpu_on(&mut self, tid: i64, cat: &str, name: &str, ts: i64, dur: i64, args: &str) {
        self.events
            .push(kineto::complete(cat, name, (100, tid), (ts, dur), args));
    }

    fn gpu_work(
        &mut self,
        call: &str,
        at: (i64, i64),
        cat: &str,
        name: &str,
        place: (i64, i64, i64),
        dur: i64,
    ) {
        self.gpu_work_on(100, call, at, cat, name, place, dur);
    }

    /// A runtime call at `at` = (ts, dur) on CPU thread `tid`, and the GPU work it queued at
    /// `place` = (device, stream, ts), linked by a correlation id.
    #[allow(clippy::too_many_arguments)]
    fn gpu_work_on(
        &mut self,
        tid: i64,
        call: &str,
        at: (i64, i64),
        cat: &str,
        name: &str,
        place: (i64, i64, i64),
        dur: i64,
    ) {
        let corr = self.call(tid, call, at);
        self.work(corr, cat, name, place, dur);
    }

    /// A runtime call at `at` = (ts, dur) on CPU thread `tid`, with a new correlation id,
    /// returned.
    fn call(&mut self, tid: i64, call: &str, at: (i64, i64)) -> u64 {
        self.correlation += 1;
        let corr = self.correlation;
        self.cpu_on(
            tid,
            "cuda_runtime",
            call,
            at.0,
            at.1,
            &format!(r#""correlation": {corr}"#),
        );
        corr
    }

    /// GPU work at `place` = (device, stream, ts) queued by the call of correlation `corr`.
    fn work(&mut self, corr: u64, cat: &str, name: &str, place: (i64, i64, i64), dur: i64) {
        let (device, stream, ts) = place;
        let bytes = if cat == "gpu_memcpy" {
            // 12 GB/s: 12 kB per µs.
            format!(r#", "bytes": {}"#, dur * 12_000)
        } else {
            String::new()
        };
        let args =
            format!(r#""correlation": {corr}, "device": {device}, "stream": {stream}{bytes}"#);
        self.events.push(kineto::complete(
            cat,
            name,
            (device, stream),
            (ts, dur),
            &args,
        ));
    }

    /// A caching-allocator event on device 0 bringing `Total Allocated` to `total`.
    fn memory(&mut self, ts: i64, total: u64) {
        self.events.push(kineto::memory(
            (100, 100),
            ts,
            (1, 0),
            1 << 30,
            (total, total),
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Running the detectors.

fn ingest(text: &str) -> Trace {
    ingest_bytes(text.as_bytes(), IngestOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .trace
}

fn detected(shape: &Shape) -> Detected {
    let trace = ingest(&shape.json());
    let analysis = Analysis::new(&trace);
    assert_eq!(analysis.steps.steps.len(), shape.steps);
    detect::run(&analysis)
}

fn findings(shape: &Shape) -> Vec<Finding> {
    detected(shape).findings
}

fn ids(found: &[Finding]) -> Vec<&'static str> {
    found.iter().map(|f| f.id).collect()
}

/// `id (ms per step, % of step)` of each finding, for messages.
fn summaries(found: &[Finding]) -> Vec<String> {
    found
        .iter()
        .map(|f| {
            format!(
                "{} ({:.3} ms, {:.1}%)",
                f.id, f.impact.ms_per_step, f.impact.pct_of_step
            )
        })
        .collect()
}

/// The finding `id`, which must be there.
fn found_in(shape: &Shape, id: &str) -> Finding {
    let found = findings(shape);
    found
        .iter()
        .find(|f| f.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no {id} in {:?}", summaries(&found)))
}

/// The finding `id` must be there, with this impact (ms per step, % of a 10 ms step) and severity.
fn expect(shape: &Shape, id: &str, ms_per_step: f64, severity: Severity) -> Finding {
    assert!(
        DETECTORS.iter().any(|d| d.id() == id),
        "{id} is no detector"
    );
    let found = findings(shape);
    let f = found
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("{id} not found; found {:?}", ids(&found)))
        .clone();
    let pct = 100.0 * ms_per_step / (shape.step_us as f64 / 1000.0);
    assert!(
        (f.impact.ms_per_step - ms_per_step).abs() < 1e-3,
        "{id}: {} ms per step, expected {ms_per_step} ({})",
        f.impact.ms_per_step,
        f.summary
    );
    assert!(
        (f.impact.pct_of_step - pct).abs() < 0.01,
        "{id}: {}% of the step, expected {pct}",
        f.impact.pct_of_step
    );
    assert_eq!(f.severity, severity, "{id}: {}", f.summary);
    // Every steady step of these traces is laid out the same way: the gate holds in all of them.
    assert_eq!(
        f.gate.held_steps, f.gate.steady_steps,
        "{id}: gate held in {} of {} steady steps",
        f.gate.held_steps, f.gate.steady_steps
    );
    assert!(f.gate.margin >= 1.0, "{id}: margin {}", f.gate.margin);
    f
}

/// The finding `id` must not be there.
fn expect_none(shape: &Shape, id: &str) {
    assert!(
        DETECTORS.iter().any(|d| d.id() == id),
        "{id} is no detector"
    );
    let found = findings(shape);
    if let Some(f) = found.iter().find(|f| f.id == id) {
        panic!(
            "{id} must not fire on the healthy trace: {} ({} ms per step, {:?})",
            f.summary, f.impact.ms_per_step, f.severity
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Each detector: the anti-pattern, and the nearest healthy trace.

#[test]
fn the_healthy_run_triggers_nothing() {
    let found = findings(&Shape::healthy());
    assert!(found.is_empty(), "{:?}", ids(&found));
}

fn dataloader(us: i64) -> Shape {
    Shape {
        dataloader_us: us,
        kernels: 30,
        ..Shape::healthy()
    }
}

#[test]
fn dataloader_bottleneck() {
    // DataLoader 3 ms at the start of each 10 ms step (30%), no GPU work meanwhile (the previous
    // step's 30 kernels end at 3 000 + 30 × 216 = 9 480 µs): 3 ms of GPU idle per step = 30%.
    let f = expect(
        &dataloader(3_000),
        "dataloader-bottleneck",
        3.0,
        Severity::High,
    );
    // 30% against the 5% gate in all 4 steady steps: confidence 1.
    assert_eq!(f.confidence, 1.0);
    assert!(
        f.evidence[0].events[0].starts_with(DATALOADER),
        "{:?}",
        f.evidence[0].events
    );
}

#[test]
fn a_dataloader_stall_in_one_step_of_five_is_a_note() {
    // The 3 ms DataLoader wait in the first step only (as fast as the others and without
    // mallocs, so it is steady): the gate holds in 1 of 5 steady steps, below half of them.
    let shape = Shape {
        steps: 5,
        first: Some(First {
            step_us: 10_000,
            dataloader_us: 3_000,
            alloc_pairs: 0,
        }),
        ..dataloader(200)
    };
    let found = detected(&shape);
    assert!(
        found
            .findings
            .iter()
            .all(|f| f.id != "dataloader-bottleneck"),
        "{:?}",
        summaries(&found.findings)
    );
    let n = found
        .notes
        .iter()
        .find(|n| n.id == "dataloader-bottleneck")
        .expect("a dataloader-bottleneck note");
    assert!(n.text.contains("in 1 of 5 steady steps"), "{}", n.text);
}

#[test]
fn an_inference_trace_waits_on_its_dataloader_too() {
    // The same 3 ms DataLoader wait, but no backward pass (evaluation, batch inference): the
    // GPU waits all the same, 3 ms per step = 30%.
    let trace = ingest(
        &dataloader(3_000)
            .json()
            .replace("## backward ##", "## head ##"),
    );
    let analysis = Analysis::new(&trace);
    assert!(!analysis.training);
    let found = detect::run(&analysis);
    let f = found
        .findings
        .iter()
        .find(|f| f.id == "dataloader-bottleneck")
        .expect("dataloader-bottleneck");
    assert!((f.impact.ms_per_step - 3.0).abs() < 1e-9, "{}", f.summary);
    assert_eq!(f.severity, Severity::High);
}

#[test]
fn dataloader_at_2_percent_is_fine() {
    expect_none(&dataloader(200), "dataloader-bottleneck");
}

fn utilization(kernel_us: i64, gap_us: i64) -> Shape {
    Shape {
        kernels: 10,
        kernel_us,
        gap_us,
        ..Shape::healthy()
    }
}

#[test]
fn gpu_low_utilization() {
    // 10 kernels of 300 µs each after 600 µs of host wait: busy 3 ms. Before the first kernel
    // come the DataLoader's 200 µs and the first 600 µs wait (800 µs, host-only-time's part);
    // after the last, the tail 10 000 - 200 - 10 × 900 = 800 µs. Active: 8.4 ms, 36% busy.
    // Host wait between kernels: 9 × 600 µs = 5.4 ms.
    expect(
        &utilization(300, 600),
        "gpu-low-utilization",
        5.4,
        Severity::High,
    );
}

#[test]
fn host_only_time() {
    // 10 kernels of 100 µs with 20 µs gaps after the DataLoader's 200 µs: the GPU work ends
    // 200 + 10 × 120 = 1 400 µs into the 10 ms step. Before the first kernel: 220 µs; after the
    // last: 8 600 µs; less the DataLoader's 200 µs: 8.62 ms (86.2%).
    expect(
        &utilization(100, 20),
        "host-only-time",
        8.62,
        Severity::High,
    );
}

#[test]
fn host_only_time_with_a_few_kernels_per_step() {
    // Steps of 3 kernels (an inference call, a small model): 3 × 120 µs after the DataLoader's
    // 200 µs; before the first kernel 220 µs, after the last 10 000 - 200 - 360 = 9 440 µs,
    // less the DataLoader: 9.46 ms. Few kernels do not make the host's time less real.
    let shape = Shape {
        kernels: 3,
        ..utilization(100, 20)
    };
    expect(&shape, "host-only-time", 9.46, Severity::High);
}

#[test]
fn host_only_time_in_the_iterations_of_a_loop_without_profiler_steps() {
    // The host-only-time shape, each step a `train_step` range instead of `ProfilerStep#N`:
    // the iterations are those ranges, and each spends over 80% of itself on the host alone.
    let shape = Shape {
        mark: Some("train_step"),
        ..utilization(100, 20)
    };
    let trace = ingest(&shape.json());
    assert_eq!(trace.step_source, StepSource::RepeatedAnnotations);
    let found = detect::run(&Analysis::new(&trace)).findings;
    let f = found
        .iter()
        .find(|f| f.id == "host-only-time")
        .unwrap_or_else(|| panic!("no host-only-time in {:?}", summaries(&found)));
    assert_eq!(f.gate.held_steps, f.gate.steady_steps, "{}", f.summary);
    assert!(f.impact.pct_of_step > 80.0, "{}", f.summary);
}

#[test]
fn a_step_filled_with_gpu_work_has_no_host_only_time() {
    // The healthy shape: 216 µs before the first kernel, 80 µs after the last, less 200 µs of
    // DataLoader: 0.1 ms.
    expect_none(&Shape::healthy(), "host-only-time");
}

#[test]
fn gpu_busy_90_percent_is_fine() {
    // 10 kernels of 900 µs with 20 µs gaps: 9 ms busy of 10.
    expect_none(&utilization(900, 20), "gpu-low-utilization");
}

fn launches(kernel_us: i64, kernels: u32) -> Shape {
    Shape {
        kernels,
        kernel_us,
        gap_us: 16,
        launch_us: 14,
        ..Shape::healthy()
    }
}

#[test]
fn launch_bound_small_kernels() {
    // 400 kernels of 4 µs, each launched by a 14 µs cudaLaunchKernel after the GPU went idle
    // (gap 16 µs): all kernels short. The GPU idles between its first and its last kernel in
    // the 399 gaps between them: 399 × 16 µs = 6.384 ms (64% of the step, ≥ 10%), all of it
    // waiting on launches. Margin 6.4 over the 10% gate: confidence 1.
    let f = expect(
        &launches(4, 400),
        "launch-bound-small-kernels",
        6.384,
        Severity::High,
    );
    assert_eq!(f.confidence, 1.0);
    assert_eq!(f.worst_steps().len(), 3);
}

#[test]
fn kernels_shorter_than_the_ops_that_launch_them_are_launch_bound() {
    // 100 kernels of 20 µs (none under 10 µs), each launched at the end of a 39 µs op after
    // the GPU went idle (gap 40 µs): the host takes longer to issue a kernel than the GPU to
    // run it. The 99 gaps between kernels: 99 × 40 µs = 3.96 ms, launch-bound, not low
    // utilization.
    let eager = Shape {
        gap_us: 40,
        op_us: Some(39),
        ..launches(20, 100)
    };
    expect(&eager, "launch-bound-small-kernels", 3.96, Severity::High);
    expect_none(&eager, "gpu-low-utilization");
    // The same kernels issued by ops shorter than they run are not.
    let quick = Shape {
        op_us: Some(15),
        ..eager
    };
    expect_none(&quick, "launch-bound-small-kernels");
}

#[test]
fn a_graph_replay_is_one_launch() {
    // The 400 kernels of 4 µs of `launch_bound_small_kernels`, replayed by one cudaGraphLaunch
    // per step: the host issues one call, not 400, and no launch is left to wait on. The
    // replay's 1.6 ms of kernels is one launch, not a short one: the step is not launch-bound
    // (its 64% idle between kernels is low utilization).
    let graph = Shape {
        graph: true,
        ..launches(4, 400)
    };
    expect_none(&graph, "launch-bound-small-kernels");
    let t = ingest(&graph.json());
    let m = torchtraceap::internals::metrics::measure(&t, t.steps[1].start, t.steps[1].end);
    assert_eq!((m.kernels, m.short_kernels), (400, 400));
    assert_eq!((m.graph_kernels, m.launched, m.short_launched), (400, 1, 0));
    assert_eq!(m.launch_calls, 1);
    // The kernels' details name their graph launch, one of 4 (one per step), of 400 kernels.
    let kernel = t.launches[0].gpu;
    let launch = t.launch_of(kernel).expect("the kernel's launch");
    assert!(t.is_graph_launch(launch as usize));
    let of = torchtraceap::internals::graphs::launch_of(&t, launch).expect("a graph launch");
    assert_eq!((of.ordinal, of.launches, of.kernels), (1, 4, 400));
}

#[test]
fn kernels_of_200_us_are_not_launch_bound() {
    expect_none(&launches(200, 40), "launch-bound-small-kernels");
}

fn sync(sync: Option<(u32, i64)>) -> Shape {
    Shape {
        kernels: 35,
        sync,
        ..Shape::healthy()
    }
}

#[test]
fn host_device_sync() {
    // aten::item → cudaStreamSynchronize waits on kernel 19; the next kernel is launched 1.5 ms
    // after the sync returns, so the GPU is idle for the whole 1 ms window after it: 1 ms = 10%.
    expect(
        &sync(Some((19, 1_500))),
        "host-device-sync",
        1.0,
        Severity::Medium,
    );
}

#[test]
fn a_sync_after_the_steps_last_kernel_costs_the_refill_before_the_next_step() {
    // aten::item waits on the last of the 35 kernels: the host queues the next step's work only
    // once it returns, so the GPU's idle in the 1 ms after it is the sync's drain (a cause),
    // not host-only time (a symptom): 1 ms in each of the first three steps. The last step's
    // sync drains the trace's last work, with nothing to refill: 3 ms over 4 steps.
    let f = found_in(&sync(Some((34, 1_500))), "host-device-sync");
    assert!((f.impact.ms_per_step - 0.75).abs() < 1e-3, "{}", f.summary);
    assert_eq!((f.gate.held_steps, f.gate.steady_steps), (3, 4));
}

#[test]
fn no_sync_in_the_step_is_fine() {
    expect_none(&sync(None), "host-device-sync");
}

fn copy(host: &'static str) -> Shape {
    Shape {
        kernels: 35,
        copy: Some((1_200, host)),
        ..Shape::healthy()
    }
}

#[test]
fn pageable_memcpy() {
    // One 1.2 ms H2D copy from pageable memory per step; pinned runs it twice as fast:
    // 0.6 ms = 6%.
    expect(&copy("Pageable"), "pageable-memcpy", 0.6, Severity::Medium);
}

#[test]
fn a_pageable_copy_leaves_the_half_pinning_keeps_to_heavy_memcpy() {
    // The same 1.2 ms copy (12% of the step, over heavy-memcpy's 5%): pinning saves its first
    // 0.6 ms; the other 0.6 ms is still a host copy, which overlapping would hide half of:
    // 0.3 ms = 3%.
    let shape = copy("Pageable");
    expect(&shape, "pageable-memcpy", 0.6, Severity::Medium);
    expect(&shape, "heavy-memcpy", 0.3, Severity::Low);
}

#[test]
fn pinned_copies_are_fine() {
    expect_none(&copy("Pinned"), "pageable-memcpy");
}

fn gemms(names: &'static [&'static str], gpu: (&'static str, i64, u64)) -> Shape {
    Shape {
        kernels: 30,
        names,
        gpu,
        ..Shape::healthy()
    }
}

#[test]
fn fp32_without_tensor_cores() {
    // On an A100, 15 of the 30 kernels of 200 µs are SIMT sgemm: 3 ms per step (50% of kernel
    // time); TF32 or bf16 halves it: 1.5 ms = 15%.
    let f = expect(
        &gemms(&[SIMT_GEMM, ELEMENTWISE], Shape::healthy().gpu),
        "fp32-without-tensor-cores",
        1.5,
        Severity::Medium,
    );
    assert_eq!(
        f.evidence[0].events,
        vec![format!("{SIMT_GEMM}: 3.000 ms per step")]
    );
    // 50% of kernel time against the 10% gate: margin 5, confidence 1.
    assert!((f.gate.median - 50.0).abs() < 1e-9, "{}", f.gate.median);
    assert_eq!(f.confidence, 1.0);
}

#[test]
fn tensor_core_gemms_or_a_gpu_without_tensor_cores_are_fine() {
    let a100 = Shape::healthy().gpu;
    expect_none(
        &gemms(&[TENSOR_CORE_GEMM, ELEMENTWISE], a100),
        "fp32-without-tensor-cores",
    );
    // A P100 (compute capability 6.0) has no tensor cores: sgemm is the best it can do.
    let p100 = ("Tesla P100-PCIE-16GB", 6, 17_071_734_784);
    expect_none(
        &gemms(&[SIMT_GEMM, ELEMENTWISE], p100),
        "fp32-without-tensor-cores",
    );
}

#[test]
fn allocator_churn() {
    // 4 cudaFree (150 µs) + 4 cudaMalloc (100 µs) in every step, the first included (so it is
    // no warm-up): 4 × 250 µs = 1 ms of CPU time per step = 10%.
    let shape = Shape {
        kernels: 35,
        alloc_pairs: 4,
        ..Shape::healthy()
    };
    expect(&shape, "allocator-churn", 1.0, Severity::Medium);
}

#[test]
fn caching_allocator_without_mallocs_in_steady_steps_is_fine() {
    // The allocator fills up in the first step only (4 mallocs > 2 × max(median 0, 1)): that
    // step is warm-up by the allocation rule, although it is no slower.
    let shape = Shape {
        kernels: 35,
        first: Some(First {
            step_us: 10_000,
            dataloader_us: 200,
            alloc_pairs: 4,
        }),
        ..Shape::healthy()
    };
    let trace = ingest(&shape.json());
    let analysis = Analysis::new(&trace);
    assert!(analysis.steps.steps[0].warmup);
    assert_eq!(analysis.steady, vec![1, 2, 3]);
    assert_eq!(analysis.step_metrics[0].mallocs, 4);
    expect_none(&shape, "allocator-churn");
}

fn memory(share: f64) -> Shape {
    Shape {
        allocated: Some((share * A100_MEM as f64) as u64),
        ..Shape::healthy()
    }
}

#[test]
fn memory_pressure() {
    // Peak 95% of the A100's 80 GiB: a risk, not lost time, so a note and no finding.
    let n = expect_note(detected(&memory(0.95)), "memory-pressure");
    assert!(n.text.contains("95%"), "{}", n.text);
    assert!(n.text.contains("80.0 GiB"), "{}", n.text);
}

#[test]
fn memory_at_half_the_device_is_fine() {
    expect_no_note(&detected(&memory(0.5)), "memory-pressure");
}

#[test]
fn communication_exposed() {
    // A 2.5 ms all-reduce after the 30 kernels (which end at 200 + 30 × 216 = 6 680 µs), with no
    // compute alongside: 25% of the step, all of it exposed: 2.5 ms = 25%.
    let shape = Shape {
        kernels: 30,
        collective: Some(Collective {
            dur_us: 2_500,
            overlapped: false,
        }),
        ..Shape::healthy()
    };
    expect(&shape, "communication-exposed", 2.5, Severity::High);
}

#[test]
fn communication_overlapped_by_compute_is_fine() {
    // The same 2.5 ms all-reduce on stream 20, running inside a 2.9 ms compute kernel on
    // stream 7: none of it is exposed.
    let shape = Shape {
        kernels: 3,
        kernel_us: 2_900,
        collective: Some(Collective {
            dur_us: 2_500,
            overlapped: true,
        }),
        ..Shape::healthy()
    };
    let trace = ingest(&shape.json());
    let analysis = Analysis::new(&trace);
    let device = analysis.step_metrics[1].main_device().unwrap().clone();
    assert_eq!(
        (device.communication, device.communication_exposed),
        (2_500_000, 0)
    );
    expect_none(&shape, "communication-exposed");
}

fn devices(devices: i64) -> Shape {
    Shape {
        devices,
        ..Shape::healthy()
    }
}

#[test]
fn data_parallel() {
    // Kernels alternate between GPUs 0 and 1 in one process: no time estimate, so a note.
    let n = expect_note(detected(&devices(2)), "data-parallel");
    assert!(n.text.contains("on 2 GPUs ([0, 1])"), "{}", n.text);
}

#[test]
fn one_device_per_process_is_fine() {
    expect_no_note(&detected(&devices(1)), "data-parallel");
}

fn backend(backend: &'static str) -> Shape {
    Shape {
        backend,
        world_size: 2,
        ..Shape::healthy()
    }
}

#[test]
fn ddp_without_nccl() {
    // gloo on GPU tensors: no time estimate, so a note.
    let n = expect_note(detected(&backend("gloo")), "ddp-without-nccl");
    assert!(n.text.contains("the gloo backend"), "{}", n.text);
}

#[test]
fn ddp_with_nccl_is_fine() {
    expect_no_note(&detected(&backend("nccl")), "ddp-without-nccl");
}

/// Whether `sources` call `expect`/`expect_note` (positive) and `expect_none`/`expect_no_note`
/// (negative) with `id` as an argument: the id comes after the call's name, with no `;` between.
fn cases_of(sources: &str, id: &str) -> (bool, bool) {
    let (mut positive, mut negative) = (false, false);
    for (at, _) in sources.match_indices(&format!("\"{id}\"")) {
        let before = &sources[..at];
        let Some(call) = before.rfind("expect").map(|k| &before[k..]) else {
            continue;
        };
        if call.contains(';') {
            continue;
        }
        negative |= call.starts_with("expect_none(") || call.starts_with("expect_no_note(");
        positive |= call.starts_with("expect(") || call.starts_with("expect_note(");
    }
    (positive, negative)
}

/// Every detector and observer of the catalogue has a case that must find (or note) it and one
/// that must not, in this file, `tests/op_patterns.rs`, `tests/unrecorded.rs` or `tests/untuned.rs`.
#[test]
fn every_detector_and_observer_has_a_positive_and_a_negative_case() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let sources: String = [
        "detectors.rs",
        "op_patterns.rs",
        "unrecorded.rs",
        "untuned.rs",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(tests.join(f)).unwrap())
    .collect();
    let ids = DETECTORS.iter().map(|d| d.id());
    let missing: Vec<String> = ids
        .chain(OBSERVERS.iter().map(|o| o.about().id))
        .filter_map(|id| match cases_of(&sources, id) {
            (true, true) => None,
            (positive, _) => Some(format!(
                "{id}: no {} case",
                if positive { "negative" } else { "positive" }
            )),
        })
        .collect();
    assert!(missing.is_empty(), "{missing:?}");
}

/// A gate's number is written once, in its `Gate`: a detector's rule states each of its gates'
/// thresholds through a placeholder (a gate measured on the host may share the placeholder of
/// the GPU gate whose threshold it takes), every placeholder names a gate, and the words a
/// user reads keep none (`detect::judge` refuses a gate its `About` does not list).
#[test]
fn every_gate_threshold_is_stated_from_the_gate() {
    for d in DETECTORS {
        assert!(!d.about().gates.is_empty(), "{}: no gate listed", d.id());
    }
    let abouts = DETECTORS
        .iter()
        .map(|d| d.about())
        .chain(OBSERVERS.iter().map(|o| o.about()));
    for about in abouts {
        let stated: Vec<f64> = about
            .gates
            .iter()
            .enumerate()
            .filter(|(k, _)| about.rule.contains(&format!("{{{k}}}")))
            .map(|(_, g)| g.threshold)
            .collect();
        for gate in about.gates {
            assert!(
                stated.contains(&gate.threshold),
                "{}: the threshold {} of the gate on {:?} is not stated through a placeholder: {:?}",
                about.id,
                gate.threshold,
                gate.quantity,
                about.rule
            );
        }
        let text = about.threshold();
        assert!(
            !text.contains('{') && !text.contains('}'),
            "{}: a placeholder names no gate: {text}",
            about.id
        );
    }
}

/// A fix's terms are what grades an LLM's fix against the rule's (`llm::check`): each is a
/// change the fix itself names, so that the grade reads the rule's fix and no second list.
#[test]
fn every_fix_names_its_terms() {
    for d in DETECTORS {
        for fix in d.fixes() {
            assert!(!fix.terms.is_empty(), "{}: a fix without terms", d.id());
            let text = format!("{}\n{}", fix.summary, fix.snippet).to_lowercase();
            for term in fix.terms {
                assert!(
                    text.contains(&term.to_lowercase()),
                    "{}: the term {term:?} is not in its fix: {text}",
                    d.id()
                );
            }
        }
    }
}

#[test]
fn a_slow_first_step_is_warm_up_and_its_dataloader_and_mallocs_are_left_out() {
    // Step 1 takes 17 ms (1.7× the 10 ms median of the others) with 5 ms of DataLoader and
    // 6 malloc/free pairs; steps 2-4 are healthy.
    let shape = Shape {
        first: Some(First {
            step_us: 17_000,
            dataloader_us: 5_000,
            alloc_pairs: 6,
        }),
        ..Shape::healthy()
    };
    let trace = ingest(&shape.json());
    let analysis = Analysis::new(&trace);
    let warmup: Vec<bool> = analysis.steps.steps.iter().map(|s| s.warmup).collect();
    assert_eq!(warmup, [true, false, false, false]);
    assert_eq!(analysis.steady, vec![1, 2, 3]);
    let first = &analysis.step_metrics[0];
    assert_eq!(
        (first.dataloader_ns, first.mallocs, first.frees),
        (5_000_000, 6, 6)
    );
    let found = detect::run(&analysis).findings;
    assert!(found.is_empty(), "{:?}", ids(&found));
}

// ---------------------------------------------------------------------------------------------
// Real traces.

fn read(path: &Path) -> Result<Trace, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    ingest_reader(file, IngestOptions::default(), 1 << 20, |_| {})
        .map(|i| i.trace)
        .map_err(|e| e.to_string())
}

fn findings_of(path: &Path) -> Vec<Finding> {
    let trace = read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    detect::run(&Analysis::new(&trace)).findings
}

#[test]
fn real_traces_show_their_known_problems() {
    let Some(dir) = shared_traces("real_traces_show_their_known_problems") else {
        return;
    };
    let tracelens = "AMD-AGI__TraceLens/tests__traces__mi300__";
    let expected: Vec<(String, &str)> = vec![
        // hipMalloc/hipFree in the step (about 1 460 and 1 360): no caching allocator reuse.
        (format!("{tracelens}ddp_resnet18_no_pool__train_resnet18.json.gz"), "allocator-churn"),
        // A V100 running fp32 volta_sgemm and scudnn kernels.
        (
            "facebookresearch__HolisticTraceAnalysis/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz".into(),
            "fp32-without-tensor-cores",
        ),
        // A T4 running fp32 convolutions and GEMMs on SIMT cores.
        ("haraldger__High-Performance-Deep-Learning/resnet50_trace.json".into(), "fp32-without-tensor-cores"),
        ("haraldger__High-Performance-Deep-Learning/vgg16_trace.json".into(), "fp32-without-tensor-cores"),
        // ViT inference on an MI300X: thousands of tiny kernels, the GPU waits on launches.
        (format!("{tracelens}Falconsai_nsfw_image_detection__1016002.json.gz"), "launch-bound-small-kernels"),
    ];
    let mut failures = Vec::new();
    for (file, id) in &expected {
        let found = findings_of(&dir.join(file));
        eprintln!("{file}: {:?}", summaries(&found));
        if !found.iter().any(|f| f.id == *id) {
            failures.push(format!("{file}: expected {id}, found {:?}", ids(&found)));
        }
    }
    // DLRM training: every worker syncs inside its step.
    let param = dir.join("facebookresearch__param");
    let mut workers: Vec<PathBuf> = std::fs::read_dir(&param)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    workers.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.contains("dlrm_kineto__worker")
            && name.contains("_step_12.")
            && name.ends_with(".pt.trace.json")
    });
    workers.sort();
    assert_eq!(workers.len(), 8, "the 8 DLRM workers");
    for w in &workers {
        let found = findings_of(w);
        eprintln!("{}: {:?}", w.display(), summaries(&found));
        if !found.iter().any(|f| f.id == "host-device-sync") {
            failures.push(format!(
                "{}: expected host-device-sync, found {:?}",
                w.display(),
                ids(&found)
            ));
        }
    }
    // TimeSformer inference on an MI300X keeps the GPU ~99% busy: nothing to say about
    // utilization or launches.
    let healthy = format!("{tracelens}facebook_timesformer-base-finetuned-k400__1016002.json.gz");
    for f in findings_of(&dir.join(&healthy)) {
        if f.id == "gpu-low-utilization" || f.id == "launch-bound-small-kernels" {
            failures.push(format!("{healthy}: unexpected {} ({})", f.id, f.summary));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether the trace at `path` is CPU-only, and its findings.
fn cpu_only_and_findings(path: &Path) -> (bool, Vec<Finding>) {
    let trace = read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let a = Analysis::new(&trace);
    (a.cpu_only, detect::run(&a).findings)
}

#[test]
fn real_cpu_only_traces_get_host_time_findings() {
    let Some(dir) = shared_traces("real_cpu_only_traces_get_host_time_findings") else {
        return;
    };
    let hta = "facebookresearch__HolisticTraceAnalysis/tests__data__";
    // (trace, CPU-only, the finding it must have or None for no finding at all)
    let cases: [(String, bool, Option<&str>); 7] = [
        // ResNet-18 training on the CPU, SGD with momentum: single-tensor on the CPU (186
        // outermost ops per SGD.step, 7.5 ms of a 96 ms step).
        (
            "local__torch-2.15-cpu/resnet18_train_step_cpu.pt.trace.json.gz".into(),
            true,
            Some("optimizer-not-fused"),
        ),
        // ViT-B/16 inference on the CPU: nothing the host-time detectors see.
        (
            "local__torch-2.15-cpu/vit_b16_inference_cpu_stack.pt.trace.json.gz".into(),
            true,
            None,
        ),
        // TorchRec on the CPU: Adagrad one tensor at a time (96 ops per step).
        (
            format!("{hta}cpu_only__rank-34@old05cd72f.Jul_15_10_52_41.1074.pt.trace.json.gz"),
            true,
            Some("optimizer-not-fused"),
        ),
        // A small MoE transformer trained on the CPU: AdamW without foreach, 83 ms of 198.
        (
            "bossbobster__67960-final-project/code__trace.json".into(),
            true,
            Some("optimizer-not-fused"),
        ),
        // The host side of a TorchRec job: FusedAdam, fused by name.
        (
            format!("{hta}mixed_files__rank_non_gpu.json.gz"),
            true,
            None,
        ),
        // An MTIA accelerator's trace is not CPU-only.
        (
            format!("{hta}mtia_inference_trace__mtia_inference_rank_0.json.gz"),
            false,
            None,
        ),
        // ResNet-18 inference on CUDA recorded with CPU activity only: its ops are cuDNN's.
        (
            "hazard-10__LivePortrait/inference__trace.json".into(),
            false,
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (file, cpu_only, id) in &cases {
        let (is_cpu_only, found) = cpu_only_and_findings(&dir.join(file));
        eprintln!("{file}: CPU-only {is_cpu_only}, {:?}", summaries(&found));
        let right = match id {
            Some(id) => found.iter().any(|f| f.id == *id),
            None => found.is_empty(),
        };
        if is_cpu_only != *cpu_only || !right {
            failures.push(format!(
                "{file}: expected CPU-only {cpu_only} and {id:?}, found CPU-only {is_cpu_only} and {:?}",
                ids(&found)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_real_zero_grad_claims_before_launch_bound_which_names_it() {
    let Some(dir) = shared_traces("a_real_zero_grad_claims_before_launch_bound_which_names_it")
    else {
        return;
    };
    // PyTorch 1.8 (Operator, Runtime, Kernel): zero_grad launches 20 fill kernels, 0.6 ms of
    // host launching with the GPU idle. Launch-bound claimed that idle first and zero_grad was
    // left 0.004 ms, a note; now zero_grad is a finding and launch-bound says so.
    let (_, found) = cpu_only_and_findings(
        &dir.join("pytorch__kineto/tb_plugin__test__gpu_metrics_input@v71530b1.json"),
    );
    let zero = found
        .iter()
        .find(|f| f.id == "zero-grad-memset")
        .unwrap_or_else(|| panic!("zero-grad-memset: {:?}", summaries(&found)));
    assert!(zero.impact.pct_of_step > 4.0, "{}", zero.summary);
    let launch = found
        .iter()
        .find(|f| f.id == "launch-bound-small-kernels")
        .expect("launch-bound-small-kernels");
    // Named among the causes that explain part of its time (with fusion-candidates there).
    assert!(
        launch.summary.contains("zero-grad-memset") && launch.summary.contains("already explain"),
        "{}",
        launch.summary
    );
}

#[test]
fn attention_as_real_models_write_it() {
    let Some(dir) = shared_traces("attention_as_real_models_write_it") else {
        return;
    };
    // (trace, blocks per step, a part of the summary): an encoder-decoder on the CPU (einsum,
    // mask `eq` and `masked_fill`, scale, softmax, einsum: 3 ops between) claiming host time;
    // a PyTorch 1.9 CPU transformer (scale, transposes, softmax, dropout); TimeSformer on an
    // MI300X, its two attentions per layer named by module.
    let cases = [
        (
            "chaos80011__Memory-and-Storage-Devices/MS_HW2__transformer_profile.json",
            18,
            "of the host time of block",
        ),
        ("AleksanderMisztal__gec-with-copying/trace.json", 10, "of the host time of block"),
        (
            "AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
            24,
            "(TimesformerLayer_11/…/TimesformerSelfAttention_23)",
        ),
    ];
    for (file, blocks, says) in cases {
        let found = findings_of(&dir.join(file));
        let f = found
            .iter()
            .find(|f| f.id == "unfused-attention")
            .unwrap_or_else(|| panic!("{file}: no unfused-attention in {:?}", summaries(&found)));
        assert_eq!(f.evidence[0].count, Some(blocks), "{file}: {}", f.summary);
        assert!(f.summary.contains(says), "{file}: {}", f.summary);
        assert_eq!(f.evidence[1].events.len(), blocks as usize, "{file}");
    }
    // A MoE router's softmax (over [tokens, experts]) between two matmuls is no attention.
    let router = findings_of(&dir.join("Cryptheon__CyclicRouter/trace.json"));
    assert!(
        !router.iter().any(|f| f.id == "unfused-attention"),
        "{:?}",
        summaries(&router)
    );
}

#[test]
fn captures_without_steps_are_cut_into_their_iterations() {
    let Some(dir) = shared_traces("captures_without_steps_are_cut_into_their_iterations") else {
        return;
    };
    // (trace, how its iterations show, iterations, a finding held in every steady one).
    let cases = [
        // 30 forward passes of a small transformer, no range around them (kernels lost).
        (
            "harrisonvshen__triton-accelerated-attention/results__trace_fixed.json",
            StepSource::RepeatedOps,
            30,
            None,
        ),
        // 40 training iterations replayed op by op.
        (
            "facebookresearch__param/et_replay__tests__inputs__linear_kineto.json.gz",
            StepSource::RepeatedOps,
            40,
            Some("launch-bound-small-kernels"),
        ),
        // DDP ResNet-18 training: a `record_function` range per iteration.
        (
            "AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz",
            StepSource::RepeatedAnnotations,
            5,
            Some("allocator-churn"),
        ),
    ];
    for (file, source, iterations, held) in cases {
        let trace = read(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(trace.step_source, source, "{file}");
        assert_eq!(trace.steps.len(), iterations, "{file}");
        let a = Analysis::new(&trace);
        if let Some(id) = held {
            let found = detect::run(&a).findings;
            let f = found
                .iter()
                .find(|f| f.id == id)
                .unwrap_or_else(|| panic!("{file}: no {id} in {:?}", summaries(&found)));
            assert_eq!(f.gate.held_steps, a.steady.len(), "{file}: {}", f.summary);
            assert!(
                a.steady.len() + 1 >= iterations,
                "{file}: warm-up is one step"
            );
        }
    }
}

#[test]
fn findings_are_ranked_by_impact_on_every_real_trace() {
    let Some(dir) = shared_traces("findings_are_ranked_by_impact_on_every_real_trace") else {
        return;
    };
    let mut analysed = 0;
    // Traces with two findings or more: only they can show a ranking.
    let mut ranked = 0;
    for path in trace_files(&dir) {
        let Ok(trace) = read(&path) else { continue };
        let found = detect::run(&Analysis::new(&trace)).findings;
        ranked += usize::from(found.len() >= 2);
        for pair in found.windows(2) {
            assert!(
                pair[0].impact.ms_per_step >= pair[1].impact.ms_per_step,
                "{}: {} ({} ms) ranked before {} ({} ms)",
                path.display(),
                pair[0].id,
                pair[0].impact.ms_per_step,
                pair[1].id,
                pair[1].impact.ms_per_step
            );
        }
        analysed += 1;
    }
    eprintln!("ranking checked on {analysed} traces, {ranked} of them with two findings or more");
    assert!(
        ranked >= 3,
        "only {ranked} of {analysed} traces in {} have two findings: the ranking went unchecked",
        dir.display()
    );
}

#[test]
fn findings_are_ranked_by_time_recoverable_per_step() {
    // A sync idling the GPU for the 1 ms after it, and a DataLoader stall of 0.6 ms per step:
    // the sync ranks first although the DataLoader's detector claims time first.
    let shape = Shape {
        dataloader_us: 600,
        ..sync(Some((19, 1_500)))
    };
    let found = findings(&shape);
    let order: Vec<&str> = ids(&found)
        .into_iter()
        .filter(|id| ["dataloader-bottleneck", "host-device-sync"].contains(id))
        .collect();
    assert_eq!(
        order,
        ["host-device-sync", "dataloader-bottleneck"],
        "{:?}",
        summaries(&found)
    );
}

#[test]
fn host_sync_gate_holds_from_2_percent_of_the_step() {
    // The GPU idles 300 µs after each sync, then three 16 µs launch gaps fall in the 1 ms after
    // it: 348 µs = 3.48% of the 10 ms step, over the 2% gate but under twice it (confidence
    // below 1), a low finding.
    let f = found_in(&sync(Some((19, 300))), "host-device-sync");
    assert!(
        (f.impact.ms_per_step - 0.348).abs() < 1e-3,
        "{} ms per step",
        f.impact.ms_per_step
    );
    assert_eq!(f.severity, Severity::Low);
    assert_eq!(f.gate.gate.threshold, 2.0);
    assert!(
        (f.gate.median - 3.48).abs() < 1e-6,
        "gate median {}",
        f.gate.median
    );
    assert!(f.confidence < 1.0, "confidence {}", f.confidence);
    // 100 µs, and four launch gaps in the 1 ms after: 164 µs = 1.64%, under the gate.
    expect_none(&sync(Some((19, 100))), "host-device-sync");
}

#[test]
fn real_elementwise_chains_the_host_launches_op_after_op_are_fusion_candidates() {
    let Some(dir) = shared_traces(
        "real_elementwise_chains_the_host_launches_op_after_op_are_fusion_candidates",
    ) else {
        return;
    };
    // HTA's step-based trace and a particle transformer's forward pass: chains of element-wise
    // kernels 15–90 µs apart on the GPU, their ops run one after the other on the host. The
    // chains claim that wait before launch-bound, which names them.
    for file in [
        "facebookresearch__HolisticTraceAnalysis/tests__data__with_gpu_user_annotation__step_based_trace_2543932.json.gz",
        "harryjmoss__particle_transformer/run1_chrome_traces__single_epoch_forward_pass_batch_size_2.json",
    ] {
        let (_, found) = cpu_only_and_findings(&dir.join(file));
        let fusion = found
            .iter()
            .find(|f| f.id == "fusion-candidates")
            .unwrap_or_else(|| panic!("{file}: fusion-candidates: {:?}", summaries(&found)));
        assert!(fusion.impact.pct_of_step > 5.0, "{file}: {}", fusion.summary);
        let launch = found
            .iter()
            .find(|f| f.id == "launch-bound-small-kernels")
            .expect("launch-bound-small-kernels");
        assert!(
            launch.summary.contains("fusion-candidates"),
            "{file}: {}",
            launch.summary
        );
    }
    // A benchmark of linear layers whose element-wise kernels are 2% of its kernel time: none.
    let (_, found) = cpu_only_and_findings(
        &dir.join("facebookresearch__param/et_replay__tests__inputs__linear_kineto.json.gz"),
    );
    assert!(
        found.iter().all(|f| f.id != "fusion-candidates"),
        "{:?}",
        summaries(&found)
    );
}
