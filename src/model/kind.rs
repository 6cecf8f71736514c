//! What an event is, decided once from its category, phase and name.
//!
//! Every era of the Kineto format names the same things differently (`cpu_op` and `Operator`,
//! `kernel` and `Kernel`, `cudaLaunchKernel` and `hipLaunchKernel`, …); this module is the one
//! place that maps those spellings onto the model's kinds.

use serde::{Deserialize, Serialize};

/// The kind of one event in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum EventKind {
    /// An ATen or other operator on a CPU thread (`cpu_op`, `Operator`).
    CpuOp,
    /// A `record_function` range (`user_annotation`), other than a profiler step.
    UserAnnotation,
    /// A Python function frame (`python_function`, recorded `with_stack=True`).
    PythonFunction,
    /// One `ProfilerStep#N` range.
    ProfilerStep,
    /// A compute kernel on a GPU stream.
    GpuKernel,
    /// A collective-communication kernel (NCCL, RCCL) on a GPU stream.
    Collective,
    /// A memory copy on a GPU stream.
    Memcpy,
    /// A memset on a GPU stream.
    Memset,
    /// A `record_function` range as seen on the GPU (`gpu_user_annotation`).
    GpuUserAnnotation,
    /// A CUDA/HIP runtime or driver API call on a CPU thread.
    RuntimeCall,
    /// A GPU-side wait recorded by CUPTI (`cuda_sync`: event sync, stream wait event).
    GpuSync,
    /// An allocation or free reported by the caching allocator (`[memory]` instant events).
    Memory,
    /// Profiler bookkeeping: `overhead`, the `Trace` span, `Record Window End`, CUPTI ranges.
    Profiler,
    /// Any other timed event (unknown categories, other accelerators' activities, counters).
    Other,
}

impl EventKind {
    pub const ALL: [EventKind; 14] = [
        EventKind::CpuOp,
        EventKind::UserAnnotation,
        EventKind::PythonFunction,
        EventKind::ProfilerStep,
        EventKind::GpuKernel,
        EventKind::Collective,
        EventKind::Memcpy,
        EventKind::Memset,
        EventKind::GpuUserAnnotation,
        EventKind::RuntimeCall,
        EventKind::GpuSync,
        EventKind::Memory,
        EventKind::Profiler,
        EventKind::Other,
    ];

    /// The label used in summaries and JSON output.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::CpuOp => "cpu_op",
            EventKind::UserAnnotation => "user_annotation",
            EventKind::PythonFunction => "python_function",
            EventKind::ProfilerStep => "profiler_step",
            EventKind::GpuKernel => "gpu_kernel",
            EventKind::Collective => "collective",
            EventKind::Memcpy => "memcpy",
            EventKind::Memset => "memset",
            EventKind::GpuUserAnnotation => "gpu_user_annotation",
            EventKind::RuntimeCall => "runtime_call",
            EventKind::GpuSync => "gpu_sync",
            EventKind::Memory => "memory",
            EventKind::Profiler => "profiler",
            EventKind::Other => "other",
        }
    }

    /// Work that occupies a GPU stream (the union of these is "GPU busy").
    pub fn is_gpu_work(self) -> bool {
        matches!(
            self,
            EventKind::GpuKernel | EventKind::Collective | EventKind::Memcpy | EventKind::Memset
        )
    }

    /// CPU-side ranges that nest into the per-thread call tree.
    pub(crate) fn nests_on_cpu(self) -> bool {
        matches!(
            self,
            EventKind::CpuOp
                | EventKind::UserAnnotation
                | EventKind::PythonFunction
                | EventKind::ProfilerStep
                | EventKind::RuntimeCall
        )
    }
}

/// What a CUDA/HIP runtime or driver call does, as far as the analyses care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RuntimeClass {
    Launch,
    /// A CUDA/HIP graph launch (`cudaGraphLaunch`, `hipGraphLaunch`): one host call that
    /// replays every kernel of the graph.
    GraphLaunch,
    Synchronize,
    Malloc,
    Free,
    Memcpy,
    Memset,
    Other,
}

impl RuntimeClass {
    /// Classifies a runtime or driver API name (CUDA, HIP, or the CUDA driver API).
    pub fn of(name: &str) -> RuntimeClass {
        let api = name
            .strip_prefix("cuda")
            .or_else(|| name.strip_prefix("hip"))
            .or_else(|| name.strip_prefix("cu"));
        let Some(api) = api else {
            return RuntimeClass::Other;
        };
        if api.starts_with("GraphLaunch") {
            RuntimeClass::GraphLaunch
        } else if api.contains("Launch") {
            // cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel, hipExtModuleLaunchKernel,
            // hipModuleLaunchKernel, …
            RuntimeClass::Launch
        } else if api.ends_with("Synchronize") {
            RuntimeClass::Synchronize
        } else if api.starts_with("Malloc")
            || api.starts_with("MemAlloc")
            || api.starts_with("HostAlloc")
            || api.starts_with("ExtMallocWithFlags")
        {
            RuntimeClass::Malloc
        } else if api.starts_with("Free")
            || api.starts_with("MemFree")
            || api.starts_with("HostFree")
        {
            RuntimeClass::Free
        } else if api.starts_with("Memcpy") {
            RuntimeClass::Memcpy
        } else if api.starts_with("Memset") {
            RuntimeClass::Memset
        } else {
            RuntimeClass::Other
        }
    }

