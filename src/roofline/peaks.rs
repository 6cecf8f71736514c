//! Peak throughput per device: dense (no sparsity) TFLOP/s per precision and memory bandwidth,
//! each row from its vendor's datasheet or architecture whitepaper (named in `source`). Matched
//! by the `deviceProperties` name's words (`NVIDIA A100-SXM4-80GB` → `a100`, `sxm4`, `80gb`);
//! rows are tried in order, the more specific first. A device whose name is missing or generic
//! (`""`, `AMD Radeon Graphics`) is matched by what `deviceProperties` records of it instead
//! ([`by_properties`]): vendor (wavefront of 64 on AMD), architecture, compute units or SMs and
//! memory, against each row's [`Spec`] (datasheet figures too); it matches only where one
//! device fits, and says which did where several do.

/// One device's peaks; `None` where the device has no such path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peaks {
    pub device: &'static str,
    /// FP32 on the SIMT (CUDA) or vector cores.
    pub fp32: f64,
    /// FP32 on the tensor / matrix cores: TF32 on NVIDIA and MI300; FP32 matrix on MI100–MI250X.
    pub(crate) tf32: Option<f64>,
    /// FP16 and BF16 tensor / matrix cores with FP32 accumulation (V100, T4, RTX 20: FP16 only).
    pub fp16: f64,
    pub fp8: Option<f64>,
    /// HBM or GDDR bandwidth, GB/s.
    pub gbps: f64,
    pub source: &'static str,
}

/// The words that must all appear in the name, then the peaks.
type Row = (&'static [&'static str], Peaks);

const fn p(
    device: &'static str,
    fp32: f64,
    tf32: Option<f64>,
    fp16: f64,
    fp8: Option<f64>,
    gbps: f64,
    source: &'static str,
) -> Peaks {
    Peaks {
        device,
        fp32,
        tf32,
        fp16,
        fp8,
        gbps,
        source,
    }
}

const V100: &str = "NVIDIA Tesla V100 datasheet";
const A100: &str = "NVIDIA A100 datasheet";
const H100: &str = "NVIDIA H100 datasheet (sparsity figures halved)";
const TURING: &str = "NVIDIA Turing architecture whitepaper (reference clocks)";
const GA102: &str = "NVIDIA Ampere GA102 whitepaper (FP16 with FP32 accumulate)";
const ADA: &str = "NVIDIA Ada Lovelace architecture whitepaper (FP32 accumulate)";
const BLACKWELL_RTX: &str = "NVIDIA RTX Blackwell architecture whitepaper (FP32 accumulate)";
const H200: &str = "NVIDIA H200 datasheet (sparsity figures halved)";
const B200: &str = "NVIDIA HGX B200 datasheet, per GPU (an eighth; sparsity halved)";
const MI250: &str = "AMD Instinct MI250/MI250X datasheet, per GCD (half the package)";

