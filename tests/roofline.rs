//! The roofline: FLOP counts of matrix, convolution and attention ops on every shared trace
//! against an independent oracle (`tests/oracle/flops.py`), a written trace's kernel charged by
//! hand, and the report's roofline on real traces (a known device, an unknown one).

mod common;
mod kineto;
#[path = "common/oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::model::{EventKind, Trace};
use torchtraceap::report::Report;
use torchtraceap::roofline::flops::{self, Family};
use torchtraceap::roofline::Roofline;

/// `(events, FLOPs)` by op name.
type Counts = BTreeMap<String, (u64, f64)>;

/// The oracle's counts for each file.
fn oracle(files: &[PathBuf]) -> BTreeMap<PathBuf, Counts> {
    oracle::run("flops.py", files)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("oracle JSON");
            let ops = v["ops"]
                .as_object()
                .expect("ops")
                .iter()
                .map(|(k, x)| {
                    let n = x[0].as_u64().expect("a count");
                    (k.clone(), (n, x[1].as_f64().expect("FLOPs")))
                })
                .collect();
            (PathBuf::from(v["file"].as_str().expect("file")), ops)
        })
        .collect()
}

/// Every op with shapes and a matrix, convolution or attention formula, summed by name.
fn ours(t: &Trace) -> Counts {
    let e = &t.events;
    let mut counts = Counts::new();
    for i in 0..e.len() {
        if e.kind[i] != EventKind::CpuOp || e.detail[i] == torchtraceap::model::NONE {
            continue;
        }
        let d = t.details.op(e.detail[i]);
        let Some(dims) = d.input_dims else { continue };
        let text = |s: Option<u32>| s.map(|s| t.strings.get(s));
        let Some(c) = flops::cost(
            t.name_of(i),
            t.strings.get(dims),
            text(d.input_types),
            text(d.concrete_inputs),
        ) else {
            continue;
        };
        if c.family.tensor_cores() && c.flops > 0.0 {
            let n = counts.entry(t.name_of(i).to_string()).or_default();
            n.0 += 1;
            n.1 += c.flops;
        }
    }
    counts
}

fn ingest(path: &Path) -> Option<Trace> {
    let bytes = std::fs::read(path).expect("readable");
    ingest_bytes(&bytes, IngestOptions::default())
        .ok()
        .map(|i| i.trace)
}

#[test]
fn matrix_and_attention_flops_agree_with_the_oracle_on_every_shared_trace() {
    let Some(dir) = common::shared_traces("the FLOP-count oracle checks") else {
        return;
    };
    let files = common::trace_files(&dir);
    let expected = oracle(&files);
    let mut compared = 0;
    for path in &files {
        let Some(t) = ingest(path) else { continue };
        let want = expected.get(path).cloned().unwrap_or_default();
        let got = ours(&t);
        let names: Vec<&String> = want.keys().chain(got.keys()).collect();
        for name in names {
            let (w, g) = (want.get(name), got.get(name));
            let (Some(&(wn, wf)), Some(&(gn, gf))) = (w, g) else {
                panic!("{}: {name}: oracle {w:?}, ours {g:?}", path.display());
            };
            assert_eq!(wn, gn, "{}: {name}: events counted", path.display());
            assert!(
                (wf - gf).abs() <= 0.01 * wf.abs().max(gf.abs()),
                "{}: {name}: oracle {wf:e} FLOPs, ours {gf:e}",
                path.display()
            );
        }
        compared += usize::from(!want.is_empty());
    }
    assert!(
        compared >= 40,
        "only {compared} traces with shapes compared"
    );
}

/// A written trace: one `aten::mm` of 4096² fp16 matrices launching one 1 ms kernel on
/// `device`, and `more` kernels after it.
fn one_gemm(device: &str, more: &[String]) -> Roofline {
    gemm_on(&kineto::device(0, device, 8, 85_899_345_920), more)
}