    /// Whether the call queues kernels: a kernel launch or a graph launch.
    pub fn launches(self) -> bool {
        matches!(self, RuntimeClass::Launch | RuntimeClass::GraphLaunch)
    }
}

/// Direction of a memory copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CopyDirection {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
    HostToHost,
    PeerToPeer,
    Unknown,
}

/// Host memory kind on the host side of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HostMemory {
    Pinned,
    Pageable,
    /// Device-to-device copies, or a name that does not say.
    NotApplicable,
}

/// Reads direction and host memory kind from a Kineto memcpy name such as
/// `Memcpy HtoD (Pageable -> Device)` or `Memcpy DtoD (Device -> Device)`.
pub(crate) fn classify_memcpy(name: &str) -> (CopyDirection, HostMemory) {
    let direction = if name.contains("HtoD") {
        CopyDirection::HostToDevice
    } else if name.contains("DtoH") {
        CopyDirection::DeviceToHost
    } else if name.contains("DtoD") {
        CopyDirection::DeviceToDevice
    } else if name.contains("HtoH") {
        CopyDirection::HostToHost
    } else if name.contains("PtoP") {
        CopyDirection::PeerToPeer
    } else {
        CopyDirection::Unknown
    };
    let host = if name.contains("Pageable") {
        HostMemory::Pageable
    } else if name.contains("Pinned") {
        HostMemory::Pinned
    } else {
        HostMemory::NotApplicable
    };
    (direction, host)
}

/// True for collective-communication kernels (NCCL, RCCL, PyTorch's symmetric-memory all-reduce
/// kernels, and expert-parallel all-to-all kernels: DeepEP's `deep_ep::…` dispatch and combine,
/// custom `all_to_all`/`alltoall` kernels).
pub(crate) fn is_collective_kernel(name: &str) -> bool {
    name.starts_with("nccl")
        || name.contains("deep_ep::")
        || name.contains("all_to_all")
        || name.contains("alltoall")
        || name.starts_with("rccl")
        || name.contains("ncclDevKernel")
        || name.contains("ncclKernel")
        || name.contains("multimem_all_reduce")
        || name.contains("one_shot_all_reduce")
        || name.contains("two_shot_all_reduce")
}

/// Classifies one complete (`X`, or matched `B`/`E`) or instant event from its category and name.
pub(crate) fn classify(cat: &str, name: &str, instant: bool) -> EventKind {
    match cat {
        "cpu_op" | "Operator" | "operator" => {
            if is_profiler_step(name) {
                EventKind::ProfilerStep
            } else {
                EventKind::CpuOp
            }
        }
        "user_annotation" | "UserAnnotation" => {
            if is_profiler_step(name) {
                EventKind::ProfilerStep
            } else {
                EventKind::UserAnnotation
            }
        }
        "python_function" | "python_function_call" => EventKind::PythonFunction,
        "kernel" | "Kernel" => {
            if is_collective_kernel(name) {
                EventKind::Collective
            } else {
                EventKind::GpuKernel
            }
        }
        "gpu_memcpy" | "Memcpy" => EventKind::Memcpy,
        "gpu_memset" | "Memset" => EventKind::Memset,
        "gpu_user_annotation" => EventKind::GpuUserAnnotation,
        "cuda_runtime" | "cuda_driver" | "Runtime" | "hip_runtime" | "hip_driver" => {
            EventKind::RuntimeCall
        }
        "cuda_sync" => EventKind::GpuSync,
        // 1.11–1.12 wrote `[memory]` events without a category.
        "cpu_instant_event" | "" if name == "[memory]" => EventKind::Memory,
        "overhead" | "Overhead" | "Trace" | "cuda_profiler_range" => EventKind::Profiler,
        _ if instant && name == "Record Window End" => EventKind::Profiler,
        _ => EventKind::Other,
    }
}

/// `ProfilerStep#12` and friends.
pub(crate) fn is_profiler_step(name: &str) -> bool {
    name.starts_with("ProfilerStep#")
}

/// Categories written by the PyTorch profiler (Kineto) in any era; used to tell a Kineto trace
/// from other Chrome traces.
pub(crate) fn is_kineto_category(cat: &str) -> bool {
    matches!(
        cat,
        "cpu_op"
            | "Operator"
            | "user_annotation"
            | "python_function"
            | "kernel"
            | "Kernel"
            | "gpu_memcpy"
            | "Memcpy"
            | "gpu_memset"
            | "Memset"
            | "gpu_user_annotation"
            | "cuda_runtime"
            | "cuda_driver"
            | "Runtime"
            | "cuda_sync"
            | "cpu_instant_event"
            | "overhead"
            | "ac2g"
            | "async_gpu"
            | "async_cpu_to_gpu"
            | "fwdbwd"
            | "mtia_runtime"
            | "mtia_ccp_events"
            | "cuda_profiler_range"
    )
}

