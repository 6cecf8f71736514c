//! Multi-GPU set-ups the TensorBoard plugin warned about: DataParallel, and DDP without NCCL.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix, Severity};
use crate::model::EventKind;

pub struct DataParallel;
pub struct DdpWithoutNccl;

const DATA_PARALLEL_FIX: Fix = Fix {
    summary: "Use DistributedDataParallel, one process per GPU.",
    snippet: "torch.distributed.init_process_group(\"nccl\")\nmodel = DDP(model.to(local_rank), device_ids=[local_rank])",
};

impl Detector for DataParallel {
    fn fixes(&self) -> &'static [Fix] {
        &[DATA_PARALLEL_FIX]
    }

    fn id(&self) -> &'static str {
        "data-parallel"
    }

    fn title(&self) -> &'static str {
        "One process drives several GPUs (DataParallel)"
    }

    fn threshold(&self) -> &'static str {
        "GPU kernels on more than one device in a single process's trace (the TensorBoard plugin's DataParallel rule)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let mut devices: Vec<i64> = t
            .tracks
            .iter()
            .filter(|tr| {
                tr.gpu
                    && tr
                        .events
                        .clone()
                        .any(|i| t.events.kind[i as usize] == EventKind::GpuKernel)
            })
            .filter_map(|tr| tr.device)
            .collect();
        devices.sort_unstable();
        devices.dedup();
        if devices.len() < 2 {
            return None;
        }
        let mut f = finding(
            self,
            format!("kernels run on {} GPUs ({devices:?}) from one process: DataParallel replicates the model and scatters inputs every step, bound by one Python thread", devices.len()),
            a.impact(0.0, "no time estimate: DistributedDataParallel typically scales much better, by an amount a single trace cannot tell"),
            0.6,
            vec![Evidence { what: "devices with kernels".into(), steps: Vec::new(), events: Vec::new(), count: Some(devices.len() as u64) }],
            DATA_PARALLEL_FIX,
        );
        f.severity = Severity::Medium;
        Some(f)
    }
}

const DDP_WITHOUT_NCCL_FIX: Fix = Fix {
    summary: "Use the NCCL backend for GPU tensors.",
    snippet: "torch.distributed.init_process_group(backend=\"nccl\")",
};

impl Detector for DdpWithoutNccl {
    fn fixes(&self) -> &'static [Fix] {
        &[DDP_WITHOUT_NCCL_FIX]
    }

    fn id(&self) -> &'static str {
        "ddp-without-nccl"
    }

    fn title(&self) -> &'static str {
        "Distributed training on GPUs without NCCL"
    }

    fn threshold(&self) -> &'static str {
        "distributedInfo names a backend other than nccl (or rccl) while the trace has GPU kernels (the TensorBoard plugin's rule)"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let backend = t.meta.backend.as_deref()?;
        let gpu = t.events.kind.contains(&EventKind::GpuKernel);
        if !gpu || backend.contains("nccl") || backend.contains("rccl") {
            return None;
        }
        let mut f = finding(
            self,
            format!("the process group uses the {backend} backend while training on GPUs"),
            a.impact(0.0, "no time estimate: NCCL collectives run on the GPU over NVLink/InfiniBand, gloo copies through host memory"),
            0.8,
            vec![Evidence { what: format!("distributedInfo.backend = {backend}"), steps: Vec::new(), events: Vec::new(), count: None }],
            DDP_WITHOUT_NCCL_FIX,
        );
        f.severity = Severity::Medium;
        Some(f)
    }
}