/// [`one_gemm`] on the device `deviceProperties` entry `device` describes.
fn gemm_on(device: &str, more: &[String]) -> Roofline {
    let c = |cat: &str, name: &str, tid: i64, span: (i64, i64), args: &str| {
        kineto::complete(cat, name, (1, tid), span, args)
    };
    let events = vec![
        c("user_annotation", "ProfilerStep#1", 1, (0, 2000), ""),
        c(
            "cpu_op",
            "aten::mm",
            1,
            (10, 40),
            r#""Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::Half", "c10::Half"]"#,
        ),
        c(
            "cuda_runtime",
            "cudaLaunchKernel",
            1,
            (20, 10),
            r#""correlation": 7"#,
        ),
        kineto::complete(
            "kernel",
            "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn",
            (0, 7),
            (100, 1000),
            r#""device": 0, "stream": 7, "correlation": 7"#,
        ),
    ]
    .into_iter()
    .chain(more.iter().cloned())
    .collect::<Vec<_>>();
    let text = kineto::document(&[device.to_string()], "", &events, "roofline.pt.trace.json");
    let ingested = ingest_bytes(text.as_bytes(), IngestOptions::default()).expect("a trace");
    torchtraceap::roofline::analyze(&ingested.trace, Some(Some(0)), &[(1, 0, 2_000_000)])
        .expect("a GPU")
}

#[test]
fn a_gemm_kernel_is_charged_its_op_and_meets_the_devices_roofline() {
    let r = one_gemm("NVIDIA A100-SXM4-80GB", &[]);
    let flop = 2.0 * 4096f64.powi(3);
    let bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
    let k = &r.kernels[0];
    assert_eq!(
        (k.op.as_str(), k.calls, k.dtype.as_str()),
        ("aten::mm", 1, "fp16")
    );
    assert!((k.gflop - flop / 1e9).abs() < 1e-6);
    assert!((k.gbytes - bytes / 1e9).abs() < 1e-9);
    // 1 ms: 137.4 TFLOP/s, 100.7 GB/s; intensity 1365 FLOP/B, past the A100's ridge (153).
    assert!((k.tflops - flop / 1e-3 / 1e12).abs() < 1e-6, "{}", k.tflops);
    assert!((k.intensity - flop / bytes).abs() < 1e-6);
    assert_eq!(k.bound.as_deref(), Some("compute"));
    let at_peak_ms = flop / 312e12 * 1e3;
    assert!((k.roofline_ms.unwrap() - at_peak_ms).abs() < 1e-9);
    assert!((k.share.unwrap() - at_peak_ms).abs() < 1e-9);
    assert!((k.lost_ms.unwrap() - (1.0 - at_peak_ms)).abs() < 1e-9);
    // The step: 2 ms, of which the GEMM's FLOPs take 0.44 ms at peak.
    let s = &r.steps[0];
    assert!((s.mfu.unwrap() - at_peak_ms / 2.0).abs() < 1e-9, "{s:?}");
    assert!((s.roofline_ms.unwrap() - at_peak_ms).abs() < 1e-9);
    assert_eq!(r.coverage.kernel_ms, 1.0);
    assert_eq!(r.coverage.shapes_ms, 1.0);
    assert_eq!(r.coverage.counted_ms, 1.0);
    assert_eq!(r.coverage.memory_events, 0);
    assert_eq!(
        r.peaks.as_ref().map(|p| p.device.as_str()),
        Some("A100 80GB SXM")
    );

    // An unknown device: achieved rates, no roofline.
    let r = one_gemm("NVIDIA H800", &[]);
    assert_eq!(r.peaks, None);
    assert_eq!(r.mfu, None);
    assert!((r.kernels[0].tflops - flop / 1e-3 / 1e12).abs() < 1e-6);
    assert_eq!(r.kernels[0].lost_ms, None);
}