/// Rows one a line, as a table reads (`rustfmt::skip`: it would spread each over nine).
#[rustfmt::skip]
static TABLE: &[Row] = &[
    // words, (device, fp32, tf32, fp16/bf16, fp8 TFLOP/s, GB/s, source)
    (&["v100", "pcie"], p("V100 PCIe", 14.0, None, 112.0, None, 900.0, V100)),
    (&["v100"], p("V100 SXM2", 15.7, None, 125.0, None, 900.0, V100)),
    (&["t4"], p("T4", 8.1, None, 65.0, None, 320.0, "NVIDIA T4 datasheet")),
    (&["a10g"], p("A10G", 31.2, Some(35.0), 70.0, None, 600.0, "AWS G5 (A10G: no NVIDIA datasheet)")),
    (&["a10"], p("A10", 31.2, Some(62.5), 125.0, None, 600.0, "NVIDIA A10 datasheet")),
    (&["a100", "80gb", "pcie"], p("A100 80GB PCIe", 19.5, Some(156.0), 312.0, None, 1935.0, A100)),
    (&["a100", "pcie"], p("A100 40GB PCIe", 19.5, Some(156.0), 312.0, None, 1555.0, A100)),
    (&["a100", "80gb"], p("A100 80GB SXM", 19.5, Some(156.0), 312.0, None, 2039.0, A100)),
    (&["a100"], p("A100 40GB SXM", 19.5, Some(156.0), 312.0, None, 1555.0, A100)),
    (&["l40s"], p("L40S", 91.6, Some(183.0), 362.0, Some(733.0), 864.0, "NVIDIA L40S datasheet")),
    (&["l4"], p("L4", 30.3, Some(60.0), 121.0, Some(242.0), 300.0, "NVIDIA L4 datasheet")),
    (&["h100", "pcie"], p("H100 PCIe", 51.0, Some(378.0), 756.0, Some(1513.0), 2000.0, H100)),
    (&["h100", "nvl"], p("H100 NVL", 60.0, Some(417.5), 835.5, Some(1670.5), 3900.0, H100)),
    (&["h100"], p("H100 SXM", 67.0, Some(494.5), 989.5, Some(1979.0), 3350.0, H100)),
    (&["h200"], p("H200 SXM", 67.0, Some(494.5), 989.5, Some(1979.0), 4800.0, H200)),
    (&["b200"], p("B200", 75.0, Some(1125.0), 2250.0, Some(4500.0), 8000.0, B200)),
    (&["2080", "ti"], p("RTX 2080 Ti", 13.4, None, 53.8, None, 616.0, TURING)),
    (&["2080"], p("RTX 2080", 10.1, None, 40.3, None, 448.0, TURING)),
    (&["3080"], p("RTX 3080", 29.8, Some(29.8), 59.5, None, 760.0, GA102)),
    (&["3090"], p("RTX 3090", 35.6, Some(35.6), 71.0, None, 936.0, GA102)),
    (&["4080"], p("RTX 4080", 48.7, Some(48.7), 97.5, Some(194.9), 716.8, ADA)),
    (&["4090"], p("RTX 4090", 82.6, Some(82.6), 165.2, Some(330.3), 1008.0, ADA)),
    (&["5080"], p("RTX 5080", 56.3, Some(56.3), 112.6, Some(225.1), 960.0, BLACKWELL_RTX)),
    (&["5090"], p("RTX 5090", 104.8, Some(104.8), 209.5, Some(419.0), 1792.0, BLACKWELL_RTX)),
    (&["mi100"], p("MI100", 23.1, Some(46.1), 184.6, None, 1228.8, "AMD Instinct MI100 datasheet")),
    (&["mi210"], p("MI210", 22.6, Some(45.3), 181.0, None, 1638.4, "AMD Instinct MI210 datasheet")),
    (&["mi250x"], p("MI250X (GCD)", 23.95, Some(47.85), 191.5, None, 1638.4, MI250)),
    (&["mi250"], p("MI250 (GCD)", 22.65, Some(45.25), 181.0, None, 1638.4, MI250)),
    (&["mi300x"], p("MI300X", 163.4, Some(653.7), 1307.4, Some(2614.9), 5300.0, "AMD Instinct MI300X datasheet")),
    (&["mi325x"], p("MI325X", 163.4, Some(653.7), 1307.4, Some(2614.9), 6000.0, "AMD Instinct MI325X datasheet")),
];

/// What a row's device is made of, from the same datasheets: what `deviceProperties` records.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spec {
    /// AMD (a wavefront of 64) or NVIDIA (a warp of 32).
    amd: bool,
    /// `computeMajor`, `computeMinor` (HIP reports the gfx target's: gfx942 → 9.4).
    arch: (i64, i64),
    /// Its architecture's name: `gfx942`, `sm_90`.
    arch_name: &'static str,
    /// Compute units (AMD) or streaming multiprocessors (NVIDIA).
    units: i64,
    /// Memory sizes it is sold with, GiB (GB as the datasheet writes it).
    memory_gib: &'static [f64],
}

const fn nv(
    arch: (i64, i64),
    arch_name: &'static str,
    units: i64,
    memory_gib: &'static [f64],
) -> Spec {
    Spec {
        amd: false,
        arch,
        arch_name,
        units,
        memory_gib,
    }
}

const fn amd(
    arch: (i64, i64),
    arch_name: &'static str,
    units: i64,
    memory_gib: &'static [f64],
) -> Spec {
    Spec {
        amd: true,
        arch,
        arch_name,
        units,
        memory_gib,
    }
}

