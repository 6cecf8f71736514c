//! Unit tests of `flops`.

use super::*;

fn flops(name: &str, dims: &str, types: &str, scalars: Option<&str>) -> f64 {
    cost(name, dims, Some(types), scalars).unwrap().flops
}

#[test]
fn matrix_products_by_hand() {
    // [2, 3] @ [3, 4]: 2·3·4 multiply-adds.
    let c = cost(
        "aten::mm",
        "[[2, 3], [3, 4]]",
        Some(r#"["float", "float"]"#),
        None,
    )
    .unwrap();
    assert_eq!(c.flops, 48.0);
    assert_eq!(c.bytes, (6.0 + 12.0 + 8.0) * 4.0);
    assert_eq!(c.family, Family::Matrix);
    assert_eq!(c.dtype, Dtype::F32);
    let h = r#"["c10::Half", "c10::Half", "c10::Half"]"#;
    assert_eq!(flops("aten::addmm", "[[4], [2, 3], [3, 4]]", h, None), 48.0);
    assert_eq!(flops("aten::bmm", "[[5, 2, 3], [5, 3, 4]]", h, None), 240.0);
    assert_eq!(
        flops(
            "aten::baddbmm",
            "[[5, 2, 4], [5, 2, 3], [5, 3, 4]]",
            h,
            None
        ),
        240.0
    );
    // linear: x [8, 10, 16] · wᵀ [32, 16] → 80 rows of 16·32.
    assert_eq!(
        flops("aten::linear", "[[8, 10, 16], [32, 16], [32]]", h, None),
        2.0 * 80.0 * 16.0 * 32.0
    );
    // matmul broadcasts [7, 1, 2, 3] with [5, 3, 4]: 35 products.
    assert_eq!(
        flops("aten::matmul", "[[7, 1, 2, 3], [5, 3, 4]]", h, None),
        35.0 * 48.0
    );
    assert_eq!(flops("aten::matmul", "[[3], [3, 4]]", h, None), 24.0);
    assert!(cost("aten::mm", "[[2, 3], [4, 5]]", Some(h), None).is_none());
    assert!(cost("aten::einsum", "[[], [[2, 3], [3]], []]", Some(h), None).is_none());
}

#[test]
fn convolutions_by_hand() {
    let t = r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#;
    // ResNet's stem: 224² → (224 + 6 - 6 - 1) / 2 + 1 = 112².
    let stem = flops(
        "aten::convolution",
        "[[512, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
        t,
        Some(r#"["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]"#),
    );
    assert_eq!(stem, 2.0 * 512.0 * 64.0 * 3.0 * 49.0 * 112.0 * 112.0);
    // Depthwise 3×3, stride 1, padding 1, groups 32: weight [32, 1, 3, 3].
    let dw = flops(
        "aten::conv2d",
        "[[2, 32, 10, 10], [32, 1, 3, 3], [], [], [], [], []]",
        t,
        Some(r#"["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "32"]"#),
    );
    assert_eq!(dw, 2.0 * 2.0 * 32.0 * 9.0 * 100.0);
    // Dilation 2, no padding: 10 - 2·2 = 6.
    let dil = flops(
        "aten::conv2d",
        "[[1, 4, 10, 10], [8, 4, 3, 3], [], [], [], [], []]",
        t,
        Some(r#"["", "", "", "[1, 1]", "[0, 0]", "[2, 2]", "1"]"#),
    );
    assert_eq!(dil, 2.0 * 8.0 * 4.0 * 9.0 * 36.0);
    // Transposed, stride 2: the input's 5² points each meet the whole filter.
    let tr = cost(
        "aten::convolution",
        "[[1, 8, 5, 5], [8, 4, 4, 4], [], [], [], [], [], [], []]",
        Some(t),
        Some(r#"["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]"#),
    )
    .unwrap();
    assert_eq!(tr.flops, 2.0 * 25.0 * 16.0 * 8.0 * 4.0);
    // Output (5 - 1)·2 - 2 + 3 + 1 = 10: [1, 4, 10, 10] written.
    assert_eq!(tr.bytes, (200.0 + 512.0 + 400.0) * 2.0);
    // Without scalars: the output is the input's size.
    let old = flops(
        "aten::conv2d",
        "[[1, 4, 10, 10], [8, 4, 3, 3], []]",
        r#"["float", "float", ""]"#,
        None,
    );
    assert_eq!(old, 2.0 * 8.0 * 4.0 * 9.0 * 100.0);
    // Backward: both gradients, each the forward's count; only the weight's when masked.
    let bt = r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#;
    let dims =
        "[[512, 512, 7, 7], [512, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], [], []]";
    let fwd = 2.0 * 512.0 * 512.0 * 512.0 * 9.0 * 49.0;
    let both = r#"["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]"#;
    assert_eq!(
        flops("aten::convolution_backward", dims, bt, Some(both)),
        2.0 * fwd
    );
    let weight = both.replace("[True, True, False]", "[False, True, False]");
    assert_eq!(
        flops("aten::convolution_backward", dims, bt, Some(&weight)),
        fwd
    );
}

#[test]
fn attention_by_hand() {
    let t = r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"]"#;
    let dims = "[[1, 8, 141, 64], [1, 8, 141, 64], [1, 8, 141, 64], [], [], [], []]";
    let full = 2.0 * 8.0 * 141.0 * 141.0 * 128.0;
    let plain = r#"["", "", "", "0.", "False", "False", "0.125"]"#;
    assert_eq!(
        flops(
            "aten::_scaled_dot_product_flash_attention",
            dims,
            t,
            Some(plain)
        ),
        full
    );
    let causal = r#"["", "", "", "0.", "True", "False", "0.125"]"#;
    assert_eq!(
        flops(
            "aten::_scaled_dot_product_flash_attention",
            dims,
            t,
            Some(causal)
        ),
        full / 2.0
    );
    // Backward: 5 products of the 2 forward's.
    let bdims = "[[2, 4, 16, 8], [2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8], [2, 4, 16, 8]]";
    assert_eq!(
        flops(
            "aten::_scaled_dot_product_efficient_attention_backward",
            bdims,
            "[\"float\"]",
            None
        ),
        2.0 * 8.0 * 16.0 * 32.0 * 40.0
    );
}

#[test]
fn memory_bound_ops_count_bytes_moved() {
    let f = r#"["float", "float", "Scalar"]"#;
    // add(x, y): read both, write one.
    let add = cost("aten::add", "[[4, 8], [4, 8], []]", Some(f), None).unwrap();
    assert_eq!((add.flops, add.bytes), (32.0, 3.0 * 128.0));
    assert_eq!(add.family, Family::ElementWise);
    // In place, broadcast bias: read x and b, write x.
    let add_ = cost("aten::add_", "[[4, 8], [8], []]", Some(f), None).unwrap();
    assert_eq!(add_.bytes, 128.0 + 32.0 + 128.0);
    // copy_ reads the source and writes the destination.
    let copy = cost(
        "aten::copy_",
        "[[4, 8], [4, 8], []]",
        Some(r#"["c10::Half", "float", "Scalar"]"#),
        None,
    )
    .unwrap();
    assert_eq!(copy.bytes, 64.0 + 128.0);
    let ln = cost(
        "aten::native_layer_norm",
        "[[2, 4, 8], [], [8], [8], []]",
        Some(r#"["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"]"#),
        None,
    )
    .unwrap();
    assert_eq!(ln.family, Family::Normalization);
    assert_eq!(ln.bytes, 2.0 * (64.0 + 8.0 + 8.0) + 128.0);
}