#[test]
fn a_device_without_a_name_is_matched_by_its_properties_or_said_ambiguous() {
    // As vLLM's MI300X traces describe their devices: no name, 304 CUs, 192 GiB, gfx942.
    let mi300x = r#"{"id": 0, "name": "", "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4, "numSms": 304, "warpSize": 64}"#;
    let r = gemm_on(mi300x, &[]);
    assert_eq!(r.peaks.as_ref().map(|p| p.device.as_str()), Some("MI300X"));
    assert_eq!(r.matched_by.as_deref(), Some("304 CUs, 192 GiB, gfx942"));
    assert!(r.ambiguous.is_empty());
    let at_peak_ms = 2.0 * 4096f64.powi(3) / 1307.4e12 * 1e3;
    assert!(
        (r.mfu.unwrap() - at_peak_ms / 2.0).abs() < 1e-9,
        "{:?}",
        r.mfu
    );
    // 108 SMs, compute 8.0, 80 GiB and no name: an A100 80GB, PCIe or SXM, which the
    // properties cannot tell apart: no peaks, no MFU, both named.
    let r = one_gemm("", &[]);
    assert_eq!((r.peaks.as_ref(), r.mfu), (None, None));
    assert_eq!(r.ambiguous, ["A100 80GB PCIe", "A100 80GB SXM"]);
    assert_eq!(
        r.matched_by.as_deref(),
        Some("108 compute units, 80 GiB, arch 8.0")
    );
    // A name the table lacks keeps its name's verdict: no peaks, nothing matched.
    let r = one_gemm("NVIDIA H800", &[]);
    assert_eq!((r.peaks.as_ref(), r.matched_by.as_ref()), (None, None));
}

#[test]
fn the_vllm_mi300x_traces_get_an_mfu_and_say_how_the_device_was_matched() {
    for trace in [
        "AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
        "AMD-AGI__TraceLens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
    ] {
        let Some(r) = report_of(trace) else { return };
        let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
        assert_eq!(roof.device, "", "{trace}");
        assert_eq!(
            roof.peaks.as_ref().map(|p| p.device.as_str()),
            Some("MI300X"),
            "{trace}"
        );
        assert!(roof.mfu.is_some(), "{trace}");
        let md = r.to_markdown(trace);
        assert!(
            md.contains("Peaks of the MI300X, matched by 304 CUs, 192 GiB, gfx942 (the trace names no device)"),
            "{md}"
        );
        // 96–97% of their kernel time is graph replays with no operator, most of it GEMMs:
        // the MFU counts the FLOPs it knows, and says it is a lower bound.
        let uncounted = roof.mfu_uncounted.expect("a lower bound");
        assert!(uncounted > 0.5, "{trace}: {uncounted}");
        assert!(md.contains("Step MFU at least "), "{md}");
        // However small, the bound is a figure, not "0.0%".
        let text = roof.mfu_text().expect("an MFU");
        assert!(!text.contains(" 0.0%"), "{trace}: {text}");
    }
}

#[test]
fn an_mfu_is_given_only_where_flops_were_counted() {
    // No operator shapes at all: no FLOPs, so no MFU (not one of 0%).
    let Some(r) = report_of("JeremyMorlier__GPUModel/trace.json") else {
        return;
    };
    let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
    assert_eq!(roof.coverage.counted_ms, 0.0);
    assert_eq!(roof.mfu, None);
    assert!(!r.to_markdown("no shapes").contains("MFU "));
    // Every matrix kernel counted: the MFU stands as it is, and a link carries it so.
    let Some(r) = report_of(
        "AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    ) else {
        return;
    };
    let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
    assert_eq!(roof.mfu_uncounted, None, "{:?}", roof.coverage);
    let text = roof.mfu_text().expect("an MFU");
    assert!(!text.contains("at least"), "{text}");
    // A lower bound travels in a link as a lower bound.
    let Some(r) = report_of(
        "AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
    ) else {
        return;
    };
    use torchtraceap::share::{decode, encode, ShareOptions, SharedReport};
    let shared = SharedReport::new(r.clone(), "vllm".into());
    let link = encode(&shared, &ShareOptions::default()).expect("a link");
    let read = decode(&link.fragment).expect("read back").report;
    let carried = read.roofline.as_ref().expect("the MFU travels");
    assert_eq!(
        carried.mfu_uncounted,
        r.roofline.as_ref().unwrap().mfu_uncounted
    );
    assert!(read.to_markdown("link").contains("Step MFU at least "));
}

