//! The model zoo: the vision models the generator imitates, each as a table of forward layers
//! (the ATen op chain, the kind of kernel and the share of the forward GPU time of each), with
//! the models' sizes and speeds.

/// The vision models the generator can imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    ResNet50,
    VitB16,
    /// Swin-T: shifted-window attention in four stages (2, 2, 6, 2 blocks).
    SwinT,
    /// A DETR-style detector: a ResNet-50 backbone, then a transformer encoder and decoder.
    Detr,
    /// An R(2+1)D-18-style video classifier: (2+1)D convolutions over 16-frame clips.
    Video3d,
    /// MobileNetV2: inverted residual blocks of a pointwise, a depthwise 3×3 and a pointwise
    /// convolution (the depthwise ones run PyTorch's own kernels, not cuDNN's).
    MobileNetV2,
    /// A YOLOv5-style one-stage detector: convolution, batch norm and SiLU in CSP blocks, with
    /// nearest upsampling and concatenation in the neck.
    Yolo,
}

impl Model {
    pub const ALL: [Model; 7] = [
        Model::ResNet50,
        Model::VitB16,
        Model::SwinT,
        Model::Detr,
        Model::Video3d,
        Model::MobileNetV2,
        Model::Yolo,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Model::ResNet50 => "resnet50",
            Model::VitB16 => "vit_b16",
            Model::SwinT => "swin_t",
            Model::Detr => "detr",
            Model::Video3d => "video3d",
            Model::MobileNetV2 => "mobilenet_v2",
            Model::Yolo => "yolo",
        }
    }

    pub fn parse(id: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.id() == id)
    }

    /// Parameters, in millions: the gradients a data-parallel step all-reduces.
    pub(super) fn params_m(self) -> f64 {
        match self {
            Model::ResNet50 => 25.6,
            Model::VitB16 => 86.6,
            Model::SwinT => 28.3,
            Model::Detr => 41.3,
            Model::Video3d => 33.3,
            Model::MobileNetV2 => 3.5,
            Model::Yolo => 21.2,
        }
    }

    /// Forward GPU time of a batch of 64 on an A100 in mixed precision, in µs.
    pub(super) fn forward_us(self) -> f64 {
        match self {
            Model::ResNet50 => 22_000.0,
            Model::VitB16 => 45_000.0,
            Model::SwinT => 26_000.0,
            Model::Detr => 60_000.0,
            Model::Video3d => 80_000.0,
            Model::MobileNetV2 => 14_000.0,
            Model::Yolo => 34_000.0,
        }
    }
}

const CONV: &[&str] = &[
    "aten::conv2d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
];
const BATCH_NORM: &[&str] = &[
    "aten::batch_norm",
    "aten::_batch_norm_impl_index",
    "aten::cudnn_batch_norm",
];
const RELU: &[&str] = &["aten::relu_", "aten::clamp_min_"];
const LAYER_NORM: &[&str] = &["aten::layer_norm", "aten::native_layer_norm"];
const LINEAR: &[&str] = &["aten::linear", "aten::addmm"];
const SDPA: &[&str] = &[
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_flash_attention_forward",
];
const ADD_OP: &[&str] = &["aten::add"];
const ROLL_OP: &[&str] = &["aten::roll"];
const CONV3D: &[&str] = &[
    "aten::conv3d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
];
const GELU_OP: &[&str] = &["aten::gelu"];
const DEPTHWISE_CONV: &[&str] = &[
    "aten::conv2d",
    "aten::convolution",
    "aten::_convolution",
    "aten::_conv_depthwise2d",
];
const RELU6: &[&str] = &["aten::hardtanh_"];
const SILU_OP: &[&str] = &["aten::silu_"];
const UPSAMPLE_OP: &[&str] = &["aten::upsample_nearest2d"];
const CAT_OP: &[&str] = &["aten::cat"];
/// Autocast's cast of a layer's fp32 weights to half precision, and its backward.
pub(super) const CAST: &[&str] = &["aten::to", "aten::_to_copy", "aten::copy_"];
pub(super) const CAST_BACKWARD: &[&str] = &[
    "autograd::engine::evaluate_function: ToCopyBackward0",
    "aten::to",
    "aten::_to_copy",
    "aten::copy_",
];

/// A layer: its op chain, its kernel, and its share of the forward GPU time.
pub(super) type Layer = (&'static [&'static str], Kernel, f64);

/// One ResNet-50 convolution unit (53 of them).
const RESNET_UNIT: [Layer; 3] = [
    (CONV, Kernel::Conv, 0.70),
    (BATCH_NORM, Kernel::BatchNorm, 0.18),
    (RELU, Kernel::Elementwise, 0.12),
];