/// Each row's spec, by its device, in the table's order.
#[rustfmt::skip]
static SPECS: &[(&str, Spec)] = &[
    ("V100 PCIe", nv((7, 0), "sm_70", 80, &[16.0, 32.0])),
    ("V100 SXM2", nv((7, 0), "sm_70", 80, &[16.0, 32.0])),
    ("T4", nv((7, 5), "sm_75", 40, &[16.0])),
    ("A10G", nv((8, 6), "sm_86", 80, &[24.0])),
    ("A10", nv((8, 6), "sm_86", 72, &[24.0])),
    ("A100 80GB PCIe", nv((8, 0), "sm_80", 108, &[80.0])),
    ("A100 40GB PCIe", nv((8, 0), "sm_80", 108, &[40.0])),
    ("A100 80GB SXM", nv((8, 0), "sm_80", 108, &[80.0])),
    ("A100 40GB SXM", nv((8, 0), "sm_80", 108, &[40.0])),
    ("L40S", nv((8, 9), "sm_89", 142, &[48.0])),
    ("L4", nv((8, 9), "sm_89", 58, &[24.0])),
    ("H100 PCIe", nv((9, 0), "sm_90", 114, &[80.0])),
    ("H100 NVL", nv((9, 0), "sm_90", 132, &[94.0, 96.0])),
    ("H100 SXM", nv((9, 0), "sm_90", 132, &[80.0])),
    ("H200 SXM", nv((9, 0), "sm_90", 132, &[141.0])),
    ("B200", nv((10, 0), "sm_100", 148, &[180.0, 192.0])),
    ("RTX 2080 Ti", nv((7, 5), "sm_75", 68, &[11.0])),
    ("RTX 2080", nv((7, 5), "sm_75", 46, &[8.0])),
    ("RTX 3080", nv((8, 6), "sm_86", 68, &[10.0, 12.0])),
    ("RTX 3090", nv((8, 6), "sm_86", 82, &[24.0])),
    ("RTX 4080", nv((8, 9), "sm_89", 76, &[16.0])),
    ("RTX 4090", nv((8, 9), "sm_89", 128, &[24.0])),
    ("RTX 5080", nv((12, 0), "sm_120", 84, &[16.0])),
    ("RTX 5090", nv((12, 0), "sm_120", 170, &[32.0])),
    ("MI100", amd((9, 0), "gfx908", 120, &[32.0])),
    ("MI210", amd((9, 0), "gfx90a", 104, &[64.0])),
    ("MI250X (GCD)", amd((9, 0), "gfx90a", 110, &[64.0])),
    ("MI250 (GCD)", amd((9, 0), "gfx90a", 104, &[64.0])),
    ("MI300X", amd((9, 4), "gfx942", 304, &[192.0])),
    ("MI325X", amd((9, 4), "gfx942", 304, &[256.0])),
];

/// A device's memory as recorded fits a size sold when within this share below it (the
/// driver keeps some back: an 80 GB A100 reports 79.2 GiB) or [`MEMORY_ABOVE`] above.
const MEMORY_BELOW: f64 = 0.08;
const MEMORY_ABOVE: f64 = 0.02;

/// What `deviceProperties` records of a device, as [`by_properties`] reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Properties {
    /// `warpSize`: 64 on AMD, 32 on NVIDIA.
    pub warp_size: Option<i64>,
    pub arch: Option<(i64, i64)>,
    /// `numSms`: compute units on AMD.
    pub units: Option<i64>,
    /// `totalGlobalMem`, bytes.
    pub memory: Option<u64>,
}

/// How a device was found in the table.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// By its name.
    Name(&'static Peaks),
    /// By its properties, one device fitting them; `by` says which ("304 CUs, 192 GiB, gfx942").
    Properties { peaks: &'static Peaks, by: String },
    /// By its properties, several devices fitting them (no peaks taken): their names.
    Ambiguous {
        devices: Vec<&'static str>,
        by: String,
    },
    /// Not at all.
    None,
}

impl Found {
    /// The peaks, where one row was found.
    pub fn peaks(&self) -> Option<&'static Peaks> {
        match self {
            Found::Name(p) | Found::Properties { peaks: p, .. } => Some(p),
            Found::Ambiguous { .. } | Found::None => None,
        }
    }
}