#[test]
fn a_layout_kernel_of_a_matrix_op_moves_bytes_and_does_no_flops() {
    let transpose = [
        kineto::complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            (1, 1),
            (32, 5),
            r#""correlation": 8"#,
        ),
        kineto::complete(
            "kernel",
            "batched_transpose_32x32_half",
            (0, 7),
            (1100, 1000),
            r#""device": 0, "stream": 7, "correlation": 8"#,
        ),
    ];
    let r = one_gemm("NVIDIA A100-SXM4-80GB", &transpose);
    let flop = 2.0 * 4096f64.powi(3);
    let bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
    let of = |name: &str| r.kernels.iter().find(|k| k.name.starts_with(name)).unwrap();
    let (gemm, layout) = (of("ampere"), of("batched_transpose"));
    // The GEMM does every FLOP; the two kernels, 1 ms each, share the bytes.
    assert!((gemm.gflop - flop / 1e9).abs() < 1e-6);
    assert_eq!(layout.gflop, 0.0);
    assert!((gemm.gbytes - bytes / 2e9).abs() < 1e-9);
    assert!((layout.gbytes - bytes / 2e9).abs() < 1e-9);
    assert_eq!(layout.bound.as_deref(), Some("memory"));
    assert_eq!(r.coverage.counted_ms, 2.0);
}

fn report_of(trace: &str) -> Option<Report> {
    let dir = common::shared_traces("the report's roofline checks")?;
    let t = ingest(&dir.join(trace)).expect("a trace");
    let a = Analysis::new(&t);
    Some(Report::new(&a, &detect::run(&a)))
}

#[test]
fn the_report_holds_the_roofline_of_real_traces() {
    let Some(r) = report_of(
        "AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    ) else {
        return;
    };
    let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
    assert_eq!(
        roof.peaks.as_ref().map(|p| p.device.as_str()),
        Some("MI300X")
    );
    let c = &roof.coverage;
    assert!(
        c.counted_ms <= c.shapes_ms && c.shapes_ms <= c.kernel_ms,
        "{c:?}"
    );
    assert!(c.counted_ms > 0.5 * c.kernel_ms, "{c:?}");
    assert!(c.memory_events > 0);
    let mfu = roof.mfu.expect("an MFU");
    assert!(mfu > 0.0 && mfu < 1.0, "{mfu}");
    for s in &roof.steps {
        let roofline = s.roofline_ms.expect("peaks known");
        assert!(roofline > 0.0 && roofline <= s.kernel_ms + 1e-9, "{s:?}");
    }
    let lost: Vec<f64> = roof.kernels.iter().map(|k| k.lost_ms.unwrap()).collect();
    assert!(lost.windows(2).all(|w| w[0] >= w[1]), "{lost:?}");
    assert!(roof.kernels.iter().any(|k| k.op == "aten::addmm"));
    let md = r.to_markdown("timesformer");
    assert!(md.contains("## Roofline (main GPU)"), "{md}");
    assert!(md.contains("Step MFU"), "{md}");
    // Reports written before the roofline read back without it.
    let mut v = serde_json::to_value(&r).expect("JSON");
    v.as_object_mut().expect("an object").remove("roofline");
    let old = Report::from_json(&v.to_string()).expect("an older report reads");
    assert_eq!(old.roofline, None);
}

#[test]
fn an_ambiguous_device_says_so_and_keeps_its_achieved_rates() {
    let Some(r) = report_of(
        "facebookresearch__HolisticTraceAnalysis/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    ) else {
        return;
    };
    let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
    // A generic name on 104 CUs, 64 GiB, arch 9.0: an MI210 or an MI250's GCD.
    assert_eq!(roof.device, "AMD Radeon Graphics");
    assert_eq!((roof.peaks.as_ref(), roof.mfu), (None, None));
    assert_eq!(roof.ambiguous, ["MI210", "MI250 (GCD)"]);
    assert!(roof.kernels.iter().all(|k| k.tflops > 0.0 || k.gbps > 0.0));
    let md = r.to_markdown("minitoy");
    assert!(
        md.contains("The device is ambiguous: the trace names it `AMD Radeon Graphics`, and its properties (104 CUs, 64 GiB, arch 9.0) fit MI210, MI250 \\(GCD\\); achieved rates only, no MFU."),
        "{md}"
    );
}

