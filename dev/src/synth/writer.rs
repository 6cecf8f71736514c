//! The event writer: Kineto events (CPU ops, annotations, runtime calls, kernels, copies,
//! all-reduces) on the host threads and the GPU streams, each keeping its own clock.

use serde_json::{json, Value};

use super::config::Rng;
use super::gpu::{self, Gpu};
use super::zoo::Kernel;

pub(super) const MAIN: i64 = 1001;
pub(super) const AUTOGRAD: i64 = 1002;
const STREAM: i64 = 7;
/// The stream NCCL runs the gradient all-reduce on.
const COMM_STREAM: i64 = 13;
pub(super) const PID: i64 = 1000;

/// The all-reduce state of a data-parallel rank's writer.
pub(super) struct Comm {
    pub(super) rank: u32,
    pub(super) world_size: u32,
    /// When the communication stream is free again.
    pub(super) free: f64,
    /// How far this step's slowest rank is behind this one, µs.
    pub(super) wait: f64,
}

/// Builds the event list while keeping the CPU threads' and the GPU stream's clocks (µs).
pub(super) struct Writer {
    pub(super) events: Vec<Value>,
    pub(super) rng: Rng,
    pub(super) gpu: Gpu,
    /// Host time per thread.
    pub(super) cpu: [f64; 2],
    /// When the stream is free again.
    pub(super) stream_free: f64,
    pub(super) correlation: u64,
    /// Kernel-time multiplier of the step being written (injections, warm-up).
    pub(super) slow: f64,
    /// Host-time multiplier of CPU ops and launches (profiler overhead, a slow host).
    pub(super) host: f64,
    pub(super) simt: bool,
    pub(super) tiny_kernels: bool,
    /// Whether the code marks its phases with `record_function` ranges (`## forward ##`).
    pub(super) annotate: bool,
    /// Whether queued kernels start a little after the one before them ends (noise).
    pub(super) kernel_gaps: bool,
    pub(super) comm: Option<Comm>,
}

fn thread_index(tid: i64) -> usize {
    usize::from(tid == AUTOGRAD)
}

impl Writer {
    pub(super) fn x(&mut self, cat: &str, name: &str, tid: i64, ts: f64, dur: f64, args: Value) {
        let pid = if tid == STREAM || tid == COMM_STREAM {
            0
        } else {
            PID
        };
        // Round start and end (not the duration) to the nanosecond, so that ranges that touch
        // in the generator touch in the trace.
        let start = (ts * 1000.0).round() / 1000.0;
        let end = ((ts + dur) * 1000.0).round() / 1000.0;
        let dur = ((end - start) * 1000.0).round() / 1000.0;
        let mut e = json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": start, "dur": dur});
        if !args.is_null() {
            e["args"] = args;
        }
        self.events.push(e);
    }

    pub(super) fn now(&self, tid: i64) -> f64 {
        self.cpu[thread_index(tid)]
    }

    pub(super) fn advance(&mut self, tid: i64, us: f64) {
        self.cpu[thread_index(tid)] += us;
    }

    /// Nested CPU ops around `body` (outermost first); each range ends after its children.
    pub(super) fn ops(&mut self, tid: i64, names: &[&str], body: impl FnOnce(&mut Writer)) {
        let start = self.now(tid);
        let d = 3.0 * self.host * self.rng.jitter(0.3);
        self.advance(tid, d);
        match names.split_first() {
            Some((_, rest)) if !rest.is_empty() => self.ops(tid, rest, body),
            _ => body(self),
        }
        let d = 2.0 * self.host * self.rng.jitter(0.3);
        self.advance(tid, d);
        let end = self.now(tid);
        self.x(
            "cpu_op",
            names[0],
            tid,
            start,
            end - start,
            json!({"External id": self.correlation}),
        );
    }

    /// A user annotation around `body`.
    pub(super) fn annotation(&mut self, tid: i64, name: &str, body: impl FnOnce(&mut Writer)) {
        let start = self.now(tid);
        body(self);
        let end = self.now(tid);
        self.x(
            "user_annotation",
            name,
            tid,
            start,
            end - start,
            Value::Null,
        );
    }