/// Words of a name that say nothing of which device it is.
const GENERIC: [&str; 10] = [
    "amd",
    "nvidia",
    "radeon",
    "graphics",
    "gpu",
    "device",
    "instinct",
    "accelerator",
    "geforce",
    "tesla",
];

/// Whether a `deviceProperties` name says nothing of the device: empty, or only vendor and
/// family words, numbers and gfx targets (`AMD Radeon Graphics`, `gfx942`).
pub fn is_generic(name: &str) -> bool {
    words(&name.to_ascii_lowercase()).iter().all(|w| {
        GENERIC.contains(w) || w.starts_with("gfx") || w.bytes().all(|b| b.is_ascii_digit())
    })
}

fn words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The peaks of a device: by its name, else, where the name is generic, by its properties.
pub fn find(name: &str, props: &Properties) -> Found {
    if let Some(p) = of(name) {
        return Found::Name(p);
    }
    if is_generic(name) {
        by_properties(props)
    } else {
        Found::None
    }
}

/// The rows whose spec fits every property recorded; the architecture and the compute units
/// must be recorded (a vendor and a memory size alone fit too many).
pub fn by_properties(props: &Properties) -> Found {
    let (Some(arch), Some(units)) = (props.arch, props.units) else {
        return Found::None;
    };
    let amd = props.warp_size.map(|w| w == 64);
    let gib = props.memory.map(|b| b as f64 / (1u64 << 30) as f64);
    let fits: Vec<(&'static str, &Spec)> = SPECS
        .iter()
        .filter(|(_, s)| {
            s.arch == arch
                && s.units == units
                && amd.is_none_or(|a| a == s.amd)
                && gib.is_none_or(|g| {
                    s.memory_gib
                        .iter()
                        .any(|&m| g >= m * (1.0 - MEMORY_BELOW) && g <= m * (1.0 + MEMORY_ABOVE))
                })
        })
        .map(|(d, s)| (*d, s))
        .collect();
    let said = |arch_name: String, amd: Option<bool>| {
        let unit = match amd {
            Some(true) => "CUs",
            Some(false) => "SMs",
            None => "compute units",
        };
        let memory = gib.map(|g| format!(", {g:.0} GiB")).unwrap_or_default();
        format!("{units} {unit}{memory}, {arch_name}")
    };
    match fits.as_slice() {
        [] => Found::None,
        [(device, spec)] => match TABLE.iter().find(|(_, p)| p.device == *device) {
            Some((_, peaks)) => Found::Properties {
                peaks,
                by: said(spec.arch_name.to_string(), Some(spec.amd)),
            },
            None => Found::None,
        },
        several => Found::Ambiguous {
            devices: several.iter().map(|(d, _)| *d).collect(),
            by: said(format!("arch {}.{}", arch.0, arch.1), amd),
        },
    }
}

/// Words that name a different card than the row's when present and not in the row.
const VARIANTS: [&str; 2] = ["ti", "super"];

/// The peaks of the device a `deviceProperties` name describes, if the table has it.
pub fn of(name: &str) -> Option<&'static Peaks> {
    let lower = name.to_ascii_lowercase();
    let words = words(&lower);
    TABLE
        .iter()
        .find(|(needles, _)| {
            needles.iter().all(|n| words.contains(n))
                && VARIANTS
                    .iter()
                    .all(|v| needles.contains(v) || !words.contains(v))
        })
        .map(|(_, peaks)| peaks)
}

#[cfg(test)]
mod tests {
    use super::{find, of, Found, Properties, SPECS, TABLE};

    /// `deviceProperties` as the shared traces record them.
    fn props(warp: i64, arch: (i64, i64), units: i64, memory: u64) -> Properties {
        Properties {
            warp_size: Some(warp),
            arch: Some(arch),
            units: Some(units),
            memory: Some(memory),
        }
    }