#[test]
fn elementwise_ops_are_charged_bytes_not_matrix_flops() {
    let c = flops::cost(
        "aten::gelu",
        "[[64, 1024]]",
        Some(r#"["c10::BFloat16"]"#),
        None,
    )
    .expect("a cost");
    assert_eq!(c.family, Family::ElementWise);
    assert!(!c.family.tensor_cores());
    assert_eq!(c.bytes, 2.0 * 64.0 * 1024.0 * 2.0);
}

/// A written trace: the op PyTorch records for an Inductor kernel's launch (named the kernel,
/// `kernel_backend: triton`, its buffers as `Input Dims`) launching it through the driver.
fn compiled_kernel(name: &str, dims: &str, types: &str) -> Roofline {
    let events = [
        kineto::complete("user_annotation", "ProfilerStep#1", (1, 1), (0, 2000), ""),
        kineto::complete(
            "cpu_op",
            name,
            (1, 1),
            (10, 40),
            &format!(r#""Input Dims": {dims}, "Input type": {types}, "kernel_backend": "triton""#),
        ),
        kineto::complete(
            "cuda_driver",
            "cuLaunchKernel",
            (1, 1),
            (20, 10),
            r#""correlation": 7"#,
        ),
        kineto::complete(
            "kernel",
            name,
            (0, 7),
            (100, 1000),
            r#""device": 0, "stream": 7, "correlation": 7"#,
        ),
    ];
    let a100 = kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 85_899_345_920);
    let text = kineto::document(&[a100], "", &events, "compiled.pt.trace.json");
    let ingested = ingest_bytes(text.as_bytes(), IngestOptions::default()).expect("a trace");
    torchtraceap::roofline::analyze(&ingested.trace, Some(Some(0)), &[(1, 0, 2_000_000)])
        .expect("a GPU")
}

#[test]
fn an_inductor_kernel_is_charged_the_bytes_of_its_buffers() {
    // RMSNorm as TraceLens's compiled trace records it: x and the output [8, 4096, 2048], the
    // weight [2048], bf16; then xnumel and rnumel.
    let r = compiled_kernel(
        "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        "[[8, 4096, 2048], [2048], [8, 4096, 2048], [], []]",
        r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]"#,
    );
    let k = &r.kernels[0];
    let elements = 8.0 * 4096.0 * 2048.0;
    assert_eq!(
        (k.op.as_str(), k.dtype.as_str()),
        ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "bf16")
    );
    assert!((k.gbytes - (2.0 * elements + 2048.0) * 2.0 / 1e9).abs() < 1e-12);
    assert!((k.gflop - elements / 1e9).abs() < 1e-12);
    assert_eq!(k.bound.as_deref(), Some("memory"));
    assert_eq!(r.coverage.counted_ms, 1.0);
    assert_eq!(
        r.mfu,
        Some(0.0),
        "no matrix FLOPs in an element-wise kernel"
    );
    // A GEMM template's shape is not in its buffers' list alone: no formula.
    let r = compiled_kernel(
        "triton_tem_fused_addmm_relu_0",
        "[[64, 128], [128, 32], [32], [64, 32]]",
        r#"["c10::Half", "c10::Half", "c10::Half", "c10::Half"]"#,
    );
    assert_eq!((r.coverage.shapes_ms, r.coverage.counted_ms), (1.0, 0.0));
}

#[test]
fn the_real_compiled_traces_count_their_triton_kernels() {
    // Every kernel of these three compiled captures is a Triton kernel with its op's buffers
    // recorded, a GEMM or attention op's, or (TraceLens) `attn_fwd` under SDPA.
    for trace in [
        "AMD-AGI__TraceLens/tests__traces__torch_compile_triton__trace.json.gz",
        "facebookresearch__HolisticTraceAnalysis/tests__data__triton_example__triton_example.json.gz",
        "Aryan-Bahl__CS521-mp2/gpu__traces__inductor_vs_ref_H128_W128_C4_K7.json",
    ] {
        let Some(r) = report_of(trace) else { return };
        let roof = r.roofline.as_ref().expect("a GPU trace has a roofline");
        let c = &roof.coverage;
        let triton: f64 = roof
            .kernels
            .iter()
            .filter(|k| k.name.starts_with("triton_"))
            .map(|k| k.ms)
            .sum();
        assert!(triton > 0.0, "{trace}: {:?}", roof.kernels);
        assert!(
            roof.kernels
                .iter()
                .filter(|k| k.name.starts_with("triton_"))
                .all(|k| k.op == k.name && k.gbytes > 0.0),
            "{trace}: {:?}",
            roof.kernels
        );
        assert!(c.counted_ms >= 0.99 * c.shapes_ms, "{trace}: {c:?}");
    }
}