/// Flow-event categories that link a CPU launch to the GPU work it queued.
pub(crate) fn is_launch_flow_category(cat: &str) -> bool {
    matches!(cat, "ac2g" | "async" | "async_gpu" | "async_cpu_to_gpu")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_calls_of_every_vendor_are_classified() {
        for (name, class) in [
            ("cudaLaunchKernel", RuntimeClass::Launch),
            ("cudaLaunchKernelExC", RuntimeClass::Launch),
            ("cuLaunchKernel", RuntimeClass::Launch),
            ("cudaGraphLaunch", RuntimeClass::GraphLaunch),
            ("cuGraphLaunch", RuntimeClass::GraphLaunch),
            ("hipLaunchKernel", RuntimeClass::Launch),
            ("hipExtModuleLaunchKernel", RuntimeClass::Launch),
            ("hipGraphLaunch", RuntimeClass::GraphLaunch),
            ("cudaStreamSynchronize", RuntimeClass::Synchronize),
            ("cudaDeviceSynchronize", RuntimeClass::Synchronize),
            ("cudaEventSynchronize", RuntimeClass::Synchronize),
            ("hipStreamSynchronize", RuntimeClass::Synchronize),
            ("cudaMalloc", RuntimeClass::Malloc),
            ("cudaMallocHost", RuntimeClass::Malloc),
            ("hipMalloc", RuntimeClass::Malloc),
            ("cuMemAlloc_v2", RuntimeClass::Malloc),
            ("cudaHostAlloc", RuntimeClass::Malloc),
            ("cudaFree", RuntimeClass::Free),
            ("hipFree", RuntimeClass::Free),
            ("cudaFreeHost", RuntimeClass::Free),
            ("cudaMemcpyAsync", RuntimeClass::Memcpy),
            ("hipMemcpyWithStream", RuntimeClass::Memcpy),
            ("cudaMemsetAsync", RuntimeClass::Memset),
            ("cudaStreamWaitEvent", RuntimeClass::Other),
            ("cudaEventRecord", RuntimeClass::Other),
            ("cudaGetDevice", RuntimeClass::Other),
            ("Activity Buffer Request", RuntimeClass::Other),
        ] {
            assert_eq!(RuntimeClass::of(name), class, "{name}");
        }
    }

    #[test]
    fn memcpy_names_give_direction_and_host_memory() {
        assert_eq!(
            classify_memcpy("Memcpy HtoD (Pageable -> Device)"),
            (CopyDirection::HostToDevice, HostMemory::Pageable)
        );
        assert_eq!(
            classify_memcpy("Memcpy DtoH (Device -> Pinned)"),
            (CopyDirection::DeviceToHost, HostMemory::Pinned)
        );
        assert_eq!(
            classify_memcpy("Memcpy DtoD (Device -> Device)"),
            (CopyDirection::DeviceToDevice, HostMemory::NotApplicable)
        );
        assert_eq!(
            classify_memcpy("Memcpy HtoD"),
            (CopyDirection::HostToDevice, HostMemory::NotApplicable)
        );
    }

    #[test]
    fn categories_of_old_and_new_eras_map_to_the_same_kinds() {
        assert_eq!(
            classify("Operator", "aten::conv2d", false),
            EventKind::CpuOp
        );
        assert_eq!(classify("cpu_op", "aten::conv2d", false), EventKind::CpuOp);
        assert_eq!(
            classify("Operator", "ProfilerStep#3", false),
            EventKind::ProfilerStep
        );
        assert_eq!(
            classify("user_annotation", "ProfilerStep#3", false),
            EventKind::ProfilerStep
        );
        assert_eq!(
            classify("Kernel", "volta_sgemm_128x64_nn", false),
            EventKind::GpuKernel
        );
        assert_eq!(
            classify(
                "kernel",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                false
            ),
            EventKind::Collective
        );
        for name in [
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            "rccl_AllGather_RING_SIMPLE",
            "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)",
            "void deep_ep::internode_ll::combine<false, 7168, 256>(void*)",
            "moe_all_to_all_kernel",
        ] {
            assert_eq!(
                classify("kernel", name, false),
                EventKind::Collective,
                "{name}"
            );
        }
        assert_eq!(
            classify("Runtime", "cudaLaunchKernel", false),
            EventKind::RuntimeCall
        );
        assert_eq!(
            classify("cuda_driver", "cuLaunchKernel", false),
            EventKind::RuntimeCall
        );
        assert_eq!(
            classify("Memcpy", "Memcpy HtoD (Pageable -> Device)", false),
            EventKind::Memcpy
        );
        assert_eq!(
            classify("cpu_instant_event", "[memory]", true),
            EventKind::Memory
        );
        assert_eq!(classify("forward", "Conv2d", false), EventKind::Other);
    }
}
