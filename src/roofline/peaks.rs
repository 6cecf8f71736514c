//! Peak throughput per device: dense (no sparsity) TFLOP/s per precision and memory bandwidth,
//! each row from its vendor's datasheet or architecture whitepaper (named in `source`). Matched
//! by the `deviceProperties` name's words (`NVIDIA A100-SXM4-80GB` → `a100`, `sxm4`, `80gb`);
//! rows are tried in order, the more specific first.

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

/// Words that name a different card than the row's when present and not in the row.
const VARIANTS: [&str; 2] = ["ti", "super"];

/// The peaks of the device a `deviceProperties` name describes, if the table has it.
pub fn of(name: &str) -> Option<&'static Peaks> {
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
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
    use super::of;

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