    #[test]
    fn every_row_has_a_spec_and_every_spec_a_row() {
        let rows: Vec<&str> = TABLE.iter().map(|(_, p)| p.device).collect();
        let specs: Vec<&str> = SPECS.iter().map(|(d, _)| *d).collect();
        assert_eq!(rows, specs);
    }

    #[test]
    fn a_nameless_or_generic_device_is_found_by_what_it_is() {
        // vLLM's MI300X traces (TraceLens): name "", 304 CUs, 206141652992 B, 9.4, wave 64.
        let mi300x = props(64, (9, 4), 304, 206_141_652_992);
        assert_eq!(
            find("", &mi300x),
            Found::Properties {
                peaks: of("MI300X").unwrap(),
                by: "304 CUs, 192 GiB, gfx942".into()
            }
        );
        // HTA's MI250 trace: "AMD Radeon Graphics", 104 CUs, 64 GiB, 9.0: an MI210 or a GCD
        // of an MI250, which the properties cannot tell apart.
        let gfx90a = props(64, (9, 0), 104, 68_702_699_520);
        assert_eq!(
            find("AMD Radeon Graphics", &gfx90a),
            Found::Ambiguous {
                devices: vec!["MI210", "MI250 (GCD)"],
                by: "104 CUs, 64 GiB, arch 9.0".into()
            }
        );
        // An H100 SXM without a name; the same silicon with 95 GiB is an NVL.
        let h100 = props(32, (9, 0), 132, 85_045_477_376);
        assert_eq!(find("", &h100).peaks().map(|p| p.device), Some("H100 SXM"));
        let nvl = props(32, (9, 0), 132, 102_085_492_736);
        assert_eq!(find("", &nvl).peaks().map(|p| p.device), Some("H100 NVL"));
        // A name the table lacks is not second-guessed (an H800 is not an H100).
        assert_eq!(find("NVIDIA H800", &h100), Found::None);
        // Without the architecture or the units nothing is matched; nor where nothing fits.
        let bare = Properties {
            memory: Some(206_141_652_992),
            ..Properties::default()
        };
        assert_eq!(find("", &bare), Found::None);
        assert_eq!(
            find("", &props(64, (9, 4), 228, 137_438_953_472)),
            Found::None
        );
        // A wavefront of 32 is not an AMD device, whatever else fits.
        assert_eq!(
            find("", &props(32, (9, 4), 304, 206_141_652_992)),
            Found::None
        );
    }

    #[test]
    fn names_as_devices_write_them_find_their_row() {
        let cases = [
            ("NVIDIA A100-SXM4-80GB", Some("A100 80GB SXM")),
            ("NVIDIA A100-SXM4-40GB", Some("A100 40GB SXM")),
            ("NVIDIA A100 80GB PCIe", Some("A100 80GB PCIe")),
            ("NVIDIA A100-PCIE-40GB", Some("A100 40GB PCIe")),
            ("NVIDIA A10", Some("A10")),
            ("NVIDIA A10G", Some("A10G")),
            ("NVIDIA H100 80GB HBM3", Some("H100 SXM")),
            ("NVIDIA H100 PCIe", Some("H100 PCIe")),
            ("NVIDIA H200", Some("H200 SXM")),
            ("NVIDIA B200", Some("B200")),
            ("NVIDIA L4", Some("L4")),
            ("NVIDIA L40S", Some("L40S")),
            ("Tesla V100-SXM2-16GB", Some("V100 SXM2")),
            ("Tesla T4", Some("T4")),
            ("GeForce RTX 2080 Ti", Some("RTX 2080 Ti")),
            ("NVIDIA GeForce RTX 3090", Some("RTX 3090")),
            ("NVIDIA GeForce RTX 4090", Some("RTX 4090")),
            ("AMD Instinct MI300X VF", Some("MI300X")),
            ("AMD Instinct MI210", Some("MI210")),
            ("AMD Instinct MI250X", Some("MI250X (GCD)")),
            ("NVIDIA GeForce RTX 3080 Ti", None),
            ("NVIDIA GeForce RTX 4080 SUPER", None),
            ("AMD Radeon Graphics", None),
            ("NVIDIA H800", None),
            ("", None),
        ];
        for (name, device) in cases {
            assert_eq!(of(name).map(|p| p.device), device, "{name}");
        }
    }
}