    /// A phase of the step (`## forward ##`) around `body`, where the code marks its phases.
    pub(super) fn phase(&mut self, tid: i64, name: &str, body: impl FnOnce(&mut Writer)) {
        if self.annotate {
            self.annotation(tid, name, body);
        } else {
            body(self);
        }
    }

    /// A runtime call on `tid` launching GPU work of `us` on the stream.
    pub(super) fn launch(&mut self, tid: i64, kernel: &str, us: f64) {
        // A launch-bound step (a tiny batch, or a tiny model) runs kernels of a few µs.
        let us = if self.tiny_kernels {
            (us / 200.0).clamp(1.5, 8.0)
        } else {
            us * self.slow
        };
        let (end, call) = self.enqueue(tid, STREAM, kernel, self.stream_free, us, f64::MIN);
        self.stream_free = end;
        let d = call + 15.0 * self.host * self.rng.jitter(0.4);
        self.advance(tid, d);
    }

    /// A launch call on `tid` queueing `kernel` on `stream`, to start after `ready`, for `us`
    /// (jittered), and not to end before `until` (a collective waiting for the slowest rank).
    /// Returns the kernel's end and the call's duration (which the caller spends on `tid`).
    fn enqueue(
        &mut self,
        tid: i64,
        stream: i64,
        kernel: &str,
        ready: f64,
        us: f64,
        until: f64,
    ) -> (f64, f64) {
        let call_start = self.now(tid);
        let call = 5.0 * self.rng.jitter(0.4);
        self.correlation += 1;
        let corr = self.correlation;
        let launch = self.gpu.launch();
        self.x(
            "cuda_runtime",
            launch,
            tid,
            call_start,
            call,
            json!({"correlation": corr, "cbid": 211}),
        );
        // In a noisy trace a queued kernel starts 0.1 to 0.5 µs after the one before it ends, as
        // on real GPUs (the overhead between consecutive kernels that real traces show as kernel
        // wait); a noise-free one queues them back to back.
        let gap = if self.kernel_gaps {
            0.1 + 0.4 * self.rng.unit()
        } else {
            0.0
        };
        let start = (ready + gap).max(call_start + call + 3.0 * self.rng.jitter(0.5));
        let dur = (us * self.rng.jitter(0.08)).max(until - start);
        self.x(
            "kernel",
            kernel,
            stream,
            start,
            dur,
            json!({"correlation": corr, "device": 0, "stream": stream, "grid": [128, 1, 1], "block": [256, 1, 1],
                   "registers per thread": 64, "shared memory": 16384, "est. achieved occupancy %": 50}),
        );
        self.events.push(json!({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": PID, "tid": tid, "ts": call_start}));
        self.events.push(json!({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0, "tid": stream, "ts": start, "bp": "e"}));
        (start + dur, call)
    }

    /// DDP's all-reduce of one gradient bucket of `bytes`, from autograd's thread, on the
    /// communication stream once the bucket's gradients are computed: `c10d::allreduce_`,
    /// `record_param_comms` with the collective's arguments, `nccl:all_reduce`, the kernel. A
    /// rank ahead of the slowest one by `Comm::wait` finishes each all-reduce no earlier than
    /// that much after its own gradients were ready: when the slowest rank's were.
    pub(super) fn all_reduce(&mut self, bytes: f64) {
        let Some(comm) = self.comm.as_mut() else {
            return;
        };
        let (rank, world, free, wait) = (comm.rank, comm.world_size, comm.free, comm.wait);
        let n = f64::from(world);
        // A ring all-reduce moves 2(n-1)/n of the bucket through each GPU's links, after about
        // 10 µs of latency.
        let us = 10.0 + bytes * 2.0 * (n - 1.0) / n / (self.gpu.bus_gbps() * 1e3);
        let elements = (bytes / 4.0) as u64;
        self.ops(AUTOGRAD, &["c10d::allreduce_"], |w| {
            let args = json!({"External id": w.correlation, "Collective name": "allreduce", "In msg nelems": elements,
                              "Out msg nelems": elements, "Group size": world, "dtype": "Float", "Rank": rank,
                              "Process Group Name": "0", "Process Group Description": "default_pg"});
            let inner = w.now(AUTOGRAD);
            w.annotation(AUTOGRAD, "nccl:all_reduce", |w| {
                let kernel = w.gpu.all_reduce_kernel();
                let ready = w.stream_free;
                let until = ready + wait + us;
                let (end, call) = w.enqueue(AUTOGRAD, COMM_STREAM, kernel, free.max(ready), us, until);
                w.advance(AUTOGRAD, call);
                if let Some(c) = w.comm.as_mut() {
                    c.free = end;
                }
            });
            let end = w.now(AUTOGRAD);
            w.x("cpu_op", "record_param_comms", AUTOGRAD, inner, end - inner, args);
        });
        let d = 10.0 * self.host * self.rng.jitter(0.3);
        self.advance(AUTOGRAD, d);
    }

    /// A runtime call that does no GPU work (malloc, free, synchronize).
    pub(super) fn call(&mut self, tid: i64, api: &str, us: f64) {
        let name = format!("{}{api}", self.gpu.runtime_prefix());
        let start = self.now(tid);
        self.correlation += 1;
        self.x(
            "cuda_runtime",
            &name,
            tid,
            start,
            us,
            json!({"correlation": self.correlation}),
        );
        self.advance(tid, us);
    }

    /// The input batch's copy to the device.
    pub(super) fn copy_input(&mut self, bytes: u64, pageable: bool) {
        self.ops(MAIN, &["aten::to", "aten::_to_copy", "aten::copy_"], |w| {
            let (name, gbps) = if pageable {
                ("Memcpy HtoD (Pageable -> Device)", 6.0)
            } else {
                ("Memcpy HtoD (Pinned -> Device)", 22.0)
            };
            let us = bytes as f64 / (gbps * 1e3);
            let call_start = w.now(MAIN);
            w.correlation += 1;
            let corr = w.correlation;
            let api = format!("{}MemcpyAsync", w.gpu.runtime_prefix());
            let start = w.stream_free.max(call_start + 4.0);
            w.x("gpu_memcpy", name, STREAM, start, us, json!({"correlation": corr, "device": 0, "stream": STREAM, "bytes": bytes, "memory bandwidth (GB/s)": gbps}));
            w.stream_free = start + us;
            // A pageable copy returns only when it is done.
            let call = if pageable { start + us - call_start } else { 6.0 };
            w.x("cuda_runtime", &api, MAIN, call_start, call, json!({"correlation": corr}));
            w.advance(MAIN, call);
        });
    }

    /// The host waits for the stream (`.item()` on a loss or a metric), then works on the value
    /// in Python for `host_us` while the drained GPU has nothing queued.
    pub(super) fn item(&mut self, host_us: f64) {
        self.ops(MAIN, &["aten::item", "aten::_local_scalar_dense"], |w| {
            let wait = (w.stream_free - w.now(MAIN)).max(0.0) + 8.0;
            w.call(MAIN, "StreamSynchronize", wait);
        });
        let d = host_us * self.rng.jitter(0.2);
        self.advance(MAIN, d);
    }

    /// Autocast's weight cast (or its backward, `ops`): a short copy kernel before each layer
    /// with weights, as mixed-precision traces show. fp32 (SIMT) steps have none.
    pub(super) fn cast(&mut self, tid: i64, ops: &[&str], us: f64) {
        if !self.simt {
            self.ops(tid, ops, |w| w.launch(tid, gpu::CAST, us));
        }
    }

    pub(super) fn kernel_name(&self, k: Kernel, backward: bool) -> &'static str {
        let names = self.gpu.kernels();
        match k {
            Kernel::Conv if self.simt => self.gpu.simt().0,
            Kernel::Gemm if self.simt => self.gpu.simt().1,
            Kernel::Conv if backward => names.conv_dgrad,
            Kernel::Conv => names.conv,
            Kernel::Gemm => names.gemm,
            Kernel::Attention => names.attention,
            Kernel::BatchNorm => names.batch_norm,
            Kernel::LayerNorm => names.layer_norm,
            Kernel::Elementwise => gpu::ELEMENTWISE,
            Kernel::Add => gpu::ADD,
            Kernel::Gelu => gpu::GELU,
            Kernel::DepthwiseConv if backward => gpu::DEPTHWISE_DGRAD,
            Kernel::DepthwiseConv => gpu::DEPTHWISE,
            Kernel::Silu => gpu::SILU,
            Kernel::Upsample => gpu::UPSAMPLE,
            Kernel::Concat => gpu::CONCAT,
        }
    }
}
