//! The anti-patterns the window model knows by type: the catalogue the generator injects, the
//! model's classes, the labels and the rules' ids share. It lives with the model, the lowest
//! layer, so that every stage names it without depending on the generator.

/// An anti-pattern the window model knows and the generator injects; its id is the detector's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AntiPattern {
    DataLoader,
    HostSync,
    PageableCopy,
    Fp32Simt,
    AllocatorChurn,
    LaunchBound,
}

impl AntiPattern {
    pub const ALL: [AntiPattern; 6] = [
        AntiPattern::DataLoader,
        AntiPattern::HostSync,
        AntiPattern::PageableCopy,
        AntiPattern::Fp32Simt,
        AntiPattern::AllocatorChurn,
        AntiPattern::LaunchBound,
    ];

    /// The id of the detector that finds it.
    pub fn id(self) -> &'static str {
        match self {
            AntiPattern::DataLoader => "dataloader-bottleneck",
            AntiPattern::HostSync => "host-device-sync",
            AntiPattern::PageableCopy => "pageable-memcpy",
            AntiPattern::Fp32Simt => "fp32-without-tensor-cores",
            AntiPattern::AllocatorChurn => "allocator-churn",
            AntiPattern::LaunchBound => "launch-bound-small-kernels",
        }
    }

    pub fn parse(id: &str) -> Option<AntiPattern> {
        AntiPattern::ALL.into_iter().find(|p| p.id() == id)
    }

    /// The phases of the step whose windows it affects (as `window::Phase::label`).
    pub fn phases(self) -> &'static [&'static str] {
        match self {
            AntiPattern::DataLoader | AntiPattern::PageableCopy => &["data loading"],
            AntiPattern::HostSync | AntiPattern::AllocatorChurn => &["forward"],
            AntiPattern::Fp32Simt | AntiPattern::LaunchBound => &["forward", "backward"],
        }
    }
}