/// One ViT-B/16 encoder block (12 of them).
const VIT_BLOCK: [Layer; 10] = [
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.22),
    (SDPA, Kernel::Attention, 0.20),
    (LINEAR, Kernel::Gemm, 0.08),
    (ADD_OP, Kernel::Add, 0.02),
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.17),
    (GELU_OP, Kernel::Gelu, 0.04),
    (LINEAR, Kernel::Gemm, 0.17),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One Swin-T block: attention within shifted windows (12 of them).
const SWIN_BLOCK: [Layer; 11] = [
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (ROLL_OP, Kernel::Elementwise, 0.03),
    (LINEAR, Kernel::Gemm, 0.15),
    (SDPA, Kernel::Attention, 0.20),
    (LINEAR, Kernel::Gemm, 0.07),
    (ADD_OP, Kernel::Add, 0.02),
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.20),
    (GELU_OP, Kernel::Gelu, 0.05),
    (LINEAR, Kernel::Gemm, 0.20),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One (2+1)D convolution of the video model: a spatial (1×3×3) and a temporal (3×1×1) 3D
/// convolution, each with batch norm and ReLU (16 of them).
const VIDEO_UNIT: [Layer; 6] = [
    (CONV3D, Kernel::Conv, 0.46),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU, Kernel::Elementwise, 0.06),
    (CONV3D, Kernel::Conv, 0.26),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU, Kernel::Elementwise, 0.06),
];

/// One MobileNetV2 inverted residual block (17 of them): the depthwise convolution, memory
/// bound, takes the largest share.
const MOBILENET_BLOCK: [Layer; 9] = [
    (CONV, Kernel::Conv, 0.20),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU6, Kernel::Elementwise, 0.06),
    (DEPTHWISE_CONV, Kernel::DepthwiseConv, 0.32),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU6, Kernel::Elementwise, 0.06),
    (CONV, Kernel::Conv, 0.14),
    (BATCH_NORM, Kernel::BatchNorm, 0.04),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One YOLOv5-style CSP unit of the backbone (24 of them)…
const YOLO_UNIT: [Layer; 7] = [
    (CONV, Kernel::Conv, 0.44),
    (BATCH_NORM, Kernel::BatchNorm, 0.12),
    (SILU_OP, Kernel::Silu, 0.13),
    (CONV, Kernel::Conv, 0.18),
    (BATCH_NORM, Kernel::BatchNorm, 0.05),
    (SILU_OP, Kernel::Silu, 0.05),
    (CAT_OP, Kernel::Concat, 0.03),
];

/// …and of its neck (4 of them), which upsamples and concatenates feature maps.
const YOLO_NECK: [Layer; 5] = [
    (UPSAMPLE_OP, Kernel::Upsample, 0.15),
    (CAT_OP, Kernel::Concat, 0.10),
    (CONV, Kernel::Conv, 0.50),
    (BATCH_NORM, Kernel::BatchNorm, 0.12),
    (SILU_OP, Kernel::Silu, 0.13),
];

/// `unit` repeated `n` times, sharing `share` of the forward time among the repeats.
fn repeat(unit: &[Layer], n: usize, share: f64) -> Vec<Layer> {
    (0..n)
        .flat_map(|_| {
            unit.iter()
                .map(move |&(ops, k, s)| (ops, k, s * share / n as f64))
        })
        .collect()
}

/// The model's forward layers, each with its share of the forward GPU time.
pub(super) fn forward_layers(model: Model) -> Vec<Layer> {
    let mut layers = match model {
        Model::ResNet50 => return repeat(&RESNET_UNIT, 53, 1.0),
        Model::VitB16 => repeat(&VIT_BLOCK, 12, 1.0),
        Model::SwinT => repeat(&SWIN_BLOCK, 12, 0.96),
        Model::Detr => {
            let mut l = repeat(&RESNET_UNIT, 53, 0.55);
            l.extend(repeat(&VIT_BLOCK, 6, 0.2));
            l.extend(repeat(&VIT_BLOCK, 6, 0.21));
            l
        }
        Model::Video3d => repeat(&VIDEO_UNIT, 16, 0.96),
        Model::MobileNetV2 => repeat(&MOBILENET_BLOCK, 17, 0.96),
        Model::Yolo => {
            let mut l = repeat(&YOLO_UNIT, 24, 0.76);
            l.extend(repeat(&YOLO_NECK, 4, 0.2));
            l
        }
    };
    let stem = if model == Model::Video3d {
        CONV3D
    } else {
        CONV
    };
    layers.insert(0, (stem, Kernel::Conv, 0.02));
    layers.push((LINEAR, Kernel::Gemm, 0.02));
    layers
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    Conv,
    BatchNorm,
    LayerNorm,
    Gemm,
    Attention,
    Elementwise,
    Add,
    Gelu,
    DepthwiseConv,
    Silu,
    Upsample,
    Concat,
}

impl Kernel {
    /// Whether the layer has weights that autocast casts to half precision each step.
    pub(super) fn has_weights(self) -> bool {
        matches!(self, Kernel::Conv | Kernel::Gemm | Kernel::DepthwiseConv)
    }
}
