//! Kernel and operator names made comparable across traces: the same work launched with other
//! template arguments, on another stream, with another launch id or at another address gets the
//! same normalized name.
//!
//! Kernels are not merged beyond that: different functors, data types or tile configurations
//! stay different names (added and removed rather than changed), so that a changed row is the
//! same work.
//!
//! The rules, in order (`tests/oracle/compare_kernels.py` implements them independently):
//! 1. a leading `void ` (the return type of a C++ kernel signature) is dropped;
//! 2. numbers in template arguments (a `<…>` right after a name, `_`, `:` or `)`) become `?`:
//!    vector widths, block sizes and unroll factors differ between GPUs and builds, while the
//!    functor and the types say which work it is (`vectorized_elementwise_kernel<4,
//!    CUDAFunctor_add<float>>` and `…<2, CUDAFunctor_add<float>>` match; `…FillFunctor…` does
//!    not); numbers within identifiers (`sgemm_128x64`) stay;
//! 3. the argument list `(…)` at the end is dropped when its `(` follows the name directly (a
//!    C++ signature such as `ncclKernel_AllReduce(ncclWorkElem)`), not after a space (a
//!    described name such as `Memcpy HtoD (Pageable -> Device)`);
//! 4. hexadecimal addresses `0x1f…` become `0x?`, numbers after `#` (lambda and launch ids,
//!    `ProfilerStep#12`) and after `stream` (stream numbers) become `?`, and a trailing `_12`
//!    (generated kernels' and modules' sequence numbers: `triton_poi_fused_add_3`) is dropped;
//! 5. runs of spaces become one space, and the ends are trimmed.

/// The normalized form of a kernel or operator name (see the module's rules).
pub(crate) fn normalize(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name);
    let name = template_numbers(name);
    let name = without_signature(&name);
    let name = without_ids(name);
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes every number inside template arguments (a `<…>` right after a name, `_`, `:` or `)`)
/// as `?`; numbers inside identifiers (`128x64`, `cutlass_80_…`) and outside template arguments
/// stay, and so does a `<` that opens a text (`<built-in method …>`) or a `->`.
fn template_numbers(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k];
        let before = (k > 0).then(|| chars[k - 1]);
        match c {
            '<' if before.is_some_and(|b| ident(b) || b == ':' || b == ')') || depth > 0 => {
                depth += 1
            }
            '>' if depth > 0 && before != Some('-') => depth -= 1,
            _ => {}
        }
        if depth > 0 && c.is_ascii_digit() && !before.is_some_and(|b| ident(b) || b == '.') {
            let mut end = k;
            while end < chars.len() && chars[end].is_ascii_digit() {
                end += 1;
            }
            while end < chars.len() && matches!(chars[end], 'u' | 'U' | 'l' | 'L') {
                end += 1;
            }
            if !chars.get(end).is_some_and(|&n| ident(n) || n == '.') {
                out.push('?');
                k = end;
                continue;
            }
        }
        out.push(c);
        k += 1;
    }
    out
}

/// Drops a trailing argument list that follows a name directly (no space before its `(`).
fn without_signature(name: &str) -> &str {
    if !name.ends_with(')') {
        return name;
    }
    let mut depth = 0usize;
    for (k, c) in name.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = &name[..k];
                    return if head.is_empty() || head.ends_with(' ') {
                        name
                    } else {
                        head
                    };
                }
            }
            _ => {}
        }
    }
    name
}

/// Addresses, ids after `#`, stream numbers and a trailing sequence number.
fn without_ids(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut k = 0;
    while k < b.len() {
        let rest = &name[k..];
        if rest.starts_with("0x") && b.get(k + 2).is_some_and(u8::is_ascii_hexdigit) {
            out.push_str("0x?");
            k += 2;
            while k < b.len() && b[k].is_ascii_hexdigit() {
                k += 1;
            }
            continue;
        }
        let tag = if rest.starts_with('#') {
            Some(1)
        } else if rest.starts_with("stream ") || rest.starts_with("stream=") {
            Some("stream ".len())
        } else {
            None
        };
        if let Some(len) = tag {
            if b.get(k + len).is_some_and(u8::is_ascii_digit) {
                out.push_str(&rest[..len]);
                out.push('?');
                k += len;
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                continue;
            }
        }
        let c = rest.chars().next().expect("k is inside the name");
        out.push(c);
        k += c.len_utf8();
    }
    let digits = out.len() - out.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && out[..out.len() - digits].ends_with('_') {
        out.truncate(out.len() - digits - 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn template_arguments_and_signatures_go() {
        assert_eq!(
            normalize(
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, \
                 2, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata\
                 <float, unsigned int, 128, 1>, int)"
            ),
            normalize(
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, \
                 1, 128, 1>(float*, int)"
            )
        );
        assert_eq!(
            normalize("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float"
        );
        assert_eq!(
            normalize("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
    }

    #[test]
    fn described_names_keep_their_words() {
        assert_eq!(
            normalize("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD (Pageable -> Device)"
        );
        assert_eq!(normalize("aten::mm"), "aten::mm");
        assert_eq!(
            normalize("void at::native::(anonymous namespace)::Cat<float, 2, 128u>(float*, int)"),
            "at::native::(anonymous namespace)::Cat<float, ?, ?>"
        );
        assert_ne!(
            normalize("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"),
            normalize("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)")
        );
        assert_eq!(
            normalize(
                "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)"
            ),
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>"
        );
        assert_eq!(
            normalize("ampere_sgemm_128x64_nn"),
            "ampere_sgemm_128x64_nn"
        );
    }

    #[test]
    fn ids_addresses_and_streams_go() {
        assert_eq!(normalize("ProfilerStep#12"), "ProfilerStep#?");
        assert_eq!(
            normalize("triton_poi_fused_add_3"),
            normalize("triton_poi_fused_add_17")
        );
        assert_eq!(
            normalize("<built-in method add of Tensor object at 0x7f3a9c>"),
            "<built-in method add of Tensor object at 0x?>"
        );
        assert_eq!(normalize("wait on stream 7"), "wait on stream ?");
        assert_eq!(normalize("nn.Module: Linear_0"), "nn.Module: Linear");
    }
}
