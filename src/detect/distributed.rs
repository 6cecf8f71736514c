//! Multi-GPU set-ups the TensorBoard plugin warned about, as notes (a single trace cannot tell
//! what fixing them saves): DataParallel, and DDP without NCCL.

use super::contract::{About, Note, Observer};
use crate::analysis::Analysis;
use crate::model::EventKind;

pub struct DataParallel;
pub(crate) struct DdpWithoutNccl;

const DATA_PARALLEL_ABOUT: About = About {
    id: "data-parallel",
    title: "One process drives several GPUs (DataParallel)",
    rule: "compute kernels launched from one process's CPU threads onto more than one device (the TensorBoard plugin's DataParallel rule; devices that only appear in the trace's properties do not count)",
    gates: &[],
    fixes: &[],
};

impl Observer for DataParallel {
    fn about(&self) -> &'static About {
        &DATA_PARALLEL_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let e = &t.events;
        // Devices that run kernels this process launched: launch links, not mere presence.
        let mut devices: Vec<i64> = t
            .launches
            .iter()
            .filter(|l| e.kind[l.gpu as usize] == EventKind::GpuKernel)
            .filter_map(|l| t.tracks[e.track[l.gpu as usize] as usize].device)
            .collect();
        devices.sort_unstable();
        devices.dedup();
        (devices.len() >= 2).then(|| self.about().note(format!(
                "this process launches kernels on {} GPUs ({devices:?}); DataParallel replicates the model and scatters inputs every step from one Python thread, and DistributedDataParallel (one process per GPU) usually scales better",
                devices.len()
            )))
    }
}

const DDP_WITHOUT_NCCL_ABOUT: About = About {
    id: "ddp-without-nccl",
    title: "Distributed training on GPUs without NCCL",
    rule: "distributedInfo names a backend other than nccl (or rccl) while the trace has GPU kernels (the TensorBoard plugin's rule)",
    gates: &[],
    fixes: &[],
};

impl Observer for DdpWithoutNccl {
    fn about(&self) -> &'static About {
        &DDP_WITHOUT_NCCL_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let t = a.trace;
        let backend = t.meta.backend.as_deref()?;
        let gpu = t.events.kind.contains(&EventKind::GpuKernel);
        (gpu && !backend.contains("nccl") && !backend.contains("rccl")).then(|| {
            self.about().note(format!(
                "the process group uses the {backend} backend while the trace has GPU kernels; NCCL collectives run on the GPU, gloo copies through host memory"
            ))
        })
    }
}
